// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/serialize/pickle.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "engine/nn/module.h"

namespace nns::serialize {

// ---- PyValue ----------------------------------------------------------------------------------

namespace {

[[noreturn]] void wrong_kind(const char* expected, PyValue::Kind actual) {
  throw ValueError(std::string("PyValue: expected ") + expected + ", got " +
                   PyValue::kind_name(actual));
}

}  // namespace

const char* PyValue::kind_name(Kind kind) {
  switch (kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::Bytes:
      return "bytes";
    case Kind::List:
      return "list";
    case Kind::Tuple:
      return "tuple";
    case Kind::Dict:
      return "dict";
    case Kind::OrderedDict:
      return "OrderedDict";
    case Kind::Tensor:
      return "Tensor";
  }
  return "?";
}

PyValue PyValue::bytes(std::string data) {
  PyValue v(std::move(data));
  v.kind_ = Kind::Bytes;
  return v;
}

PyValue PyValue::list(Items items) {
  PyValue v;
  v.kind_ = Kind::List;
  v.value_ = std::move(items);
  return v;
}

PyValue PyValue::tuple(Items items) {
  PyValue v = list(std::move(items));
  v.kind_ = Kind::Tuple;
  return v;
}

PyValue PyValue::dict(Pairs pairs) {
  PyValue v;
  v.kind_ = Kind::Dict;
  v.value_ = std::move(pairs);
  return v;
}

PyValue PyValue::ordered_dict(Pairs pairs, Pairs attributes) {
  PyValue v = dict(std::move(pairs));
  v.kind_ = Kind::OrderedDict;
  v.attributes_ = std::move(attributes);
  return v;
}

bool PyValue::as_bool() const {
  if (kind_ != Kind::Bool) wrong_kind("bool", kind_);
  return std::get<bool>(value_);
}

int64_t PyValue::as_int() const {
  if (kind_ != Kind::Int) wrong_kind("int", kind_);
  return std::get<int64_t>(value_);
}

double PyValue::as_float() const {
  if (kind_ == Kind::Int) return static_cast<double>(std::get<int64_t>(value_));
  if (kind_ != Kind::Float) wrong_kind("float", kind_);
  return std::get<double>(value_);
}

const std::string& PyValue::as_string() const {
  if (kind_ != Kind::String) wrong_kind("str", kind_);
  return std::get<std::string>(value_);
}

const std::string& PyValue::as_bytes() const {
  if (kind_ != Kind::Bytes) wrong_kind("bytes", kind_);
  return std::get<std::string>(value_);
}

const Tensor& PyValue::as_tensor() const {
  if (kind_ != Kind::Tensor) wrong_kind("Tensor", kind_);
  return std::get<Tensor>(value_);
}

const PyValue::Items& PyValue::items() const {
  if (!is_sequence()) wrong_kind("list or tuple", kind_);
  return std::get<Items>(value_);
}

PyValue::Items& PyValue::items() {
  if (!is_sequence()) wrong_kind("list or tuple", kind_);
  return std::get<Items>(value_);
}

const PyValue::Pairs& PyValue::pairs() const {
  if (!is_mapping()) wrong_kind("dict", kind_);
  return std::get<Pairs>(value_);
}

PyValue::Pairs& PyValue::pairs() {
  if (!is_mapping()) wrong_kind("dict", kind_);
  return std::get<Pairs>(value_);
}

const PyValue::Pairs& PyValue::attributes() const {
  if (kind_ != Kind::OrderedDict) wrong_kind("OrderedDict", kind_);
  return attributes_;
}

const PyValue* PyValue::find(const std::string& key) const {
  if (!is_mapping()) return nullptr;
  for (const auto& [k, v] : std::get<Pairs>(value_)) {
    if (k.kind_ == Kind::String && std::get<std::string>(k.value_) == key) return &v;
  }
  return nullptr;
}

namespace {

std::string quote(const std::string& s, bool bytes) {
  std::string out = bytes ? "b'" : "'";
  for (unsigned char c : s) {
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F || (bytes && c >= 0x80)) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os.precision(17);
  os << v;
  // Python's repr is the shortest string that reads back the same double.
  for (int p = 1; p <= 17; ++p) {
    std::ostringstream t;
    t.precision(p);
    t << v;
    if (std::stod(t.str()) == v) {
      os.str(t.str());
      break;
    }
  }
  std::string s = os.str();
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

void repr_into(const PyValue& v, std::string& out) {
  using Kind = PyValue::Kind;
  switch (v.kind()) {
    case Kind::None:
      out += "None";
      return;
    case Kind::Bool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Kind::Int:
      out += std::to_string(v.as_int());
      return;
    case Kind::Float:
      out += float_repr(v.as_float());
      return;
    case Kind::String:
      out += quote(v.as_string(), false);
      return;
    case Kind::Bytes:
      out += quote(v.as_bytes(), true);
      return;
    case Kind::Tensor: {
      const Tensor& t = v.as_tensor();
      std::string dtype = dtype_name(t.dtype());
      out += "tensor(dtype=" + dtype.substr(dtype.find('.') + 1) +
             ", shape=" + shape_str(t.sizes()) + ")";
      return;
    }
    case Kind::List:
    case Kind::Tuple: {
      const bool list = v.kind() == Kind::List;
      out += list ? "[" : "(";
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        repr_into(items[i], out);
      }
      if (!list && items.size() == 1) out += ",";
      out += list ? "]" : ")";
      return;
    }
    case Kind::Dict:
    case Kind::OrderedDict: {
      const bool ordered = v.kind() == Kind::OrderedDict;
      out += ordered ? "OrderedDict([" : "{";
      bool first = true;
      for (const auto& [key, value] : v.pairs()) {
        if (!first) out += ", ";
        first = false;
        if (ordered) out += "(";
        repr_into(key, out);
        out += ordered ? ", " : ": ";
        repr_into(value, out);
        if (ordered) out += ")";
      }
      out += ordered ? "])" : "}";
      return;
    }
  }
}

}  // namespace

std::string PyValue::repr() const {
  std::string out;
  repr_into(*this, out);
  return out;
}

// ---- Opcodes ----------------------------------------------------------------------------------

namespace {

namespace op {
constexpr uint8_t PROTO = 0x80, STOP = '.', MARK = '(', GLOBAL = 'c', BINPUT = 'q',
                  LONG_BINPUT = 'r', BINGET = 'h', LONG_BINGET = 'j', BINUNICODE = 'X',
                  BININT1 = 'K', BININT2 = 'M', BININT = 'J', LONG1 = 0x8a, BINFLOAT = 'G',
                  NONE = 'N', NEWTRUE = 0x88, NEWFALSE = 0x89, EMPTY_TUPLE = ')', TUPLE1 = 0x85,
                  TUPLE2 = 0x86, TUPLE3 = 0x87, TUPLE = 't', EMPTY_LIST = ']', APPEND = 'a',
                  APPENDS = 'e', EMPTY_DICT = '}', SETITEM = 's', SETITEMS = 'u', REDUCE = 'R',
                  BUILD = 'b', BINPERSID = 'Q';
}  // namespace op

// Opcodes of later protocols or of other writers, named in the refusal.
struct NamedOpcode {
  uint8_t code;
  const char* name;
};
constexpr NamedOpcode kForeignOpcodes[] = {
    {0x95, "FRAME (protocol 4)"},
    {0x8c, "SHORT_BINUNICODE (protocol 4)"},
    {0x94, "MEMOIZE (protocol 4)"},
    {0x93, "STACK_GLOBAL (protocol 4)"},
    {0x8d, "BINUNICODE8 (protocol 4)"},
    {0x8e, "BINBYTES8 (protocol 4)"},
    {'B', "BINBYTES (protocol 3)"},
    {'C', "SHORT_BINBYTES (protocol 3)"},
    {0x8b, "LONG4"},
    {0x81, "NEWOBJ"},
    {0x92, "NEWOBJ_EX"},
    {'i', "INST"},
    {'o', "OBJ"},
    {'P', "PERSID"},
    {'U', "SHORT_BINSTRING"},
    {'T', "BINSTRING"},
    {'V', "UNICODE"},
    {'S', "STRING"},
    {'I', "INT"},
    {'L', "LONG"},
    {'F', "FLOAT"},
    {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},
    {0x82, "EXT1"},
    {0x83, "EXT2"},
    {0x84, "EXT4"},
    {'0', "POP"},
    {'1', "POP_MARK"},
    {'2', "DUP"},
    {'g', "GET"},
    {'p', "PUT"},
    {'l', "LIST"},
    {'d', "DICT"},
};

const char* foreign_opcode_name(uint8_t c) {
  for (const NamedOpcode& op : kForeignOpcodes) {
    if (op.code == c) return op.name;
  }
  return nullptr;
}

// The globals a state dict file may name (STATE_DICT_FORMATS.md B.7); anything else is refused.
enum class Global : uint8_t {
  OrderedDict,
  RebuildTensorV2,
  RebuildParameter,
  CodecsEncode,
  Storage
};

struct StorageClass {
  const char* name;
  std::optional<Dtype> dtype;  // nullopt: a storage class of a dtype the engine lacks
  const char* torch_dtype;
};

constexpr std::array<StorageClass, 12> kStorageClasses{{
    {"FloatStorage", kFloat32, "float32"},
    {"DoubleStorage", kFloat64, "float64"},
    {"HalfStorage", kFloat16, "float16"},
    {"BFloat16Storage", kBFloat16, "bfloat16"},
    {"LongStorage", kInt64, "int64"},
    {"BoolStorage", kBool, "bool"},
    {"IntStorage", std::nullopt, "int32"},
    {"ShortStorage", std::nullopt, "int16"},
    {"CharStorage", std::nullopt, "int8"},
    {"ByteStorage", std::nullopt, "uint8"},
    {"ComplexFloatStorage", std::nullopt, "complex64"},
    {"ComplexDoubleStorage", std::nullopt, "complex128"},
}};

const char* storage_class_name(Dtype dtype) {
  for (const StorageClass& c : kStorageClasses) {
    if (c.dtype == dtype) return c.name;
  }
  throw ValueError("pickle: no PyTorch storage class for dtype " + dtype_name(dtype));
}

// Resolves module.name to an allowed global; `storage` receives the storage class index.
std::optional<Global> allowed_global(const std::string& module, const std::string& name,
                                     size_t& storage) {
  if (module == "collections" && name == "OrderedDict") return Global::OrderedDict;
  if (module == "torch._utils" && name == "_rebuild_tensor_v2") return Global::RebuildTensorV2;
  if (module == "torch._utils" && name == "_rebuild_parameter") return Global::RebuildParameter;
  if (module == "_codecs" && name == "encode") return Global::CodecsEncode;
  if (module == "torch") {
    for (size_t i = 0; i < kStorageClasses.size(); ++i) {
      if (name == kStorageClasses[i].name) {
        storage = i;
        return Global::Storage;
      }
    }
  }
  return std::nullopt;
}

// ---- Reading ----------------------------------------------------------------------------------

// A value on the unpickler's stack or in its memo. Scalars are held inline; strings,
// containers, tensors and storages live in the unpickler's tables and are referenced by
// index, so a memoized list is one object however often it is fetched (as in Python).
struct Obj {
  enum class Kind : uint8_t {
    None,
    Bool,
    Int,
    Float,
    String,
    Bytes,
    List,
    Tuple,
    Dict,
    OrderedDict,
    Tensor,
    Global,
    Storage
  };
  Kind kind = Kind::None;
  uint8_t global = 0;  // Global, for Kind::Global
  uint32_t index = 0;  // table index for strings, containers, tensors, storages; storage class
  int64_t i = 0;       // Bool, Int
  double f = 0;        // Float
};

struct Container {
  std::vector<Obj> items;  // list / tuple items, or dict keys and values interleaved
  std::unordered_map<std::string, size_t> index;  // dict: key -> position of the key in items
  int64_t attributes = -1;                        // OrderedDict: a Dict container set by BUILD
};

struct StorageRef {
  std::shared_ptr<Storage> storage;
  Dtype dtype;
  int64_t numel;
};

class Unpickler {
 public:
  Unpickler(const uint8_t* data, size_t size, const StorageLoader& loader, std::string where,
            const PickleLimits& limits)
      : data_(data), size_(size), loader_(loader), where_(std::move(where)), limits_(limits) {}

  PyValue run() {
    scan();
    const Obj result = execute();
    budget_ = limits_.max_expanded_factor * ops_ + 1024;
    return convert(result, 0);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FileError(where_ + ": " + what + " (at pickle byte " + std::to_string(op_pos_) + ")");
  }

  // Bytes [pos_, pos_ + n) of the pickle, or a truncation error.
  const uint8_t* take(size_t n) {
    if (n > size_ - pos_) fail("truncated pickle: an opcode's argument runs past the end");
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  template <class T>
  T read_le() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  std::string read_line() {
    const uint8_t* start = data_ + pos_;
    const auto* nl = static_cast<const uint8_t*>(std::memchr(start, '\n', size_ - pos_));
    if (nl == nullptr) fail("truncated pickle: a GLOBAL name has no end of line");
    const size_t n = static_cast<size_t>(nl - start);
    pos_ += n + 1;
    std::string s(reinterpret_cast<const char*>(start), n);
    for (unsigned char c : s) {
      if (c < 0x20 || c > 0x7E) fail("a GLOBAL name contains a non-printable byte");
    }
    return s;
  }

  // Reads one opcode and its argument; during the scan nothing else happens. Returns the opcode.
  struct Arg {
    int64_t i = 0;
    double f = 0;
    std::string s, s2;
  };
  uint8_t next(Arg& a) {
    op_pos_ = pos_;
    const uint8_t c = *take(1);
    switch (c) {
      case op::PROTO:
        a.i = *take(1);
        break;
      case op::BINPUT:
      case op::BINGET:
      case op::BININT1:
        a.i = *take(1);
        break;
      case op::LONG_BINPUT:
      case op::LONG_BINGET:
        a.i = read_le<uint32_t>();
        break;
      case op::BININT2:
        a.i = read_le<uint16_t>();
        break;
      case op::BININT:
        a.i = read_le<int32_t>();
        break;
      case op::LONG1: {
        const size_t n = *take(1);
        const uint8_t* p = take(n);
        if (n > 8) fail("an integer of " + std::to_string(n) + " bytes does not fit in int64");
        uint64_t u = 0;
        for (size_t k = 0; k < n; ++k) u |= uint64_t{p[k]} << (8 * k);
        if (n > 0 && n < 8 && (p[n - 1] & 0x80)) u |= ~uint64_t{0} << (8 * n);  // sign-extend
        a.i = static_cast<int64_t>(u);
        break;
      }
      case op::BINFLOAT: {
        uint64_t u = 0;
        const uint8_t* p = take(8);
        for (size_t k = 0; k < 8; ++k) u = (u << 8) | p[k];  // big-endian
        a.f = std::bit_cast<double>(u);
        break;
      }
      case op::BINUNICODE: {
        const uint32_t n = read_le<uint32_t>();
        const uint8_t* p = take(n);
        a.s.assign(reinterpret_cast<const char*>(p), n);
        break;
      }
      case op::GLOBAL:
        a.s = read_line();
        a.s2 = read_line();
        break;
      case op::STOP:
      case op::MARK:
      case op::NONE:
      case op::NEWTRUE:
      case op::NEWFALSE:
      case op::EMPTY_TUPLE:
      case op::TUPLE1:
      case op::TUPLE2:
      case op::TUPLE3:
      case op::TUPLE:
      case op::EMPTY_LIST:
      case op::APPEND:
      case op::APPENDS:
      case op::EMPTY_DICT:
      case op::SETITEM:
      case op::SETITEMS:
      case op::REDUCE:
      case op::BUILD:
      case op::BINPERSID:
        break;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", c);
        const char* name = foreign_opcode_name(c);
        fail(std::string("unsupported pickle opcode ") + hex +
             (name ? std::string(" (") + name + ")" : "") +
             ": torch.save writes pickle protocol 2 (re-save the file with torch.save and its "
             "default pickle_protocol)");
      }
    }
    return c;
  }

  // Pass 1: every opcode is known, every argument is inside the pickle, and every global is
  // allowed, before anything is built.
  void scan() {
    pos_ = 0;
    Arg a;
    for (;;) {
      if (pos_ >= size_) {
        op_pos_ = pos_;
        fail("truncated pickle: no STOP opcode");
      }
      const uint8_t c = next(a);
      ++ops_;
      if (c == op::PROTO && a.i != 2) {
        fail("pickle protocol " + std::to_string(a.i) +
             "; torch.save writes protocol 2 (re-save with torch.save's default pickle_protocol)");
      }
      if (c == op::GLOBAL) {
        size_t storage = 0;
        if (!allowed_global(a.s, a.s2, storage)) {
          fail("refusing to load: the pickle names the global '" + a.s + "." + a.s2 +
               "', which is not allowed (only tensors, numbers, strings, lists and dicts are "
               "loaded, as torch.load(weights_only=True) does; nothing in the file was run)");
        }
      }
      if (c == op::STOP) return;
    }
  }

  // ---- the stack machine (pass 2) ----

  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Obj pop(const char* opname) {
    if (stack_.size() <= floor()) fail(std::string(opname) + " on an empty stack");
    Obj o = stack_.back();
    stack_.pop_back();
    return o;
  }
  Obj& top(const char* opname) {
    if (stack_.size() <= floor()) fail(std::string(opname) + " on an empty stack");
    return stack_.back();
  }
  void push(Obj o) {
    if (stack_.size() >= kMaxStack)
      fail("the pickle's stack grows past " + std::to_string(kMaxStack) + " entries");
    stack_.push_back(o);
  }
  // The items since the last MARK, which is removed.
  std::vector<Obj> pop_mark(const char* opname) {
    if (marks_.empty()) fail(std::string(opname) + " without a MARK");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Obj> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Obj container_obj(Obj::Kind kind, std::vector<Obj> items = {}) {
    if (containers_.size() >= kMaxObjects) {
      fail("the pickle holds more than " + std::to_string(kMaxObjects) + " containers");
    }
    containers_.push_back(Container{std::move(items), {}, -1});
    Obj o;
    o.kind = kind;
    o.index = static_cast<uint32_t>(containers_.size() - 1);
    return o;
  }
  Obj string_obj(std::string s, Obj::Kind kind = Obj::Kind::String) {
    if (strings_.size() >= kMaxObjects)
      fail("the pickle holds more than " + std::to_string(kMaxObjects) + " strings");
    strings_.push_back(std::move(s));
    Obj o;
    o.kind = kind;
    o.index = static_cast<uint32_t>(strings_.size() - 1);
    return o;
  }

  // A dict key as a hashable string; Python's equalities (True == 1 == 1.0) hold.
  std::string key_of(const Obj& k) {
    switch (k.kind) {
      case Obj::Kind::None:
        return "n";
      case Obj::Kind::Bool:
      case Obj::Kind::Int:
        return "i" + std::to_string(k.i);
      case Obj::Kind::Float: {
        if (k.f == std::trunc(k.f) && std::abs(k.f) < 9.2e18) {
          return "i" + std::to_string(static_cast<int64_t>(k.f));
        }
        return "f" + std::to_string(std::bit_cast<uint64_t>(k.f));
      }
      case Obj::Kind::String:
        return "s" + strings_[k.index];
      case Obj::Kind::Bytes:
        return "b" + strings_[k.index];
      default:
        fail("a dict key must be a str, int, float, bool or None");
    }
  }

  void set_item(const Obj& dict, const Obj& key, const Obj& value, const char* opname) {
    if (dict.kind != Obj::Kind::Dict && dict.kind != Obj::Kind::OrderedDict) {
      fail(std::string(opname) + " on a value that is not a dict");
    }
    Container& c = containers_[dict.index];
    auto [it, inserted] = c.index.emplace(key_of(key), c.items.size());
    if (inserted) {
      c.items.push_back(key);
      c.items.push_back(value);
    } else {
      c.items[it->second + 1] = value;  // Python keeps the first key and its position
    }
  }

  const std::vector<Obj>& tuple_items(const Obj& o, const char* what) {
    if (o.kind != Obj::Kind::Tuple) fail(std::string(what) + " must be a tuple");
    return containers_[o.index].items;
  }
  int64_t int_of(const Obj& o, const char* what) {
    if (o.kind != Obj::Kind::Int) fail(std::string(what) + " must be an int");
    return o.i;
  }
  bool bool_of(const Obj& o, const char* what) {
    if (o.kind != Obj::Kind::Bool) fail(std::string(what) + " must be a bool");
    return o.i != 0;
  }
  const std::string& string_of(const Obj& o, const char* what) {
    if (o.kind != Obj::Kind::String) fail(std::string(what) + " must be a str");
    return strings_[o.index];
  }

  Obj persistent_load(const Obj& pid) {
    const auto& t = tuple_items(pid, "a persistent id");
    if (!t.empty() && t[0].kind == Obj::Kind::String && strings_[t[0].index] != "storage") {
      fail("a persistent id of kind '" + strings_[t[0].index] +
           "'; only ('storage', <StorageClass>, key, location, numel) is loaded");
    }
    if (t.size() != 5 || t[0].kind != Obj::Kind::String) {
      fail("a persistent id must be ('storage', <StorageClass>, key, location, numel)");
    }
    if (t[1].kind != Obj::Kind::Global || static_cast<Global>(t[1].global) != Global::Storage) {
      fail("a persistent id's second element must be a torch storage class");
    }
    const StorageClass& cls = kStorageClasses[t[1].index];
    const std::string& key = string_of(t[2], "a storage key");
    string_of(t[3], "a storage location");
    const int64_t numel = int_of(t[4], "a storage's element count");
    if (!cls.dtype) {
      fail(std::string("storage '") + key + "' is torch." + cls.name + " (torch." +
           cls.torch_dtype +
           "), a dtype NN Studio does not support; convert the tensors in PyTorch (.float() "
           "or .long()) and save again");
    }
    if (numel < 0) fail("storage '" + key + "' has a negative element count");
    StorageRef ref{loader_(key, *cls.dtype, numel), *cls.dtype, numel};
    // Tensors are bounds-checked against numel, so the storage must really hold that much.
    uint64_t nbytes = 0;
    if (!ref.storage ||
        __builtin_mul_overflow(static_cast<uint64_t>(numel), element_size(*cls.dtype), &nbytes) ||
        ref.storage->nbytes() < nbytes) {
      fail("storage '" + key + "' is smaller than its " + std::to_string(numel) + " elements");
    }
    storages_.push_back(std::move(ref));
    Obj o;
    o.kind = Obj::Kind::Storage;
    o.index = static_cast<uint32_t>(storages_.size() - 1);
    return o;
  }

  Shape int_tuple(const Obj& o, const char* what) {
    const auto& items = tuple_items(o, what);
    if (items.size() > limits_.max_dims) {
      fail(std::string(what) + " has " + std::to_string(items.size()) + " dims; at most " +
           std::to_string(limits_.max_dims) + " are supported");
    }
    Shape out;
    out.reserve(items.size());
    for (const Obj& it : items) {
      const int64_t v = int_of(it, what);
      if (v < 0) fail(std::string(what) + " holds a negative value " + std::to_string(v));
      out.push_back(v);
    }
    return out;
  }

  Obj rebuild_tensor(const std::vector<Obj>& args) {
    if (args.size() == 7) {
      const Obj& meta = args[6];
      if ((meta.kind != Obj::Kind::Dict && meta.kind != Obj::Kind::OrderedDict) ||
          !containers_[meta.index].items.empty()) {
        fail(
            "a tensor with metadata (conjugate or negative bit) is not supported; call "
            ".resolve_conj().resolve_neg() in PyTorch and save again");
      }
    } else if (args.size() != 6) {
      fail("_rebuild_tensor_v2 takes 6 arguments, got " + std::to_string(args.size()));
    }
    if (args[0].kind != Obj::Kind::Storage)
      fail("_rebuild_tensor_v2's first argument must be a storage");
    const StorageRef& st = storages_[args[0].index];
    const int64_t offset = int_of(args[1], "a tensor's storage offset");
    const Shape sizes = int_tuple(args[2], "a tensor's size");
    const Shape strides = int_tuple(args[3], "a tensor's stride");
    const bool requires_grad = bool_of(args[4], "a tensor's requires_grad");
    if (args[5].kind != Obj::Kind::OrderedDict || !containers_[args[5].index].items.empty()) {
      fail("a tensor's backward hooks must be an empty OrderedDict");
    }
    if (sizes.size() != strides.size()) {
      fail("a tensor's size " + shape_str(sizes) + " and stride " + shape_str(strides) +
           " have different lengths");
    }
    if (offset < 0) fail("a tensor has a negative storage offset");
    // The last element a view reaches must lie inside its storage (element counts, checked
    // against overflow).
    bool empty = false;
    int64_t last = offset;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 0) empty = true;
      int64_t step = 0;
      if (sizes[d] > 0 && (__builtin_mul_overflow(sizes[d] - 1, strides[d], &step) ||
                           __builtin_add_overflow(last, step, &last))) {
        fail("a tensor's size and stride overflow");
      }
    }
    // The element count must fit, also with zero dims left out (an empty tensor's strides
    // still multiply the other dims).
    int64_t span = 1;
    for (int64_t s : sizes) {
      if (__builtin_mul_overflow(span, std::max<int64_t>(s, 1), &span)) {
        fail("a tensor's element count overflows");
      }
    }
    if (empty ? offset > st.numel : last >= st.numel) {
      fail("a tensor of size " + shape_str(sizes) + ", stride " + shape_str(strides) +
           " and storage offset " + std::to_string(offset) + " reaches past its storage of " +
           std::to_string(st.numel) + " elements");
    }
    Tensor t(std::make_shared<TensorImpl>(st.storage, sizes, strides, offset, st.dtype));
    if (requires_grad) {
      if (!t.is_floating_point()) fail("an integer or bool tensor cannot require grad");
      t.requires_grad_(true);
    }
    tensors_.push_back(std::move(t));
    Obj o;
    o.kind = Obj::Kind::Tensor;
    o.index = static_cast<uint32_t>(tensors_.size() - 1);
    return o;
  }

  Obj reduce(const Obj& callable, const Obj& args_obj) {
    if (callable.kind != Obj::Kind::Global) fail("REDUCE on a value that is not a callable");
    const std::vector<Obj> args = tuple_items(args_obj, "REDUCE's arguments");
    switch (static_cast<Global>(callable.global)) {
      case Global::OrderedDict:
        if (!args.empty()) fail("OrderedDict must be called with no arguments");
        return container_obj(Obj::Kind::OrderedDict);
      case Global::RebuildTensorV2:
        return rebuild_tensor(args);
      case Global::RebuildParameter: {
        if (args.size() != 3 || args[0].kind != Obj::Kind::Tensor ||
            args[2].kind != Obj::Kind::OrderedDict) {
          fail("_rebuild_parameter takes (tensor, requires_grad, OrderedDict)");
        }
        const bool requires_grad = bool_of(args[1], "a parameter's requires_grad");
        const Tensor& data = tensors_[args[0].index];
        if (requires_grad && !data.is_floating_point()) {
          fail("an integer or bool parameter cannot require grad");
        }
        tensors_.push_back(nn::Parameter(data, requires_grad));
        Obj o;
        o.kind = Obj::Kind::Tensor;
        o.index = static_cast<uint32_t>(tensors_.size() - 1);
        return o;
      }
      case Global::CodecsEncode: {
        if (args.size() != 2 || args[0].kind != Obj::Kind::String ||
            args[1].kind != Obj::Kind::String || strings_[args[1].index] != "latin1") {
          fail("_codecs.encode takes (str, 'latin1')");
        }
        return string_obj(latin1_bytes(strings_[args[0].index]), Obj::Kind::Bytes);
      }
      case Global::Storage:
        fail(std::string("torch.") + kStorageClasses[callable.index].name +
             " can only appear in a persistent id, not be called");
    }
    fail("REDUCE on an unknown callable");
  }

  // The bytes a str of code points < 256 encodes to in latin-1 (how protocol 2 pickles bytes).
  std::string latin1_bytes(const std::string& utf8) {
    std::string out;
    for (size_t k = 0; k < utf8.size(); ++k) {
      const auto c = static_cast<unsigned char>(utf8[k]);
      if (c < 0x80) {
        out += static_cast<char>(c);
      } else if ((c == 0xC2 || c == 0xC3) && k + 1 < utf8.size() &&
                 (static_cast<unsigned char>(utf8[k + 1]) & 0xC0) == 0x80) {
        out +=
            static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(utf8[++k]) & 0x3F));
      } else {
        fail("_codecs.encode: a character outside latin-1");
      }
    }
    return out;
  }

  // Pass 2: runs the opcodes scan() admitted, building the objects; returns the value STOP
  // leaves on the stack.
  Obj execute() {
    pos_ = 0;
    Arg a;
    for (;;) {
      const uint8_t c = next(a);
      switch (c) {
        case op::PROTO:
          break;
        case op::STOP:
          return op_stop();
        case op::MARK:
          op_mark();
          break;
        case op::GLOBAL:
          push(global_obj(a));
          break;
        case op::BINPUT:
        case op::LONG_BINPUT:
          op_put(a.i);
          break;
        case op::BINGET:
        case op::LONG_BINGET:
          op_get(a.i);
          break;
        case op::BINUNICODE:
        case op::BININT1:
        case op::BININT2:
        case op::BININT:
        case op::LONG1:
        case op::BINFLOAT:
        case op::NONE:
        case op::NEWTRUE:
        case op::NEWFALSE:
          push(scalar_obj(c, a));
          break;
        case op::EMPTY_TUPLE:
        case op::TUPLE1:
        case op::TUPLE2:
        case op::TUPLE3:
        case op::TUPLE:
          push(tuple_obj(c));
          break;
        case op::EMPTY_LIST:
          push(container_obj(Obj::Kind::List));
          break;
        case op::APPEND:
          op_append();
          break;
        case op::APPENDS:
          op_appends();
          break;
        case op::EMPTY_DICT:
          push(container_obj(Obj::Kind::Dict));
          break;
        case op::SETITEM:
          op_setitem();
          break;
        case op::SETITEMS:
          op_setitems();
          break;
        case op::REDUCE:
          op_reduce();
          break;
        case op::BUILD:
          op_build();
          break;
        case op::BINPERSID:
          op_binpersid();
          break;
        default:
          fail("unexpected opcode");  // scan() admitted only the opcodes above
      }
    }
  }

  // ---- the opcodes of pass 2, by family ----

  Obj op_stop() {
    if (!marks_.empty()) fail("STOP with an unclosed MARK");
    if (stack_.size() != 1) {
      fail("STOP with " + std::to_string(stack_.size()) + " values on the stack (expected 1)");
    }
    return stack_.back();
  }
  void op_mark() {
    if (marks_.size() >= kMaxStack) fail("too many nested MARKs");
    marks_.push_back(stack_.size());
  }

  // BINPUT, LONG_BINPUT: the memo keeps the top of the stack under index.
  void op_put(int64_t index) {
    const Obj& t = top("BINPUT");
    auto it = memo_.find(index);
    if (it != memo_.end()) {
      it->second = t;
    } else {
      if (memo_.size() >= limits_.max_memo) {
        fail("the pickle's memo grows past " + std::to_string(limits_.max_memo) + " entries");
      }
      memo_.emplace(index, t);
    }
  }
  // BINGET, LONG_BINGET.
  void op_get(int64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end())
      fail("BINGET of memo index " + std::to_string(index) + ", which was never stored");
    push(it->second);
  }

  // GLOBAL: scan() allowed the name.
  Obj global_obj(const Arg& a) {
    size_t storage = 0;
    Obj o;
    o.kind = Obj::Kind::Global;
    o.global = static_cast<uint8_t>(*allowed_global(a.s, a.s2, storage));
    o.index = static_cast<uint32_t>(storage);
    return o;
  }
  // The value of a str, int, float, None or bool opcode; a str is moved out of a.
  Obj scalar_obj(uint8_t c, Arg& a) {
    Obj o;
    switch (c) {
      case op::BINUNICODE:
        return string_obj(std::move(a.s));
      case op::BININT1:
      case op::BININT2:
      case op::BININT:
      case op::LONG1:
        o.kind = Obj::Kind::Int;
        o.i = a.i;
        break;
      case op::BINFLOAT:
        o.kind = Obj::Kind::Float;
        o.f = a.f;
        break;
      case op::NEWTRUE:
      case op::NEWFALSE:
        o.kind = Obj::Kind::Bool;
        o.i = c == op::NEWTRUE;
        break;
      default:  // NONE
        break;
    }
    return o;
  }
  // EMPTY_TUPLE, TUPLE1 to TUPLE3 (the top values) and TUPLE (the values since the MARK).
  Obj tuple_obj(uint8_t c) {
    if (c == op::EMPTY_TUPLE) return container_obj(Obj::Kind::Tuple);
    if (c == op::TUPLE) return container_obj(Obj::Kind::Tuple, pop_mark("TUPLE"));
    const size_t n = c == op::TUPLE1 ? 1 : c == op::TUPLE2 ? 2 : 3;
    if (stack_.size() < floor() + n)
      fail("TUPLE" + std::to_string(n) + " with too few values on the stack");
    std::vector<Obj> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return container_obj(Obj::Kind::Tuple, std::move(items));
  }

  void op_append() {
    const Obj v = pop("APPEND");
    const Obj& list = top("APPEND");
    if (list.kind != Obj::Kind::List) fail("APPEND on a value that is not a list");
    containers_[list.index].items.push_back(v);
  }
  void op_appends() {
    std::vector<Obj> items = pop_mark("APPENDS");
    const Obj& list = top("APPENDS");
    if (list.kind != Obj::Kind::List) fail("APPENDS on a value that is not a list");
    auto& dst = containers_[list.index].items;
    dst.insert(dst.end(), items.begin(), items.end());
  }
  void op_setitem() {
    const Obj value = pop("SETITEM");
    const Obj key = pop("SETITEM");
    set_item(top("SETITEM"), key, value, "SETITEM");
  }
  void op_setitems() {
    const std::vector<Obj> items = pop_mark("SETITEMS");
    if (items.size() % 2) fail("SETITEMS with an odd number of values");
    const Obj dict = top("SETITEMS");
    for (size_t k = 0; k < items.size(); k += 2) set_item(dict, items[k], items[k + 1], "SETITEMS");
  }

  void op_reduce() {
    const Obj args = pop("REDUCE");
    const Obj callable = pop("REDUCE");
    push(reduce(callable, args));
  }
  // Only an OrderedDict's attributes are set, from a dict; a second BUILD adds to them.
  void op_build() {
    const Obj state = pop("BUILD");
    const Obj& target = top("BUILD");
    if (target.kind != Obj::Kind::OrderedDict || state.kind != Obj::Kind::Dict) {
      fail("BUILD is only supported to set an OrderedDict's attributes from a dict");
    }
    Container& c = containers_[target.index];
    if (c.attributes < 0) {
      c.attributes = state.index;
    } else {
      const Obj attrs{Obj::Kind::Dict, 0, static_cast<uint32_t>(c.attributes), 0, 0};
      const auto items = containers_[state.index].items;
      for (size_t k = 0; k < items.size(); k += 2) set_item(attrs, items[k], items[k + 1], "BUILD");
    }
  }
  void op_binpersid() {
    const Obj pid = pop("BINPERSID");
    push(persistent_load(pid));
  }

  // ---- the result as a PyValue tree ----

  PyValue convert(const Obj& o, size_t depth) {
    if (budget_-- == 0) {
      fail("the pickle expands to too many values (shared references nested inside each other)");
    }
    switch (o.kind) {
      case Obj::Kind::None:
        return PyValue();
      case Obj::Kind::Bool:
        return PyValue(o.i != 0);
      case Obj::Kind::Int:
        return PyValue(o.i);
      case Obj::Kind::Float:
        return PyValue(o.f);
      case Obj::Kind::String:
        return PyValue(strings_[o.index]);
      case Obj::Kind::Bytes:
        return PyValue::bytes(strings_[o.index]);
      case Obj::Kind::Tensor:
        return PyValue(tensors_[o.index]);
      case Obj::Kind::Global:
        fail("the pickle's result holds a bare global");
      case Obj::Kind::Storage:
        fail("the pickle's result holds a bare storage");
      default:
        break;
    }
    if (depth >= limits_.max_depth) {
      fail("containers nest deeper than " + std::to_string(limits_.max_depth) +
           " levels (or contain themselves)");
    }
    const Container& c = containers_[o.index];
    if (o.kind == Obj::Kind::List || o.kind == Obj::Kind::Tuple) {
      PyValue::Items items;
      items.reserve(c.items.size());
      for (const Obj& it : c.items) items.push_back(convert(it, depth + 1));
      return o.kind == Obj::Kind::List ? PyValue::list(std::move(items))
                                       : PyValue::tuple(std::move(items));
    }
    PyValue::Pairs pairs;
    pairs.reserve(c.items.size() / 2);
    for (size_t k = 0; k < c.items.size(); k += 2) {
      pairs.emplace_back(convert(c.items[k], depth + 1), convert(c.items[k + 1], depth + 1));
    }
    if (o.kind == Obj::Kind::Dict) return PyValue::dict(std::move(pairs));
    PyValue::Pairs attributes;
    if (c.attributes >= 0) {
      const Obj attrs{Obj::Kind::Dict, 0, static_cast<uint32_t>(c.attributes), 0, 0};
      attributes = convert(attrs, depth + 1).pairs();
    }
    return PyValue::ordered_dict(std::move(pairs), std::move(attributes));
  }

  static constexpr size_t kMaxStack = size_t{1} << 20;
  // Containers and strings each; a state dict needs about five per tensor.
  static constexpr size_t kMaxObjects = size_t{1} << 21;

  const uint8_t* data_;
  size_t size_;
  const StorageLoader& loader_;
  std::string where_;
  PickleLimits limits_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  size_t ops_ = 0;
  size_t budget_ = 0;
  std::vector<Obj> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<int64_t, Obj> memo_;
  std::vector<std::string> strings_;
  std::vector<Container> containers_;
  std::vector<Tensor> tensors_;
  std::vector<StorageRef> storages_;
};

}  // namespace

PyValue unpickle(const uint8_t* data, size_t size, const StorageLoader& load_storage,
                 const std::string& where, const PickleLimits& limits) {
  return Unpickler(data, size, load_storage, where, limits).run();
}

// ---- Writing ----------------------------------------------------------------------------------

namespace {

class Pickler {
 public:
  explicit Pickler(std::vector<PickledStorage>& storages) : storages_(storages) {}

  std::string run(const PyValue& v) {
    out_ += static_cast<char>(op::PROTO);
    out_ += '\2';
    save(v);
    out_ += static_cast<char>(op::STOP);
    return std::move(out_);
  }

 private:
  // Python's _BATCHSIZE: containers are written in SETITEMS/APPENDS batches of this size.
  static constexpr size_t kBatch = 1000;

  void byte(uint8_t c) { out_ += static_cast<char>(c); }
  template <class T>
  void le(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void global(const char* module, const char* name) {
    byte(op::GLOBAL);
    out_ += module;
    out_ += '\n';
    out_ += name;
    out_ += '\n';
  }
  void save_int(int64_t v) {
    if (v >= 0 && v < 256) {
      byte(op::BININT1);
      byte(static_cast<uint8_t>(v));
    } else if (v >= 0 && v < 65536) {
      byte(op::BININT2);
      le(static_cast<uint16_t>(v));
    } else if (v >= std::numeric_limits<int32_t>::min() &&
               v <= std::numeric_limits<int32_t>::max()) {
      byte(op::BININT);
      le(static_cast<int32_t>(v));
    } else {
      // The fewest little-endian two's-complement bytes that keep the sign.
      uint8_t n = 1;
      while (n < 8) {
        const int64_t lo = -(int64_t{1} << (8 * n - 1));
        const int64_t hi = (int64_t{1} << (8 * n - 1)) - 1;
        if (v >= lo && v <= hi) break;
        ++n;
      }
      byte(op::LONG1);
      byte(n);
      const auto u = static_cast<uint64_t>(v);
      for (uint8_t k = 0; k < n; ++k) byte(static_cast<uint8_t>(u >> (8 * k)));
    }
  }
  void save_string(const std::string& s) {
    if (s.size() > std::numeric_limits<uint32_t>::max())
      throw ValueError("pickle: a string longer than 4 GiB");
    byte(op::BINUNICODE);
    le(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void save_tuple(const PyValue::Items& items) {
    if (items.empty()) {
      byte(op::EMPTY_TUPLE);
      return;
    }
    if (items.size() > 3) byte(op::MARK);
    for (const PyValue& it : items) save(it);
    static constexpr std::array<uint8_t, 4> small{0, op::TUPLE1, op::TUPLE2, op::TUPLE3};
    byte(items.size() > 3 ? op::TUPLE : small[items.size()]);
  }
  void save_items(const PyValue::Items& items) {
    for (size_t start = 0; start < items.size(); start += kBatch) {
      const size_t end = std::min(items.size(), start + kBatch);
      if (end - start == 1) {
        save(items[start]);
        byte(op::APPEND);
        continue;
      }
      byte(op::MARK);
      for (size_t k = start; k < end; ++k) save(items[k]);
      byte(op::APPENDS);
    }
  }
  void save_pairs(const PyValue::Pairs& pairs) {
    for (size_t start = 0; start < pairs.size(); start += kBatch) {
      const size_t end = std::min(pairs.size(), start + kBatch);
      if (end - start == 1) {
        save_key(pairs[start].first);
        save(pairs[start].second);
        byte(op::SETITEM);
        continue;
      }
      byte(op::MARK);
      for (size_t k = start; k < end; ++k) {
        save_key(pairs[k].first);
        save(pairs[k].second);
      }
      byte(op::SETITEMS);
    }
  }
  void save_key(const PyValue& key) {
    using Kind = PyValue::Kind;
    if (key.kind() != Kind::String && key.kind() != Kind::Int && key.kind() != Kind::Float &&
        key.kind() != Kind::Bool && key.kind() != Kind::None) {
      throw ValueError(
          std::string("pickle: a dict key must be a str, int, float, bool or None, got ") +
          PyValue::kind_name(key.kind()));
    }
    save(key);
  }
  void save_tensor(const Tensor& t) {
    const char* cls = storage_class_name(t.dtype());
    const std::shared_ptr<Storage>& storage = t.storage();
    const int64_t numel = static_cast<int64_t>(storage->nbytes() / t.element_size());
    auto [it, inserted] =
        keys_.emplace(storage.get(), Key{std::to_string(keys_.size()), t.dtype()});
    if (inserted) {
      Tensor whole(std::make_shared<TensorImpl>(storage, Shape{numel}, Shape{1}, 0, t.dtype()));
      storages_.push_back({it->second.key, whole.to(kCPU)});
    } else if (it->second.dtype != t.dtype()) {
      throw ValueError(
          "pickle: two tensors of different dtypes share one storage; PyTorch "
          "cannot save that (clone one of them)");
    }
    global("torch._utils", "_rebuild_tensor_v2");
    byte(op::MARK);
    byte(op::MARK);
    save_string("storage");
    global("torch", cls);
    save_string(it->second.key);
    // The storage's location as PyTorch writes it ("cuda:0" for a GPU tensor: torch.load puts
    // it back there, or where map_location says); the bytes are always copied from the host.
    save_string(t.device().is_cuda() ? t.device().str() : std::string("cpu"));
    save_int(numel);
    byte(op::TUPLE);
    byte(op::BINPERSID);
    save_int(t.storage_offset());
    PyValue::Items sizes;
    PyValue::Items strides;
    for (int64_t s : t.sizes()) sizes.emplace_back(s);
    for (int64_t s : t.strides()) strides.emplace_back(s);
    save_tuple(sizes);
    save_tuple(strides);
    byte(t.requires_grad() ? op::NEWTRUE : op::NEWFALSE);
    global("collections", "OrderedDict");
    byte(op::EMPTY_TUPLE);
    byte(op::REDUCE);
    byte(op::TUPLE);
    byte(op::REDUCE);
  }
  // Protocol 2 has no bytes opcode torch.load accepts; Python writes _codecs.encode(s, 'latin1').
  void save_bytes(const std::string& data) {
    std::string utf8;
    for (unsigned char c : data) {
      if (c < 0x80) {
        utf8 += static_cast<char>(c);
      } else {
        utf8 += static_cast<char>(0xC0 | (c >> 6));
        utf8 += static_cast<char>(0x80 | (c & 0x3F));
      }
    }
    global("_codecs", "encode");
    save_string(utf8);
    save_string("latin1");
    byte(op::TUPLE2);
    byte(op::REDUCE);
  }

  void save(const PyValue& v) {
    using Kind = PyValue::Kind;
    switch (v.kind()) {
      case Kind::None:
        byte(op::NONE);
        return;
      case Kind::Bool:
        byte(v.as_bool() ? op::NEWTRUE : op::NEWFALSE);
        return;
      case Kind::Int:
        save_int(v.as_int());
        return;
      case Kind::Float: {
        byte(op::BINFLOAT);
        const auto u = std::bit_cast<uint64_t>(v.as_float());
        for (int k = 7; k >= 0; --k) byte(static_cast<uint8_t>(u >> (8 * k)));
        return;
      }
      case Kind::String:
        save_string(v.as_string());
        return;
      case Kind::Bytes:
        save_bytes(v.as_bytes());
        return;
      case Kind::Tuple:
        save_tuple(v.items());
        return;
      case Kind::List:
        byte(op::EMPTY_LIST);
        save_items(v.items());
        return;
      case Kind::Dict:
        byte(op::EMPTY_DICT);
        save_pairs(v.pairs());
        return;
      case Kind::OrderedDict:
        global("collections", "OrderedDict");
        byte(op::EMPTY_TUPLE);
        byte(op::REDUCE);
        save_pairs(v.pairs());
        if (!v.attributes().empty()) {
          byte(op::EMPTY_DICT);
          save_pairs(v.attributes());
          byte(op::BUILD);
        }
        return;
      case Kind::Tensor:
        save_tensor(v.as_tensor());
        return;
    }
  }

  struct Key {
    std::string key;
    Dtype dtype;
  };
  std::vector<PickledStorage>& storages_;
  std::unordered_map<const Storage*, Key> keys_;
  std::string out_;
};

}  // namespace

std::string pickle(const PyValue& value, std::vector<PickledStorage>& storages) {
  return Pickler(storages).run(value);
}

}  // namespace nns::serialize
