// SPDX-License-Identifier: GPL-3.0-or-later
// Matrix products: mm, bmm, addmm, torch.matmul (with its dispatch to dot, mv, mm and bmm,
// folding of batch dims and broadcasting, so that grad_fn names match PyTorch's), linear.
// Every product runs on the backend's GEMM, which reads strided and transposed operands in
// place whenever their rows or columns are contiguous.
#include "engine/ops/linalg.h"

#include <algorithm>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/kernel_types.h"
#include "engine/backend/linalg_kernels.h"
#include "engine/cpu/dtype_dispatch.h"
#include "engine/ops/elementwise.h"
#include "engine/tensor/factories.h"

namespace nns {

namespace {

// A matrix (or a batch of equally laid out matrices) as the GEMM reads it: rows x cols, in
// `data`'s memory, stored row-major with leading dim ld, or transposed.
struct Mat {
  Tensor data;
  int64_t rows = 0, cols = 0;
  bool trans = false;
  int64_t ld = 1;
  int64_t batch_stride = 0;

  Mat t() const {
    Mat m = *this;
    std::swap(m.rows, m.cols);
    m.trans = !trans;
    return m;
  }
};

// The matrix with element (i, j) at data[i * rs + j * cs] (and matrix b at b * bs). BLAS
// needs one of the two dims contiguous and a leading dim at least as large as the other;
// anything else (broadcast rows, every-other-column slices) is read from a contiguous copy.
Mat as_mat(const Tensor& data, int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t bs) {
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<int64_t>(cols, 1))) {
    return {data, rows, cols, false, rows == 1 ? std::max<int64_t>(cols, 1) : rs, bs};
  }
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<int64_t>(rows, 1))) {
    return {data, rows, cols, true, cols == 1 ? std::max<int64_t>(rows, 1) : cs, bs};
  }
  Tensor copy = data.detach().contiguous();
  return {copy, rows, cols, false, std::max<int64_t>(cols, 1), rows * cols};
}

// The last two dims of a 2-D or 3-D tensor.
Mat as_mat(const Tensor& t) {
  const int64_t d = t.dim();
  return as_mat(t, t.sizes()[d - 2], t.sizes()[d - 1], t.strides()[d - 2], t.strides()[d - 1],
                d == 3 ? t.strides()[0] : 0);
}
Mat as_row(const Tensor& v) {
  return as_mat(v, 1, v.size(0), v.size(0) * v.stride(0), v.stride(0), 0);
}
Mat as_column(const Tensor& v) {
  return as_mat(v, v.size(0), 1, v.stride(0), 1, 0);
}

// alpha * a @ b into a new contiguous tensor of `shape` (batch matrices of a.rows x b.cols).
Tensor multiply(const Mat& a, const Mat& b, const Shape& shape, int64_t batch, double alpha,
                const char* op) {
  const Tensor& ref = a.data;
  Tensor out = empty(shape, TensorOptions(ref.dtype()).device(ref.device()));
  const LinalgKernels& k = kernels<LinalgKernels>(ref.device(), op);
  const int64_t m = a.rows, n = b.cols, depth = a.cols;
  cpu::dispatch_floating(ref.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = static_cast<const T*>(a.data.raw_data());
    const T* pb = static_cast<const T*>(b.data.raw_data());
    T* pc = static_cast<T*>(out.raw_data());
    k.gemm_batched<T>()(a.trans, b.trans, m, n, depth, static_cast<T>(alpha), pa, a.ld,
                        a.batch_stride, pb, b.ld, b.batch_stride, T(0), pc, std::max<int64_t>(n, 1),
                        m * n, batch);
  });
  return out;
}

Tensor multiply(const Mat& a, const Mat& b, double alpha, const char* op) {
  return multiply(a, b, {a.rows, b.cols}, 1, alpha, op);
}

void check_operands(const Tensor& a, const Tensor& b, const char* op, const char* name_a,
                    const char* name_b) {
  if (!a.defined() || !b.defined()) {
    throw ValueError(std::string(op) + ": " + (a.defined() ? name_b : name_a) +
                     " is an undefined tensor");
  }
  if (a.dtype() != b.dtype()) {
    throw DtypeError(std::string(op) + ": expected " + name_a + " and " + name_b +
                     " to have the same dtype, but got: " + dtype_name(a.dtype()) +
                     " != " + dtype_name(b.dtype()) + "; convert one with .to(...)");
  }
  if (a.device() != b.device()) {
    throw DeviceError(std::string(op) + ": expected " + name_a + " and " + name_b +
                      " on the same device, but got " + a.device().str() + " and " +
                      b.device().str() + "; move one with .to(...)");
  }
}

std::string matrix_str(const Tensor& t) {
  return std::to_string(t.size(0)) + "x" + std::to_string(t.size(1));
}

// ---- Backward nodes ---------------------------------------------------------------------

// A fresh result read under another shape (ATen's _unsafe_view, and squeeze_ on a fresh
// result): the gradient takes the old shape back.
struct ReshapeResultBackward : Node {
  const char* node_name;
  Shape self_sizes;
  ReshapeResultBackward(const char* n, Shape s) : node_name(n), self_sizes(std::move(s)) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override { return {grads[0].reshape(self_sizes)}; }
};

// t's contiguous data as a tensor of `sizes`, recorded as node `name`.
Tensor reshape_result(const Tensor& t, Shape sizes, const char* name) {
  Shape strides = contiguous_strides(sizes);
  Tensor out(std::make_shared<TensorImpl>(t.storage(), std::move(sizes), std::move(strides),
                                          t.storage_offset(), t.dtype()));
  if (auto node = make_node<ReshapeResultBackward>({t}, name, t.sizes())) set_history(out, node);
  return out;
}

// A transposed contiguous matrix (weight.t()), whose gradient mm_backward makes in the same
// layout.
bool is_column_major(const Tensor& t) {
  return t.size(0) > 1 && t.stride(0) == 1 && t.stride(1) == t.size(0);
}

// The saved operand a gradient needs, kept only when that gradient is wanted.
SavedVariable save_if(const Tensor& t, bool needed) {
  return needed ? SavedVariable(t) : SavedVariable();
}

struct DotBackward0 : Node {
  SavedVariable self, other;
  std::string name() const override { return "DotBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& g = grads[0];
    Tensor gs = next_edges[0].valid() ? mul(other.unpack(this), g) : Tensor();
    Tensor go = next_edges[1].valid() ? mul(self.unpack(this), g) : Tensor();
    return {gs, go};
  }
  void release_variables() override {
    self.reset();
    other.reset();
  }
};

struct MvBackward0 : Node {
  SavedVariable self, vec;
  std::string name() const override { return "MvBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& g = grads[0];
    Tensor gs, gv;
    if (next_edges[0].valid()) {
      gs = multiply(as_column(g), as_row(vec.unpack(this)), 1, "mv_backward");
    }
    if (next_edges[1].valid()) {
      Tensor m = self.unpack(this);
      gv = multiply(as_mat(m).t(), as_column(g), {m.size(1)}, 1, 1, "mv_backward");
    }
    return {gs, gv};
  }
  void release_variables() override {
    self.reset();
    vec.reset();
  }
};

// The gradients of mat1 and mat2 in alpha * mat1 @ mat2 (MmBackward0, AddmmBackward0);
// undefined where not wanted. mat2_column_major: see is_column_major (mat2 itself is saved
// only when mat1's gradient needs it).
std::pair<Tensor, Tensor> mm_backward(const Node* node, const Tensor& grad,
                                      const SavedVariable& mat1, const SavedVariable& mat2,
                                      bool mat2_column_major, bool want1, bool want2,
                                      double alpha) {
  Mat g = as_mat(grad);
  Tensor g1 = want1 ? multiply(g, as_mat(mat2.unpack(node)).t(), alpha, "mm_backward") : Tensor();
  Tensor g2;
  if (want2) {
    const Mat m1 = as_mat(mat1.unpack(node));
    // A column-major mat2 (linear's weight.t()) gets its gradient in the same layout, as
    // ATen's mm_mat2_backward does: (grad^T @ mat1)^T, so that TBackward hands the weight a
    // contiguous gradient that AccumulateGrad takes as it is instead of copying.
    g2 = mat2_column_major ? multiply(g.t(), m1, alpha, "mm_backward").t()
                           : multiply(m1.t(), g, alpha, "mm_backward");
  }
  return {g1, g2};
}

struct MmBackward0 : Node {
  SavedVariable self, mat2;
  bool mat2_column_major = false;
  std::string name() const override { return "MmBackward0"; }
  variable_list apply(variable_list&& grads) override {
    auto [ga, gb] = mm_backward(this, grads[0], self, mat2, mat2_column_major,
                                next_edges[0].valid(), next_edges[1].valid(), 1);
    return {ga, gb};
  }
  void release_variables() override {
    self.reset();
    mat2.reset();
  }
};

struct AddmmBackward0 : Node {
  Shape self_sizes;
  double beta = 1, alpha = 1;
  SavedVariable mat1, mat2;
  bool mat2_column_major = false;
  std::string name() const override { return "AddmmBackward0"; }
  variable_list apply(variable_list&& grads) override {
    Tensor gi;
    if (next_edges[0].valid()) gi = sum_to(beta == 1 ? grads[0] : mul(grads[0], beta), self_sizes);
    auto [g1, g2] = mm_backward(this, grads[0], mat1, mat2, mat2_column_major,
                                next_edges[1].valid(), next_edges[2].valid(), alpha);
    return {gi, g1, g2};
  }
  void release_variables() override {
    mat1.reset();
    mat2.reset();
  }
};

struct BmmBackward0 : Node {
  SavedVariable self, mat2;
  std::string name() const override { return "BmmBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& grad = grads[0];
    Mat g = as_mat(grad);
    const int64_t batch = grad.size(0);
    Tensor ga, gb;
    if (next_edges[0].valid()) {
      Mat b = as_mat(mat2.unpack(this)).t();
      ga = multiply(g, b, {batch, g.rows, b.cols}, batch, 1, "bmm_backward");
    }
    if (next_edges[1].valid()) {
      Mat a = as_mat(self.unpack(this)).t();
      gb = multiply(a, g, {batch, a.rows, g.cols}, batch, 1, "bmm_backward");
    }
    return {ga, gb};
  }
  void release_variables() override {
    self.reset();
    mat2.reset();
  }
};

// ---- matmul's cases ---------------------------------------------------------------------

Tensor dot(const Tensor& a, const Tensor& b) {
  Tensor out = multiply(as_row(a), as_column(b), {}, 1, 1, "matmul");
  if (auto node = make_node<DotBackward0>({a, b})) {
    node->self = save_if(a, node->next_edges[1].valid());
    node->other = save_if(b, node->next_edges[0].valid());
    set_history(out, node);
  }
  return out;
}

Tensor mv(const Tensor& m, const Tensor& v) {
  Tensor out = multiply(as_mat(m), as_column(v), {m.size(0)}, 1, 1, "matmul");
  if (auto node = make_node<MvBackward0>({m, v})) {
    node->self = save_if(m, node->next_edges[1].valid());
    node->vec = save_if(v, node->next_edges[0].valid());
    set_history(out, node);
  }
  return out;
}

// ATen's should_fold: a >= 3-D operand times a vector or matrix becomes one mm (or mv) by
// folding its batch dims into its rows, except when that fold would need a copy of a
// transposed 3-D tensor that bmm reads in place.
bool should_fold(const Tensor& t1, int64_t dim2) {
  if (t1.dim() < 3 || (dim2 != 1 && dim2 != 2)) return false;
  return !(t1.dim() == 3 && dim2 == 2 && t1.stride(-1) != 1 &&
           t1.stride(0) == t1.size(1) * t1.size(2));
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "mm", "mat1", "mat2");
  if (a.dim() != 2 || b.dim() != 2) {
    throw ShapeError("mm: expected 2-D matrices, but got mat1 " + shape_str(a.sizes()) +
                     " and mat2 " + shape_str(b.sizes()) +
                     "; use matmul for vectors and batches of matrices");
  }
  if (a.size(1) != b.size(0)) {
    throw ShapeError("mm: mat1 and mat2 shapes cannot be multiplied (" + matrix_str(a) + " and " +
                     matrix_str(b) + "); mat1's columns must equal mat2's rows");
  }
  Tensor out = multiply(as_mat(a), as_mat(b), 1, "mm");
  if (auto node = make_node<MmBackward0>({a, b})) {
    node->self = save_if(a, node->next_edges[1].valid());
    node->mat2 = save_if(b, node->next_edges[0].valid());
    node->mat2_column_major = is_column_major(b);
    set_history(out, node);
  }
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "bmm", "batch1", "batch2");
  if (a.dim() != 3 || b.dim() != 3) {
    throw ShapeError("bmm: expected 3-D batches of matrices, but got batch1 " +
                     shape_str(a.sizes()) + " and batch2 " + shape_str(b.sizes()) +
                     "; use matmul to broadcast batch dims");
  }
  if (a.size(0) != b.size(0)) {
    throw ShapeError("bmm: batch1 and batch2 must have the same batch size, but got " +
                     shape_str(a.sizes()) + " and " + shape_str(b.sizes()) +
                     "; use matmul to broadcast batch dims");
  }
  if (a.size(2) != b.size(1)) {
    throw ShapeError("bmm: batch1 and batch2 shapes cannot be multiplied (" + shape_str(a.sizes()) +
                     " and " + shape_str(b.sizes()) +
                     "); batch1's last dim must equal batch2's second dim");
  }
  const int64_t batch = a.size(0);
  Tensor out = multiply(as_mat(a), as_mat(b), {batch, a.size(1), b.size(2)}, batch, 1, "bmm");
  if (auto node = make_node<BmmBackward0>({a, b})) {
    node->self = save_if(a, node->next_edges[1].valid());
    node->mat2 = save_if(b, node->next_edges[0].valid());
    set_history(out, node);
  }
  return out;
}

Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta, double alpha) {
  check_operands(a, b, "addmm", "mat1", "mat2");
  check_operands(input, a, "addmm", "input", "mat1");
  if (a.dim() != 2 || b.dim() != 2) {
    throw ShapeError("addmm: expected 2-D matrices, but got mat1 " + shape_str(a.sizes()) +
                     " and mat2 " + shape_str(b.sizes()));
  }
  if (a.size(1) != b.size(0)) {
    throw ShapeError("addmm: mat1 and mat2 shapes cannot be multiplied (" + matrix_str(a) +
                     " and " + matrix_str(b) + "); mat1's columns must equal mat2's rows");
  }
  const Shape out_shape{a.size(0), b.size(1)};
  bool broadcastable = input.dim() <= 2;
  for (int64_t i = 0; broadcastable && i < input.dim(); ++i) {
    const int64_t have = input.sizes()[input.dim() - 1 - i];
    broadcastable = have == 1 || have == out_shape[1 - i];
  }
  if (!broadcastable) {
    throw ShapeError("addmm: input of shape " + shape_str(input.sizes()) +
                     " cannot be broadcast to the product's shape " + shape_str(out_shape));
  }
  Mat ma = as_mat(a), mb = as_mat(b);
  Tensor out = empty(out_shape, TensorOptions(a.dtype()).device(a.device()));
  const LinalgKernels& k = kernels<LinalgKernels>(out.device(), "addmm");
  // A row of bias added to a float32 product (nn.Linear's addmm) is the product's epilogue
  // where the device has one (cuBLASLt's, as PyTorch's CUDA addmm): one launch, not two.
  const bool bias_row = input.dim() == 1 || (input.dim() == 2 && input.size(0) == 1);
  const bool fused =
      k.gemm_bias_f32 != nullptr && out.dtype() == kFloat32 && beta == 1 && alpha == 1 &&
      bias_row && input.numel() == out_shape[1] && input.is_contiguous() && ma.cols > 0 &&
      k.gemm_bias_f32(ma.trans, mb.trans, ma.rows, mb.cols, ma.cols,
                      static_cast<const float*>(ma.data.raw_data()), ma.ld,
                      static_cast<const float*>(mb.data.raw_data()), mb.ld,
                      static_cast<const float*>(input.raw_data()),
                      static_cast<float*>(out.raw_data()), std::max<int64_t>(mb.cols, 1));
  if (!fused) {
    if (beta != 0) {
      Shape strides;
      kernels<CopyKernels>(out.device(), "addmm")
          .copy(view_of(out), broadcast_view(input, out_shape, strides));
    }
    cpu::dispatch_floating(out.dtype(), "addmm", [&](auto tag) {
      using T = decltype(tag);
      k.gemm<T>()(ma.trans, mb.trans, ma.rows, mb.cols, ma.cols, static_cast<T>(alpha),
                  static_cast<const T*>(ma.data.raw_data()), ma.ld,
                  static_cast<const T*>(mb.data.raw_data()), mb.ld, static_cast<T>(beta),
                  static_cast<T*>(out.raw_data()), std::max<int64_t>(mb.cols, 1));
    });
  }
  if (auto node = make_node<AddmmBackward0>({input, a, b})) {
    node->self_sizes = input.sizes();
    node->beta = beta;
    node->alpha = alpha;
    node->mat1 = save_if(a, node->next_edges[2].valid());
    node->mat2 = save_if(b, node->next_edges[1].valid());
    node->mat2_column_major = is_column_major(b);
    set_history(out, node);
  }
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "matmul", "the first operand", "the second operand");
  const int64_t da = a.dim(), db = b.dim();
  if (da == 0 || db == 0) {
    throw ShapeError("matmul: both arguments to matmul need to be at least 1D, but they are " +
                     std::to_string(da) + "D and " + std::to_string(db) + "D");
  }
  const int64_t ka = a.size(-1);
  const int64_t kb = db == 1 ? b.size(0) : b.size(-2);
  if (ka != kb) {
    throw ShapeError(
        "matmul: shapes " + shape_str(a.sizes()) + " and " + shape_str(b.sizes()) +
        " cannot be multiplied: the last dim of the first (" + std::to_string(ka) +
        ") must equal " +
        (db == 1 ? "the size of the second (" : "the second-to-last dim of the second (") +
        std::to_string(kb) + ")");
  }
  if (da == 1 && db == 1) return dot(a, b);
  if (da == 2 && db == 1) return mv(a, b);
  if (da == 1 && db == 2) {
    return reshape_result(mm(a.unsqueeze(0), b), {b.size(1)}, "SqueezeBackward3");
  }
  if (da == 2 && db == 2) return mm(a, b);

  if (should_fold(a, db) || should_fold(b, da)) {
    // One mm (or mv) over the folded batch of the larger operand; with the larger operand on
    // the right, compute (b^T @ a^T)^T.
    const bool transpose = db > da;
    const Tensor t1 = transpose ? b.transpose(-2, -1) : a;
    const Tensor t2 = !transpose ? b : (da == 2 ? a.t() : a);
    Shape output_shape(t1.sizes().begin(), t1.sizes().end() - 1);
    const int64_t folded = shape_numel(output_shape);
    const Tensor t1_folded = t1.reshape({folded, t1.size(-1)});
    if (t2.dim() == 2) {
      output_shape.push_back(t2.size(1));
      Tensor output = reshape_result(mm(t1_folded, t2), output_shape, "UnsafeViewBackward0");
      return transpose ? output.transpose(-2, -1).contiguous() : output;
    }
    return reshape_result(mv(t1_folded, t2), output_shape, "UnsafeViewBackward0");
  }

  // Both are at least 2-D here and one is at least 3-D: bmm over the broadcast batch.
  const int64_t n = a.size(-2), p = b.size(-1);
  const Shape batch_a(a.sizes().begin(), a.sizes().end() - 2);
  const Shape batch_b(b.sizes().begin(), b.sizes().end() - 2);
  const std::string op =
      "matmul (batch dims of " + shape_str(a.sizes()) + " and " + shape_str(b.sizes()) + ")";
  Shape shape = broadcast_shapes(batch_a, batch_b, op.c_str());
  const int64_t batch = shape_numel(shape);
  Shape expand_a = shape, expand_b = shape;
  expand_a.insert(expand_a.end(), {n, ka});
  expand_b.insert(expand_b.end(), {kb, p});
  const Tensor a3 = a.expand(expand_a).reshape({batch, n, ka});
  const Tensor b3 = b.expand(expand_b).reshape({batch, kb, p});
  shape.insert(shape.end(), {n, p});
  return reshape_result(bmm(a3, b3), shape, "UnsafeViewBackward0");
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_operands(x, weight, "linear", "input", "weight");
  // A 1-D weight [in_features] is PyTorch's single-output form (x @ w, a dot for 1-D x).
  if (weight.dim() != 2 && weight.dim() != 1) {
    throw ShapeError(
        "linear: weight must be 2-D [out_features, in_features] (or 1-D "
        "[in_features]), but got " +
        shape_str(weight.sizes()));
  }
  const int64_t in_features = weight.size(-1);
  if (x.dim() == 0 || x.size(-1) != in_features) {
    throw ShapeError("linear: input of shape " + shape_str(x.sizes()) +
                     " does not fit weight of shape " + shape_str(weight.sizes()) +
                     ": the input's last dim must be in_features = " + std::to_string(in_features));
  }
  if (bias.defined()) {
    check_operands(bias, weight, "linear", "bias", "weight");
    const int64_t out_features = weight.dim() == 2 ? weight.size(0) : 1;
    if (bias.dim() > 1 || (bias.dim() == 1 && bias.size(0) != out_features && bias.size(0) != 1)) {
      throw ShapeError("linear: bias of shape " + shape_str(bias.sizes()) +
                       " does not fit weight of shape " + shape_str(weight.sizes()) +
                       "; expected a bias of shape [" + std::to_string(out_features) + "]");
    }
  }
  // PyTorch 1.13's choice of kernels, which decides the grad_fn: addmm for 2-D input (and
  // contiguous 3-D input, viewed as 2-D), else matmul plus an in-place bias add.
  if (x.dim() == 2 && bias.defined()) return addmm(bias, x, weight.t());
  if (bias.defined() && x.dim() == 3 && x.is_contiguous()) {
    Tensor out = addmm(bias, x.view({x.size(0) * x.size(1), x.size(2)}), weight.t());
    return out.view({x.size(0), x.size(1), out.size(1)});
  }
  Tensor out = matmul(x, weight.t());
  if (bias.defined()) out.add_(bias);
  return out;
}

Tensor Tensor::matmul(const Tensor& other) const {
  return nns::matmul(*this, other);
}
Tensor Tensor::mm(const Tensor& other) const {
  return nns::mm(*this, other);
}

}  // namespace nns
