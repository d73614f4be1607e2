// SPDX-License-Identifier: GPL-3.0-or-later
// The functional forms of the layers: conv1d/conv2d, max/avg/adaptive pooling, dropout, batch and
// layer norm (embedding lives with the indexing ops). Each checks its arguments with messages in
// PyTorch's terms, hands contiguous data to the backend's NNKernels and records the node
// PyTorch 1.13 records (ConvolutionBackward0, NativeBatchNormBackward0, ...).
#include "engine/ops/nn_ops.h"

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/kernel_types.h"
#include "engine/backend/nn_kernels.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/reduction.h"
#include "engine/tensor/factories.h"

namespace nns {

namespace {

std::string int2_str(Int2 v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}

void check_defined(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) throw ValueError(std::string(op) + ": " + what + " is an undefined tensor");
}

void check_floating(const Tensor& t, const char* op, const char* what) {
  if (t.dtype() != kFloat32 && t.dtype() != kFloat64) {
    throw DtypeError(std::string(op) + ": expected a float32 or float64 " + what + ", but got " +
                     dtype_name(t.dtype()) + "; convert it with .to(nns::kFloat32) first");
  }
}

// An optional operand (weight, bias, running stats) must match the input's dtype and device.
void check_like_input(const Tensor& t, const Tensor& input, const char* op, const char* what) {
  if (!t.defined()) return;
  if (t.dtype() != input.dtype()) {
    throw DtypeError(std::string(op) + ": " + what + " is " + dtype_name(t.dtype()) +
                     " but the input is " + dtype_name(input.dtype()) +
                     "; convert one with .to(...) so that they match");
  }
  if (t.device() != input.device()) {
    throw DeviceError(std::string(op) + ": " + what + " is on " + t.device().str() +
                      " but the input is on " + input.device().str() + "; move one with .to(...)");
  }
}

void check_positive(Int2 v, const char* op, const char* what) {
  if (v[0] <= 0 || v[1] <= 0) {
    throw ValueError(std::string(op) + ": " + what + " must be positive, but got " + int2_str(v));
  }
}

void check_non_negative(Int2 v, const char* op, const char* what) {
  if (v[0] < 0 || v[1] < 0) {
    throw ValueError(std::string(op) + ": " + what + " must be non-negative, but got " +
                     int2_str(v));
  }
}

// The data of t in row-major order: itself when contiguous, else a copy kept out of the graph.
Tensor contiguous_data(const Tensor& t) {
  if (t.is_contiguous()) return t;
  NoGradGuard no_grad;
  return t.contiguous();
}

// Contiguous data of an optional operand; the view of an undefined one has null data.
TensorView optional_view(const Tensor& t) {
  return t.defined() ? view_of(t) : TensorView{};
}

Tensor empty_for(const Shape& shape, const Tensor& like) {
  return empty(shape, TensorOptions(like.dtype()).device(like.device()));
}

// ---- LSTM cell ------------------------------------------------------------------------

struct LstmCellBackward : Node {
  SavedVariable c_prev;
  Tensor act, tanh_c;  // the step's own buffers, never seen outside it
  int64_t n = 0, hidden = 0;
  std::string name() const override { return "LstmCellBackward"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor gh = grads[0].defined() ? contiguous_data(grads[0]) : Tensor();
    const Tensor gc = grads.size() > 1 && grads[1].defined() ? contiguous_data(grads[1]) : Tensor();
    const Tensor c = c_prev.unpack(this);
    Tensor g_gates = empty_for({n, 4 * hidden}, act);
    Tensor g_c = next_edges[1].valid() ? empty_for({n, hidden}, act) : Tensor();
    kernels<NNKernels>(act.device(), "lstm_cell_backward")
        .lstm_cell_backward(optional_view(gh), optional_view(gc), view_of(act),
                            optional_view(c.defined() ? contiguous_data(c) : c), view_of(tanh_c), n,
                            hidden, view_of(g_gates), optional_view(g_c));
    return {g_gates, g_c};
  }
  void release_variables() override {
    c_prev.reset();
    act = tanh_c = Tensor();
  }
};

}  // namespace

std::vector<Tensor> lstm_cell(const Tensor& gates, const Tensor& c) {
  check_floating(gates, "lstm_cell", "gates");
  check_like_input(c, gates, "lstm_cell", "c");
  if (gates.dim() != 2 || gates.size(1) % 4 != 0) {
    throw ShapeError("lstm_cell: gates must be [N, 4 * hidden], got " + shape_str(gates.sizes()));
  }
  const int64_t n = gates.size(0), hidden = gates.size(1) / 4;
  if (c.defined() && c.sizes() != Shape{n, hidden}) {
    throw ShapeError("lstm_cell: c must be [N, hidden] = " + shape_str({n, hidden}) + ", got " +
                     shape_str(c.sizes()));
  }
  const Tensor g = contiguous_data(gates);
  const Tensor cp = c.defined() ? contiguous_data(c) : c;
  Tensor act = empty_for({n, 4 * hidden}, gates);
  Tensor c_next = empty_for({n, hidden}, gates);
  Tensor tanh_c = empty_for({n, hidden}, gates);
  Tensor h = empty_for({n, hidden}, gates);
  kernels<NNKernels>(gates.device(), "lstm_cell")
      .lstm_cell_forward(view_of(g), optional_view(cp), n, hidden, view_of(act), view_of(c_next),
                         view_of(tanh_c), view_of(h));
  if (auto node = make_node<LstmCellBackward>({gates, c})) {
    node->c_prev = SavedVariable(c);
    node->act = act;
    node->tanh_c = tanh_c;
    node->n = n;
    node->hidden = hidden;
    set_history(std::vector<Tensor>{h, c_next}, node);
  }
  return {h, c_next, act};
}

namespace {

// ---- conv2d ---------------------------------------------------------------------------

struct ConvolutionBackward0 : Node {
  // The input is kept for the weight's gradient, the weight for the input's.
  SavedVariable input, weight;
  Conv2dGeometry geometry{};
  // The gradients take the operands' own shapes (conv1d runs as a conv2d of height 1).
  Shape input_sizes, weight_sizes;
  bool has_bias = false;
  std::string name() const override { return "ConvolutionBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Conv2dGeometry& g = geometry;
    Tensor gy = contiguous_data(grads[0]);
    Tensor x = input.defined() ? contiguous_data(input.unpack(this)) : Tensor();
    Tensor w = weight.defined() ? contiguous_data(weight.unpack(this)) : Tensor();
    Tensor gx, gw, gb;
    if (next_edges[0].valid()) gx = empty_for(input_sizes, gy);
    if (next_edges[1].valid()) gw = empty_for(weight_sizes, gy);
    if (has_bias && next_edges[2].valid()) gb = empty_for({g.out_channels}, gy);
    kernels<NNKernels>(gy.device(), "conv2d_backward")
        .conv2d_backward(view_of(gy), optional_view(x), optional_view(w), optional_view(gx),
                         optional_view(gw), optional_view(gb), g);
    return {gx, gw, gb};
  }
  void release_variables() override {
    input.reset();
    weight.reset();
  }
};

// ---- pooling ----------------------------------------------------------------------------

// ATen's pooling_output_shape: floor or ceil division, and with ceil_mode the last window
// must start inside the input or its left padding.
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                         bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Checks a pooling's arguments and works out its geometry; input is 3-D or 4-D.
Pool2dGeometry pool_geometry(const Tensor& input, Int2 kernel, Int2& stride, Int2 padding,
                             Int2 dilation, bool ceil_mode, const char* op) {
  check_defined(input, op, "input");
  if (input.dim() != 3 && input.dim() != 4) {
    throw ShapeError(std::string(op) +
                     ": expected a 3-D (unbatched) or 4-D (batched) input "
                     "[N, C, H, W], but got input of shape " +
                     shape_str(input.sizes()));
  }
  check_floating(input, op, "input");
  if (stride[0] == 0 && stride[1] == 0) stride = kernel;
  check_positive(kernel, op, "kernel_size");
  check_positive(stride, op, "stride");
  check_positive(dilation, op, "dilation");
  check_non_negative(padding, op, "padding");
  if (padding[0] > kernel[0] / 2 || padding[1] > kernel[1] / 2) {
    throw ValueError(std::string(op) +
                     ": pad should be at most half of the kernel size, but got "
                     "padding " +
                     int2_str(padding) + " for kernel_size " + int2_str(kernel));
  }
  const int64_t h = input.size(-2), w = input.size(-1);
  Pool2dGeometry g{};
  g.planes = input.numel() / std::max<int64_t>(h * w, 1);
  if (h * w == 0) g.planes = 0;
  g.in_h = h;
  g.in_w = w;
  g.out_h = pool_output_size(h, kernel[0], padding[0], stride[0], dilation[0], ceil_mode);
  g.out_w = pool_output_size(w, kernel[1], padding[1], stride[1], dilation[1], ceil_mode);
  if (g.out_h < 1 || g.out_w < 1 || h < 1 || w < 1) {
    throw ShapeError(std::string(op) + ": the input of shape " + shape_str(input.sizes()) +
                     " is too small for kernel_size " + int2_str(kernel) + ", stride " +
                     int2_str(stride) + ", padding " + int2_str(padding) + " and dilation " +
                     int2_str(dilation) + ": the output would be " + std::to_string(g.out_h) + "x" +
                     std::to_string(g.out_w));
  }
  g.kernel_h = kernel[0];
  g.kernel_w = kernel[1];
  g.stride_h = stride[0];
  g.stride_w = stride[1];
  g.pad_h = padding[0];
  g.pad_w = padding[1];
  g.dilation_h = dilation[0];
  g.dilation_w = dilation[1];
  return g;
}

Shape pool_output_shape(const Tensor& input, const Pool2dGeometry& g) {
  Shape shape = input.sizes();
  shape[shape.size() - 2] = g.out_h;
  shape[shape.size() - 1] = g.out_w;
  return shape;
}

struct MaxPool2DWithIndicesBackward0 : Node {
  Shape self_sizes;
  SavedVariable indices;
  Pool2dGeometry geometry{};
  std::string name() const override { return "MaxPool2DWithIndicesBackward0"; }
  variable_list apply(variable_list&& grads) override {
    Tensor gy = contiguous_data(grads[0]);
    Tensor gx = empty_for(self_sizes, gy);
    kernels<NNKernels>(gy.device(), "max_pool2d_backward")
        .max_pool2d_backward(view_of(gy), view_of(indices.unpack(this)), view_of(gx), geometry);
    return {gx};
  }
  void release_variables() override { indices.reset(); }
};

struct AvgPool2DBackward0 : Node {
  Shape self_sizes;
  Pool2dGeometry geometry{};
  std::string name() const override { return "AvgPool2DBackward0"; }
  variable_list apply(variable_list&& grads) override {
    Tensor gy = contiguous_data(grads[0]);
    Tensor gx = empty_for(self_sizes, gy);
    kernels<NNKernels>(gy.device(), "avg_pool2d_backward")
        .avg_pool2d_backward(view_of(gy), view_of(gx), geometry);
    return {gx};
  }
};

struct AdaptiveAvgPool2DBackward0 : Node {
  Shape self_sizes;
  Pool2dGeometry geometry{};
  std::string name() const override { return "AdaptiveAvgPool2DBackward0"; }
  variable_list apply(variable_list&& grads) override {
    Tensor gy = contiguous_data(grads[0]);
    Tensor gx = empty_for(self_sizes, gy);
    kernels<NNKernels>(gy.device(), "adaptive_avg_pool2d_backward")
        .adaptive_avg_pool2d_backward(view_of(gy), view_of(gx), geometry);
    return {gx};
  }
};

// ---- normalization ----------------------------------------------------------------------

struct NativeBatchNormBackward0 : Node {
  SavedVariable input, weight, mean, invstd;
  bool training = true;
  std::string name() const override { return "NativeBatchNormBackward0"; }
  variable_list apply(variable_list&& grads) override {
    Tensor gy = contiguous_data(grads[0]);
    Tensor x = contiguous_data(input.unpack(this));
    Tensor w = weight.unpack(this);
    const int64_t n = x.size(0), channels = x.size(1);
    const int64_t spatial = n * channels == 0 ? 0 : x.numel() / (n * channels);
    Tensor gx = next_edges[0].valid() ? empty_for(x.sizes(), x) : Tensor();
    Tensor gw = next_edges[1].valid() ? empty_for({channels}, x) : Tensor();
    Tensor gb = next_edges[2].valid() ? empty_for({channels}, x) : Tensor();
    kernels<NNKernels>(gy.device(), "batch_norm_backward")
        .batch_norm_backward(view_of(gy), view_of(x), n, channels, spatial,
                             view_of(mean.unpack(this)), view_of(invstd.unpack(this)),
                             optional_view(w.defined() ? contiguous_data(w) : w), training,
                             optional_view(gx), optional_view(gw), optional_view(gb));
    return {gx, gw, gb};
  }
  void release_variables() override {
    input.reset();
    weight.reset();
    mean.reset();
    invstd.reset();
  }
};

struct NativeLayerNormBackward0 : Node {
  SavedVariable input, weight, mean, rstd;
  Shape normalized_shape;
  int64_t rows = 0, cols = 0;
  std::string name() const override { return "NativeLayerNormBackward0"; }
  variable_list apply(variable_list&& grads) override {
    Tensor gy = contiguous_data(grads[0]);
    Tensor x = contiguous_data(input.unpack(this));
    Tensor w = weight.unpack(this);
    if (w.defined()) w = contiguous_data(w);
    Tensor gx = next_edges[0].valid() ? empty_for(x.sizes(), x) : Tensor();
    Tensor gw = next_edges[1].valid() ? empty_for(normalized_shape, x) : Tensor();
    Tensor gb = next_edges[2].valid() ? empty_for(normalized_shape, x) : Tensor();
    kernels<NNKernels>(gy.device(), "layer_norm_backward")
        .layer_norm_backward(view_of(gy), view_of(x), rows, cols, view_of(mean.unpack(this)),
                             view_of(rstd.unpack(this)), optional_view(w), optional_view(gx),
                             optional_view(gw), optional_view(gb));
    return {gx, gw, gb};
  }
  void release_variables() override {
    input.reset();
    weight.reset();
    mean.reset();
    rstd.reset();
  }
};

}  // namespace

namespace {

// The convolution of an input whose data is [N, C_in, H, W] (x4, the sizes it is seen with)
// by a weight whose data is [C_out, C_in / groups, kH, kW] (w4); drop_h leaves H (of size 1)
// out of the output's shape, for conv1d. Checks everything but the ranks, which the callers
// did.
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const Shape& x4,
                   const Shape& w4, Int2 stride, Int2 padding, Int2 dilation, int64_t groups,
                   bool drop_h, const char* op) {
  const std::string name = op;
  check_floating(input, op, "input");
  check_like_input(weight, input, op, "weight");
  check_like_input(bias, input, op, "bias");
  if (groups <= 0) {
    throw ValueError(name + ": groups must be positive, but got " + std::to_string(groups));
  }
  check_positive(stride, op, "stride");
  check_positive(dilation, op, "dilation");
  check_non_negative(padding, op, "padding");
  const int64_t out_channels = w4[0];
  if (out_channels % groups != 0) {
    throw ShapeError(name + ": given groups=" + std::to_string(groups) +
                     ", expected weight to be divisible by " + std::to_string(groups) +
                     " at dimension 0, but got weight of shape " + shape_str(weight.sizes()));
  }
  if (x4[1] != w4[1] * groups) {
    throw ShapeError(name + ": given groups=" + std::to_string(groups) + ", weight of shape " +
                     shape_str(weight.sizes()) + " expects the input to have " +
                     std::to_string(w4[1] * groups) + " channels, but got input of shape " +
                     shape_str(input.sizes()) + " with " + std::to_string(x4[1]) + " channels");
  }
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != out_channels)) {
    throw ShapeError(name + ": given weight of shape " + shape_str(weight.sizes()) +
                     ", expected bias to be 1-D with " + std::to_string(out_channels) +
                     " elements, but got bias of shape " + shape_str(bias.sizes()));
  }
  Conv2dGeometry g{};
  g.batch = x4[0];
  g.in_channels = x4[1];
  g.in_h = x4[2];
  g.in_w = x4[3];
  g.out_channels = out_channels;
  g.kernel_h = w4[2];
  g.kernel_w = w4[3];
  g.stride_h = stride[0];
  g.stride_w = stride[1];
  g.pad_h = padding[0];
  g.pad_w = padding[1];
  g.dilation_h = dilation[0];
  g.dilation_w = dilation[1];
  g.groups = groups;
  const int64_t span_h = dilation[0] * (g.kernel_h - 1) + 1,
                span_w = dilation[1] * (g.kernel_w - 1) + 1;
  if (g.in_h + 2 * g.pad_h < span_h || g.in_w + 2 * g.pad_w < span_w) {
    throw ShapeError(name + ": the padded input of " + std::to_string(g.in_h + 2 * g.pad_h) + "x" +
                     std::to_string(g.in_w + 2 * g.pad_w) + " per channel (input " +
                     shape_str(input.sizes()) + ", padding " + int2_str(padding) +
                     ") is smaller than the dilated kernel of " + std::to_string(span_h) + "x" +
                     std::to_string(span_w) + "; pad the input or use a smaller kernel");
  }
  g.out_h = (g.in_h + 2 * g.pad_h - span_h) / g.stride_h + 1;
  g.out_w = (g.in_w + 2 * g.pad_w - span_w) / g.stride_w + 1;
  Tensor x = contiguous_data(input);
  Tensor w = contiguous_data(weight);
  Tensor b = bias.defined() ? contiguous_data(bias) : bias;
  const Shape out_sizes = drop_h ? Shape{g.batch, g.out_channels, g.out_w}
                                 : Shape{g.batch, g.out_channels, g.out_h, g.out_w};
  Tensor out = empty_for(out_sizes, input);
  kernels<NNKernels>(input.device(), op)
      .conv2d_forward(view_of(x), view_of(w), optional_view(b), view_of(out), g);
  if (auto node = make_node<ConvolutionBackward0>({input, weight, bias})) {
    if (node->next_edges[1].valid()) node->input = SavedVariable(input);
    if (node->next_edges[0].valid()) node->weight = SavedVariable(weight);
    node->geometry = g;
    node->input_sizes = input.sizes();
    node->weight_sizes = weight.sizes();
    node->has_bias = bias.defined();
    set_history(out, node);
  }
  return out;
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Int2 stride,
              Int2 padding, Int2 dilation, int64_t groups) {
  check_defined(input, "conv2d", "input");
  check_defined(weight, "conv2d", "weight");
  if (input.dim() == 3) {
    return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0);
  }
  if (input.dim() != 4) {
    throw ShapeError(
        "conv2d: expected a 3-D (unbatched) or 4-D (batched) input [N, C, H, W], "
        "but got input of shape " +
        shape_str(input.sizes()));
  }
  if (weight.dim() != 4) {
    throw ShapeError(
        "conv2d: weight must be 4-D [out_channels, in_channels / groups, kH, kW], "
        "but got weight of shape " +
        shape_str(weight.sizes()));
  }
  return convolution(input, weight, bias, input.sizes(), weight.sizes(), stride, padding, dilation,
                     groups, false, "conv2d");
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding, int64_t dilation, int64_t groups) {
  check_defined(input, "conv1d", "input");
  check_defined(weight, "conv1d", "weight");
  if (input.dim() == 2) {
    return conv1d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0);
  }
  if (input.dim() != 3) {
    throw ShapeError(
        "conv1d: expected a 2-D (unbatched) or 3-D (batched) input [N, C, L], but got input "
        "of shape " +
        shape_str(input.sizes()));
  }
  if (weight.dim() != 3) {
    throw ShapeError(
        "conv1d: weight must be 3-D [out_channels, in_channels / groups, kL], but got weight "
        "of shape " +
        shape_str(weight.sizes()));
  }
  // A conv2d of height 1 over the same data: [N, C, L] is [N, C, 1, L] in memory.
  return convolution(input, weight, bias, {input.size(0), input.size(1), 1, input.size(2)},
                     {weight.size(0), weight.size(1), 1, weight.size(2)}, {1, stride}, {0, padding},
                     {1, dilation}, groups, true, "conv1d");
}

Tensor max_pool2d(const Tensor& input, Int2 kernel_size, Int2 stride, Int2 padding, Int2 dilation,
                  bool ceil_mode) {
  Pool2dGeometry g =
      pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d");
  Tensor x = contiguous_data(input);
  const Shape shape = pool_output_shape(input, g);
  Tensor out = empty_for(shape, input);
  Tensor indices = empty(shape, TensorOptions(kInt64).device(input.device()));
  kernels<NNKernels>(input.device(), "max_pool2d")
      .max_pool2d_forward(view_of(x), view_of(out), view_of(indices), g);
  if (auto node = make_node<MaxPool2DWithIndicesBackward0>({input})) {
    node->self_sizes = input.sizes();
    node->indices = SavedVariable(indices);
    node->geometry = g;
    set_history(out, node);
  }
  return out;
}

Tensor avg_pool2d(const Tensor& input, Int2 kernel_size, Int2 stride, Int2 padding, bool ceil_mode,
                  bool count_include_pad) {
  Pool2dGeometry g =
      pool_geometry(input, kernel_size, stride, padding, {1, 1}, ceil_mode, "avg_pool2d");
  g.count_include_pad = count_include_pad;
  Tensor x = contiguous_data(input);
  Tensor out = empty_for(pool_output_shape(input, g), input);
  kernels<NNKernels>(input.device(), "avg_pool2d").avg_pool2d_forward(view_of(x), view_of(out), g);
  if (auto node = make_node<AvgPool2DBackward0>({input})) {
    node->self_sizes = input.sizes();
    node->geometry = g;
    set_history(out, node);
  }
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& input, Int2 output_size) {
  const char* op = "adaptive_avg_pool2d";
  check_defined(input, op, "input");
  if (input.dim() != 3 && input.dim() != 4) {
    throw ShapeError(
        "adaptive_avg_pool2d: expected a 3-D (unbatched) or 4-D (batched) input [N, C, H, W], "
        "but got input of shape " +
        shape_str(input.sizes()));
  }
  check_floating(input, op, "input");
  check_positive(output_size, op, "output_size");
  for (int64_t d = 1; d < input.dim(); ++d) {
    if (input.size(d) == 0) {
      throw ShapeError(
          "adaptive_avg_pool2d: expected input to have non-zero size for non-batch "
          "dimensions, but got input of shape " +
          shape_str(input.sizes()));
    }
  }
  // As ATen: a 1x1 output is the mean over the plane (so the node is MeanBackward1).
  if (output_size == Int2{1, 1}) return mean(input, {-1, -2}, true);
  Pool2dGeometry g{};
  g.in_h = input.size(-2);
  g.in_w = input.size(-1);
  g.planes = input.numel() / (g.in_h * g.in_w);
  g.out_h = output_size[0];
  g.out_w = output_size[1];
  Tensor x = contiguous_data(input);
  Tensor out = empty_for(pool_output_shape(input, g), input);
  kernels<NNKernels>(input.device(), op).adaptive_avg_pool2d_forward(view_of(x), view_of(out), g);
  if (auto node = make_node<AdaptiveAvgPool2DBackward0>({input})) {
    node->self_sizes = input.sizes();
    node->geometry = g;
    set_history(out, node);
  }
  return out;
}

Tensor dropout(const Tensor& input, double p, bool training, Generator* generator) {
  check_defined(input, "dropout", "input");
  if (!(p >= 0 && p <= 1)) {
    throw ValueError("dropout: dropout probability has to be between 0 and 1, but got " +
                     std::to_string(p));
  }
  // As ATen's CPU dropout: the input itself when nothing is dropped, else input * noise
  // with noise = bernoulli(1 - p) / (1 - p) (so the grad_fn is MulBackward0).
  if (!training || p == 0 || input.numel() == 0) return input;
  check_floating(input, "dropout", "input");
  if (p == 1) return mul(input, zeros({}, TensorOptions(input.dtype()).device(input.device())));
  Tensor noise = bernoulli_mask(input.sizes(), 1 - p,
                                TensorOptions(input.dtype()).device(input.device()), generator);
  noise.div_(1 - p);
  return mul(input, noise);
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  check_defined(input, "batch_norm", "input");
  if (input.dim() < 2) {
    throw ShapeError(
        "batch_norm: expected an input of at least 2 dims [N, C, ...], but got "
        "input of shape " +
        shape_str(input.sizes()));
  }
  check_floating(input, "batch_norm", "input");
  const int64_t n = input.size(0), channels = input.size(1);
  const std::pair<const Tensor*, const char*> params[] = {{&weight, "weight"},
                                                          {&bias, "bias"},
                                                          {&running_mean, "running_mean"},
                                                          {&running_var, "running_var"}};
  for (const auto& [t, what] : params) {
    check_like_input(*t, input, "batch_norm", what);
    if (t->defined() && (t->dim() != 1 || t->size(0) != channels)) {
      throw ShapeError("batch_norm: " + std::string(what) + " should be of shape [" +
                       std::to_string(channels) + "] (the input's channels, dim 1 of " +
                       shape_str(input.sizes()) + "), but got " + shape_str(t->sizes()));
    }
  }
  const int64_t spatial = n * channels == 0 ? 0 : input.numel() / (n * channels);
  const NNKernels& k = kernels<NNKernels>(input.device(), "batch_norm");
  Tensor x = contiguous_data(input);
  Tensor mean, invstd;
  if (training) {
    if (n * spatial == 1) {
      throw ValueError(
          "batch_norm: expected more than 1 value per channel when training, but "
          "got input of shape " +
          shape_str(input.sizes()) + "; use a larger batch or eval mode");
    }
    mean = empty_for({channels}, input);
    invstd = empty_for({channels}, input);
    // The running statistics are updated in place (through a contiguous copy if need be).
    Tensor rm = running_mean.defined() ? contiguous_data(running_mean) : Tensor();
    Tensor rv = running_var.defined() ? contiguous_data(running_var) : Tensor();
    k.batch_norm_stats(view_of(x), n, channels, spatial, eps, momentum, view_of(mean),
                       view_of(invstd), optional_view(rm), optional_view(rv));
    for (auto [stat, data] : {std::pair{running_mean, rm}, std::pair{running_var, rv}}) {
      if (!stat.defined()) continue;
      if (!data.is_same(stat)) {
        kernels<CopyKernels>(stat.device(), "batch_norm").copy(view_of(stat), view_of(data));
      }
      stat.bump_version();
    }
  } else {
    if (!running_mean.defined() || !running_var.defined()) {
      throw ValueError(
          "batch_norm: running_mean and running_var must be defined in evaluation "
          "mode (training=false); pass them or use training mode");
    }
    mean = contiguous_data(running_mean);
    invstd = empty_for({channels}, input);
    k.batch_norm_invstd(view_of(contiguous_data(running_var)), eps, view_of(invstd));
  }
  Tensor w = weight.defined() ? contiguous_data(weight) : weight;
  Tensor b = bias.defined() ? contiguous_data(bias) : bias;
  Tensor out = empty_for(input.sizes(), input);
  k.batch_norm_apply(view_of(x), n, channels, spatial, view_of(mean), view_of(invstd),
                     optional_view(w), optional_view(b), view_of(out));
  if (auto node = make_node<NativeBatchNormBackward0>({input, weight, bias})) {
    node->input = SavedVariable(input);
    node->weight = SavedVariable(weight);
    node->mean = SavedVariable(mean);
    node->invstd = SavedVariable(invstd);
    node->training = training;
    set_history(out, node);
  }
  return out;
}

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  check_defined(input, "layer_norm", "input");
  check_floating(input, "layer_norm", "input");
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  if (nd == 0) {
    throw ValueError(
        "layer_norm: expected normalized_shape to have at least one element, but "
        "got []");
  }
  const Shape& sizes = input.sizes();
  if (input.dim() < nd ||
      !std::equal(normalized_shape.begin(), normalized_shape.end(), sizes.end() - nd)) {
    throw ShapeError("layer_norm: given normalized_shape=" + shape_str(normalized_shape) +
                     ", expected input with shape [*, " + shape_str(normalized_shape).substr(1) +
                     ", but got input of shape " + shape_str(sizes));
  }
  const std::pair<const Tensor*, const char*> params[] = {{&weight, "weight"}, {&bias, "bias"}};
  for (const auto& [t, what] : params) {
    check_like_input(*t, input, "layer_norm", what);
    if (t->defined() && t->sizes() != normalized_shape) {
      throw ShapeError("layer_norm: expected " + std::string(what) + " of shape " +
                       shape_str(normalized_shape) + " (normalized_shape), but got " +
                       shape_str(t->sizes()));
    }
  }
  const int64_t cols = shape_numel(normalized_shape);
  const int64_t rows = cols == 0 ? 0 : input.numel() / cols;
  Tensor x = contiguous_data(input);
  Tensor w = weight.defined() ? contiguous_data(weight) : weight;
  Tensor b = bias.defined() ? contiguous_data(bias) : bias;
  Tensor out = empty_for(sizes, input);
  Tensor mean = empty_for({rows}, input);
  Tensor rstd = empty_for({rows}, input);
  kernels<NNKernels>(input.device(), "layer_norm")
      .layer_norm_forward(view_of(x), rows, cols, eps, optional_view(w), optional_view(b),
                          view_of(out), view_of(mean), view_of(rstd));
  if (auto node = make_node<NativeLayerNormBackward0>({input, weight, bias})) {
    node->input = SavedVariable(input);
    node->weight = SavedVariable(weight);
    node->mean = SavedVariable(mean);
    node->rstd = SavedVariable(rstd);
    node->rows = rows;
    node->cols = cols;
    node->normalized_shape = normalized_shape;
    set_history(out, node);
  }
  return out;
}

}  // namespace nns
