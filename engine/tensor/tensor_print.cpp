// SPDX-License-Identifier: GPL-3.0-or-later
// Tensor printing, following torch/_tensor_str.py (precision 4, threshold 1000, edgeitems 3,
// linewidth 80): the same widths, int/fixed/scientific modes, summarization and suffixes,
// so that a printed tensor reads exactly as it would in PyTorch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/tensor/tensor.h"

namespace nns {

namespace {

constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;

std::string format_double(const char* fmt, double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// The elements of the tensor as the printer needs them: doubles for floating types,
// integers for int64, and flags for bool.
struct Values {
  Dtype dtype;
  Shape sizes;
  Shape strides;  // contiguous
  std::vector<double> floating;
  std::vector<int64_t> integer;
  std::vector<bool> flags;

  std::string raw(int64_t i) const {
    if (dtype == kBool) return flags[i] ? "True" : "False";
    if (dtype == kInt64) return std::to_string(integer[i]);
    return "";
  }
};

// Indices of one dim that a summarized print shows (all, or the first and last edge items).
std::vector<int64_t> shown(int64_t n, bool summarize) {
  std::vector<int64_t> idx;
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
    for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
  }
  return idx;
}

void collect_shown(const Values& v, size_t dim, int64_t offset, bool summarize,
                   std::vector<int64_t>& out) {
  if (dim == v.sizes.size()) {
    out.push_back(offset);
    return;
  }
  for (int64_t i : shown(v.sizes[dim], summarize)) {
    collect_shown(v, dim + 1, offset + i * v.strides[dim], summarize, out);
  }
}

class Formatter {
 public:
  Formatter(const Values& v, const std::vector<int64_t>& shown_elements) : v_(v) {
    floating_ = is_floating_point(v.dtype);
    if (!floating_) {
      for (int64_t i : shown_elements) max_width_ = std::max<int64_t>(max_width_, v.raw(i).size());
      return;
    }
    std::vector<double> finite;
    for (int64_t i : shown_elements) {
      double x = v.floating[i];
      if (std::isfinite(x) && x != 0) finite.push_back(x);
    }
    if (finite.empty()) return;
    double lo = std::abs(finite[0]), hi = lo;
    for (double x : finite) {
      lo = std::min(lo, std::abs(x));
      hi = std::max(hi, std::abs(x));
      if (x != std::ceil(x)) int_mode_ = false;
    }
    if (int_mode_) {
      if (hi / lo > 1000. || hi > 1.e8) {
        sci_mode_ = true;
        for (double x : finite) max_width_ = std::max<int64_t>(max_width_, sci(x).size());
      } else {
        for (double x : finite) {
          max_width_ = std::max<int64_t>(max_width_, format_double("%.0f", x).size() + 1);
        }
      }
    } else if (hi / lo > 1000. || hi > 1.e8 || lo < 1.e-4) {
      sci_mode_ = true;
      for (double x : finite) max_width_ = std::max<int64_t>(max_width_, sci(x).size());
    } else {
      for (double x : finite) max_width_ = std::max<int64_t>(max_width_, fixed(x).size());
    }
  }

  int64_t width() const { return max_width_; }

  std::string format(int64_t i) const {
    std::string s;
    if (!floating_) {
      s = v_.raw(i);
    } else {
      double x = v_.floating[i];
      if (sci_mode_) {
        s = sci(x);
      } else if (int_mode_) {
        s = format_double("%.0f", x);
        if (std::isfinite(x)) s += ".";
      } else {
        s = fixed(x);
      }
    }
    if (static_cast<int64_t>(s.size()) < max_width_) s.insert(0, max_width_ - s.size(), ' ');
    return s;
  }

 private:
  static std::string sci(double x) { return format_double("%.4e", x); }
  static std::string fixed(double x) { return format_double("%.4f", x); }
  const Values& v_;
  bool floating_ = false;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int64_t max_width_ = 1;
};

std::string vector_str(int64_t offset, int64_t n, int64_t stride, int64_t indent, bool summarize,
                       const Formatter& f) {
  const int64_t element_length = f.width() + 2;
  const int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent) / element_length);
  std::vector<std::string> data;
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) data.push_back(f.format(offset + i * stride));
    data.push_back(" ...");
    for (int64_t i = n - kEdgeItems; i < n; ++i) data.push_back(f.format(offset + i * stride));
  } else {
    for (int64_t i = 0; i < n; ++i) data.push_back(f.format(offset + i * stride));
  }
  std::string out = "[";
  for (size_t i = 0; i < data.size(); ++i) {
    if (i > 0) {
      out += static_cast<int64_t>(i) % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
    }
    out += data[i];
  }
  return out + "]";
}

std::string tensor_str(const Values& v, size_t dim, int64_t offset, int64_t indent, bool summarize,
                       const Formatter& f) {
  const int64_t ndim = static_cast<int64_t>(v.sizes.size()) - static_cast<int64_t>(dim);
  if (ndim == 0) return f.format(offset);
  if (ndim == 1) return vector_str(offset, v.sizes[dim], v.strides[dim], indent, summarize, f);
  std::vector<std::string> slices;
  const int64_t n = v.sizes[dim];
  auto sub = [&](int64_t i) {
    return tensor_str(v, dim + 1, offset + i * v.strides[dim], indent + 1, summarize, f);
  };
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) slices.push_back(sub(i));
    slices.push_back("...");
    for (int64_t i = n - kEdgeItems; i < n; ++i) slices.push_back(sub(i));
  } else {
    for (int64_t i = 0; i < n; ++i) slices.push_back(sub(i));
  }
  std::string sep = ",";
  sep.append(ndim - 1, '\n');
  sep.append(indent + 1, ' ');
  std::string out = "[";
  for (size_t i = 0; i < slices.size(); ++i) {
    if (i) out += sep;
    out += slices[i];
  }
  out += ']';
  return out;
}

std::string add_suffixes(std::string text, const std::vector<std::string>& suffixes,
                         int64_t indent) {
  size_t newline = text.rfind('\n');
  int64_t last_line_len = static_cast<int64_t>(text.size()) -
                          (newline == std::string::npos ? -1 : static_cast<int64_t>(newline)) + 1;
  for (const std::string& suffix : suffixes) {
    const int64_t len = static_cast<int64_t>(suffix.size());
    if (last_line_len + len + 2 > kLineWidth) {
      text += ",\n" + std::string(indent, ' ') + suffix;
      last_line_len = indent + len;
    } else {
      text += ", " + suffix;
      last_line_len += len + 2;
    }
  }
  return text + ")";
}

std::string size_tuple(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  const int64_t indent = static_cast<int64_t>(prefix.size());
  std::vector<std::string> suffixes;
  if (!device().is_cpu()) suffixes.push_back("device='" + device().str() + "'");
  const Dtype dt = dtype();
  const bool default_dtype = dt == kFloat32 || dt == kInt64 || dt == kBool;
  std::string body;
  if (numel() == 0) {
    if (dim() != 1) suffixes.push_back("size=" + size_tuple(sizes()));
    if (dt != kFloat32) suffixes.push_back("dtype=" + dtype_name(dt));
    body = "[]";
  } else {
    if (!default_dtype) suffixes.push_back("dtype=" + dtype_name(dt));
    Values v{dt == kFloat16 || dt == kBFloat16 ? kFloat32 : dt,
             sizes(),
             contiguous_strides(sizes()),
             {},
             {},
             {}};
    if (dt == kBool) {
      v.flags = to_vector<bool>();
    } else if (dt == kInt64) {
      v.integer = to_vector<int64_t>();
    } else {
      v.floating = to_vector<double>();
    }
    const bool summarize = numel() > kThreshold;
    std::vector<int64_t> elements;
    collect_shown(v, 0, 0, summarize, elements);
    Formatter formatter(v, elements);
    body = tensor_str(v, 0, 0, indent, summarize, formatter);
  }
  if (grad_fn()) {
    suffixes.push_back("grad_fn=<" + grad_fn()->name() + ">");
  } else if (requires_grad()) {
    suffixes.push_back("requires_grad=True");
  }
  return add_suffixes(prefix + body, suffixes, indent);
}

}  // namespace nns
