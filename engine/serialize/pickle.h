// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Python objects a state dict or checkpoint file holds (PyValue), and the pickle subset
// torch.save writes (protocol 2). The unpickler is restricted like torch.load(weights_only=
// True): it knows only the globals of STATE_DICT_FORMATS.md B.7 (OrderedDict, the tensor
// rebuild functions, the storage classes, _codecs.encode for bytes) and refuses any other,
// naming it, before executing a single opcode. Every length, memo index and nesting depth is
// checked, so a hostile pickle is an error, never a crash, a hang or a huge allocation.
//
//   PyValue ckpt = PyValue::dict({{"epoch", 5}, {"loss", 0.25}});
//   const PyValue* epoch = ckpt.find("epoch");   // epoch->as_int() == 5
//   std::cout << ckpt.repr();                    // {'epoch': 5, 'loss': 0.25}
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/serialize/bytes.h"
#include "engine/tensor/tensor.h"

namespace nns::serialize {

// One Python value. Containers hold their elements by value; a dict keeps insertion order.
// An OrderedDict may carry attributes (a module state dict's `_metadata`), which are not
// items.
class PyValue {
 public:
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
    Tensor
  };
  using Items = std::vector<PyValue>;
  using Pairs = std::vector<std::pair<PyValue, PyValue>>;

  PyValue() = default;                                                   // None
  PyValue(bool v) : kind_(Kind::Bool), value_(v) {}                      // NOLINT: implicit
  PyValue(int v) : kind_(Kind::Int), value_(int64_t{v}) {}               // NOLINT
  PyValue(int64_t v) : kind_(Kind::Int), value_(v) {}                    // NOLINT
  PyValue(double v) : kind_(Kind::Float), value_(v) {}                   // NOLINT
  PyValue(std::string v) : kind_(Kind::String), value_(std::move(v)) {}  // NOLINT
  PyValue(const char* v) : PyValue(std::string(v)) {}                    // NOLINT
  PyValue(Tensor v) : kind_(Kind::Tensor), value_(std::move(v)) {}       // NOLINT

  static PyValue bytes(std::string data);
  static PyValue list(Items items);
  static PyValue tuple(Items items);
  static PyValue dict(Pairs pairs);
  static PyValue ordered_dict(Pairs pairs, Pairs attributes = {});

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is(Kind kind) const { return kind_ == kind; }
  bool is_mapping() const { return kind_ == Kind::Dict || kind_ == Kind::OrderedDict; }
  bool is_sequence() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }

  // Typed access; a ValueError names the expected and the actual kind.
  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;  // an int converts
  const std::string& as_string() const;
  const std::string& as_bytes() const;
  const Tensor& as_tensor() const;
  const Items& items() const;  // list or tuple
  Items& items();
  const Pairs& pairs() const;  // dict or OrderedDict
  Pairs& pairs();
  const Pairs& attributes() const;  // OrderedDict only

  // The value under a string key of a mapping, or nullptr (also for a non-mapping).
  const PyValue* find(const std::string& key) const;

  // Python's repr, with tensors shortened to tensor(dtype=float32, shape=[2, 3]).
  std::string repr() const;

  // "None", "bool", "int", "float", "str", "bytes", "list", "tuple", "dict", "OrderedDict",
  // "Tensor".
  static const char* kind_name(Kind kind);

 private:
  Kind kind_ = Kind::None;
  std::variant<std::monostate, bool, int64_t, double, std::string, Items, Pairs, Tensor> value_;
  Pairs attributes_;
};

// Limits of the unpickler: past them the file is refused.
struct PickleLimits {
  size_t max_depth = 100;             // nesting of containers in the result
  size_t max_memo = size_t{1} << 24;  // memo entries
  size_t max_dims = 64;               // dims of a tensor
  size_t max_expanded_factor = 16;    // result values per opcode (shared refs nest)
};

// A storage a pickle refers to by persistent id ('storage', <StorageClass>, key, location,
// numel): returns the CPU storage of `numel` elements of `dtype` for key (the same object
// for the same key, so views of one storage alias it). Throws FileError for a bad key.
using StorageLoader =
    std::function<std::shared_ptr<Storage>(const std::string& key, Dtype dtype, int64_t numel)>;

// Unpickles `pickle` (named `where` in errors). Tensors are rebuilt over the loader's
// storages with their storage offset and strides, bounds-checked against the storage.
PyValue unpickle(const uint8_t* data, size_t size, const StorageLoader& load_storage,
                 const std::string& where, const PickleLimits& limits = {});

// A tensor's storage as pickled: its key is assigned by pickle() in first-seen order.
struct PickledStorage {
  std::string key;
  Tensor data;  // the whole storage as a contiguous 1-D CPU tensor of its dtype
};

// Pickles value in protocol 2 as torch.save does, so torch.load(weights_only=True) (1.13
// and 2.x) reads it. Tensors sharing a storage share one key; `storages` receives each
// storage once, in key order. Throws ValueError for a value it cannot write (a dict key
// that is not str/int/float/bool/None, a tensor of a dtype without a storage class).
std::string pickle(const PyValue& value, std::vector<PickledStorage>& storages);

}  // namespace nns::serialize
