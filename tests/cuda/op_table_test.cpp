// SPDX-License-Identifier: GPL-3.0-or-later
// The op table on the GPU against the CPU: every case runs on CPU inputs and on the same
// inputs moved to cuda:0, the outputs compared with the case's tolerance, then backward of
// the same random weighting of the output on both, every input's gradient compared. Float32
// and float64, broadcast operands, strided (transposed, sliced) inputs. Skips without a GPU.
#include <gtest/gtest.h>

#include <functional>

#include "cuda/cuda_test_util.h"
#include "engine/ops/ops.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"

namespace nns {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct OpCase {
  std::string name;
  std::vector<Shape> shapes;  // float inputs, randn (positive() makes them > 0)
  Fn fn;
  double rtol = 1e-5, atol = 1e-6;  // float32; float64 uses 1e-10 / 1e-12
  bool positive = false;            // inputs in (0.5, 1.5): log, sqrt, pow
  bool grad = true;
};

// The CPU inputs of a case (leaves that require grad when the case checks gradients).
std::vector<Tensor> inputs_of(const OpCase& c, Dtype dtype) {
  std::vector<Tensor> in;
  for (const Shape& s : c.shapes) {
    Tensor t = c.positive ? add(rand(s), 0.5) : randn(s);
    t = t.to(dtype).detach();
    if (c.grad) t.requires_grad_(true);
    in.push_back(t);
  }
  return in;
}

void check_case(const OpCase& c, Dtype dtype) {
  SCOPED_TRACE(c.name + " " + dtype_name(dtype));
  manual_seed(7);
  std::vector<Tensor> cpu = inputs_of(c, dtype);
  std::vector<Tensor> gpu;
  for (const Tensor& t : cpu) {
    Tensor g = t.detach().to(test::kCuda0);
    if (c.grad) g.requires_grad_(true);
    gpu.push_back(g);
  }
  const double rtol = dtype == kFloat64 ? 1e-10 : c.rtol;
  const double atol = dtype == kFloat64 ? 1e-12 : c.atol;
  const Tensor out_cpu = c.fn(cpu);
  const Tensor out_gpu = c.fn(gpu);
  ASSERT_EQ(out_gpu.device(), test::kCuda0);
  EXPECT_TRUE(test::close_on_cpu(out_gpu, out_cpu, rtol, atol)) << "output";
  if (!c.grad || !out_cpu.is_floating_point()) return;
  const Tensor w = randn(out_cpu.sizes()).to(out_cpu.dtype());
  (out_cpu * w).sum().backward();
  (out_gpu * w.to(test::kCuda0)).sum().backward();
  for (size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(cpu[i].grad().defined(), gpu[i].grad().defined()) << "input " << i;
    if (!cpu[i].grad().defined()) continue;
    EXPECT_EQ(gpu[i].grad().device(), test::kCuda0);
    EXPECT_TRUE(test::close_on_cpu(gpu[i].grad(), cpu[i].grad(), rtol * 10, atol * 10))
        << "gradient of input " << i;
  }
}

std::vector<OpCase> op_table() {
  const Tensor labels = from_vector(std::vector<int64_t>{2, 0, 1, 2}, {4});
  return {
      {"add broadcast", {{4, 3}, {3}}, [](auto& x) { return add(x[0], x[1], 0.5); }},
      {"sub broadcast", {{4, 1}, {1, 3}}, [](auto& x) { return sub(x[0], x[1]); }},
      {"mul strided", {{3, 4}, {4, 3}}, [](auto& x) { return mul(x[0], x[1].t()); }},
      {"div", {{5, 2}, {5, 2}}, [](auto& x) { return div(x[0], x[1]); }, 1e-5, 1e-6, true},
      {"scalar ops", {{6}}, [](auto& x) { return rsub(mul(add(x[0], 2.0), 3.0), 1.0); }},
      {"pow scalar", {{7}}, [](auto& x) { return pow(x[0], 2.5); }, 1e-5, 1e-6, true},
      {"pow tensor", {{7}, {7}}, [](auto& x) { return pow(x[0], x[1]); }, 1e-5, 1e-6, true},
      {"exp", {{9}}, [](auto& x) { return exp(x[0]); }},
      {"log", {{9}}, [](auto& x) { return log(x[0]); }, 1e-5, 1e-6, true},
      {"sqrt rsqrt", {{9}}, [](auto& x) { return add(sqrt(x[0]), rsqrt(x[0])); }, 1e-5, 1e-6, true},
      {"sin cos", {{9}}, [](auto& x) { return mul(sin(x[0]), cos(x[0])); }},
      {"abs", {{9}}, [](auto& x) { return abs(x[0]); }},
      {"clamp", {{9}}, [](auto& x) { return clamp(x[0], -0.5, 0.5); }},
      {"tanh sigmoid", {{3, 5}}, [](auto& x) { return add(tanh(x[0]), sigmoid(x[0])); }},
      {"relu leaky_relu", {{3, 5}}, [](auto& x) { return add(relu(x[0]), leaky_relu(x[0])); }},
      {"gelu", {{3, 5}}, [](auto& x) { return add(gelu(x[0]), gelu(x[0], "tanh")); }},
      {"silu elu", {{3, 5}}, [](auto& x) { return add(silu(x[0]), elu(x[0], 0.7)); }},
      {"where gt", {{4, 4}, {4, 4}}, [](auto& x) { return where(gt(x[0], x[1]), x[0], x[1]); }},
      {"sum dims",
       {{2, 3, 4}},
       [](auto& x) {
         return sum(x[0], {0, 2});
       }},
      {"sum strided", {{4, 6}}, [](auto& x) { return sum(x[0].t().slice(0, 1, 5), {1}); }},
      {"mean", {{5, 7}}, [](auto& x) { return mean(x[0], {1}, true); }},
      {"sum all", {{33, 65}}, [](auto& x) { return sum(x[0]); }, 1e-4, 1e-5},
      {"max dim", {{4, 6}}, [](auto& x) { return max(x[0], 1, false).first; }},
      {"var", {{4, 6}}, [](auto& x) { return var(x[0], {1}); }, 1e-4, 1e-6},
      {"softmax", {{4, 10}}, [](auto& x) { return softmax(x[0], 1); }},
      {"log_softmax dim 0", {{6, 3, 2}}, [](auto& x) { return log_softmax(x[0], 0); }},
      {"mm", {{8, 16}, {16, 4}}, [](auto& x) { return mm(x[0], x[1]); }, 1e-4, 1e-5},
      {"matmul transposed",
       {{16, 8}, {4, 16}},
       [](auto& x) { return matmul(x[0].t(), x[1].t()); },
       1e-4,
       1e-5},
      {"bmm", {{3, 5, 6}, {3, 6, 2}}, [](auto& x) { return bmm(x[0], x[1]); }, 1e-4, 1e-5},
      {"matmul broadcast batch",
       {{5, 6}, {3, 6, 2}},
       [](auto& x) { return matmul(x[0], x[1]); },
       1e-4,
       1e-5},
      {"linear",
       {{7, 5}, {3, 5}, {3}},
       [](auto& x) { return linear(x[0], x[1], x[2]); },
       1e-4,
       1e-5},
      {"conv2d",
       {{2, 3, 8, 8}, {4, 3, 3, 3}, {4}},
       [](auto& x) {
         return conv2d(x[0], x[1], x[2], {1, 1}, {1, 1});
       },
       1e-4,
       1e-5},
      {"conv2d strided grouped",
       {{2, 4, 9, 9}, {6, 2, 3, 3}},
       [](auto& x) {
         return conv2d(x[0], x[1], Tensor(), {2, 2}, {0, 0}, {1, 1}, 2);
       },
       1e-4,
       1e-5},
      // Patches of 31 MB an image (float32): the images go through the product in chunks
      // (two, then one), with dilation.
      {"conv2d chunked dilated",
       {{3, 1, 400, 400}, {2, 1, 7, 7}, {2}},
       [](auto& x) {
         return conv2d(x[0], x[1], x[2], {1, 1}, {6, 6}, {2, 2});
       },
       1e-4,
       1e-5},
      {"max_pool2d",
       {{2, 3, 8, 8}},
       [](auto& x) {
         return max_pool2d(x[0], {2, 2});
       }},
      {"avg_pool2d",
       {{2, 3, 7, 7}},
       [](auto& x) {
         return avg_pool2d(x[0], {3, 3}, {2, 2});
       }},
      {"adaptive_avg_pool2d",
       {{2, 3, 7, 5}},
       [](auto& x) {
         return adaptive_avg_pool2d(x[0], {3, 2});
       }},
      {"batch_norm training",
       {{4, 3, 5}, {3}, {3}},
       [](auto& x) { return batch_norm(x[0], Tensor(), Tensor(), x[1], x[2], /*training=*/true); },
       1e-4,
       1e-5},
      {"layer_norm",
       {{4, 8}, {8}, {8}},
       [](auto& x) { return layer_norm(x[0], {8}, x[1], x[2]); },
       1e-4,
       1e-5},
      {"cross_entropy",
       {{4, 3}},
       [labels](auto& x) { return cross_entropy(x[0], labels.to(x[0].device())); },
       1e-5,
       1e-6},
      {"mse_loss", {{4, 3}, {4, 3}}, [](auto& x) { return mse_loss(x[0], x[1]); }},
      {"embedding",
       {{5, 3}},
       [](auto& x) {
         return embedding(x[0],
                          from_vector(std::vector<int64_t>{4, 0, 4, 2}, {2, 2}).to(x[0].device()));
       }},
      {"gather",
       {{3, 4}},
       [](auto& x) {
         return gather(
             x[0], 1,
             from_vector(std::vector<int64_t>{0, 3, 1, 1, 2, 2}, {3, 2}).to(x[0].device()));
       }},
      {"index_select",
       {{5, 2}},
       [](auto& x) {
         return index_select(x[0], 0,
                             from_vector(std::vector<int64_t>{4, 1, 1}, {3}).to(x[0].device()));
       }},
      {"cat",
       {{2, 3}, {1, 3}},
       [](auto& x) {
         return cat({x[0], x[1]}, 0);
       }},
  };
}

TEST(CudaOps, EveryOpMatchesTheCpu) {
  NNS_SKIP_WITHOUT_CUDA();
  for (const OpCase& c : op_table()) {
    check_case(c, kFloat32);
    check_case(c, kFloat64);
  }
}

TEST(CudaOps, CopiesConvertEveryDtype) {
  NNS_SKIP_WITHOUT_CUDA();
  const Tensor x = from_vector(std::vector<float>{-1.5f, 0.0f, 2.25f, 1e4f}, {4});
  for (Dtype d : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kBool}) {
    SCOPED_TRACE(dtype_name(d));
    const Tensor cpu = x.to(d);
    const Tensor gpu = x.to(test::kCuda0).to(d);
    EXPECT_EQ(gpu.dtype(), d);
    EXPECT_TRUE(test::close_on_cpu(gpu, cpu, 0, 0));
    // And back through a strided view.
    const Tensor m = randn({3, 4}).to(d);
    EXPECT_TRUE(test::close_on_cpu(m.to(test::kCuda0).t().contiguous(), m.t().contiguous(), 0, 0));
  }
}

TEST(CudaOps, CopyAcrossDevicesAndRandomTensorsThere) {
  NNS_SKIP_WITHOUT_CUDA();
  const Tensor cpu = randn({3, 5});
  Tensor gpu = zeros({3, 5}, TensorOptions(kFloat32).device(test::kCuda0));
  gpu.copy_(cpu);
  EXPECT_TRUE(test::close_on_cpu(gpu, cpu, 0, 0));
  Tensor back = zeros({5, 3});
  back.copy_(gpu.t());
  EXPECT_TRUE(test::close_on_cpu(back, cpu.t(), 0, 0));
  // Drawn on the host from the default generator, so the same values as on the CPU.
  manual_seed(3);
  const Tensor a = randn({4}, TensorOptions(kFloat32).device(test::kCuda0));
  manual_seed(3);
  EXPECT_TRUE(test::close_on_cpu(a, randn({4}), 0, 0));
  // A gradient through copy_ goes back to the source's device.
  Tensor src = randn({3}).requires_grad_(true);
  Tensor dst = zeros({3}, TensorOptions(kFloat32).device(test::kCuda0));
  dst.copy_(src);
  dst.sum().backward();
  ASSERT_TRUE(src.grad().defined());
  EXPECT_EQ(src.grad().device(), kCPU);
}

TEST(CudaOps, ArgmaxAndComparisons) {
  NNS_SKIP_WITHOUT_CUDA();
  const Tensor x = randn({5, 7});
  const Tensor g = x.to(test::kCuda0);
  EXPECT_TRUE(test::close_on_cpu(argmax(g, 1), argmax(x, 1), 0, 0));
  EXPECT_TRUE(test::close_on_cpu(eq(g, g), eq(x, x), 0, 0));
  EXPECT_TRUE(test::close_on_cpu(lt(g, 0.0), lt(x, 0.0), 0, 0));
  const Tensor bad = from_vector(std::vector<float>{1.0f, NAN, 2.0f}, {3});
  EXPECT_TRUE(any_non_finite(bad.to(test::kCuda0)));
  EXPECT_FALSE(any_non_finite(x.to(test::kCuda0)));
}

TEST(CudaOps, ABadIndexIsAnErrorNotAWrongRead) {
  NNS_SKIP_WITHOUT_CUDA();
  const Tensor w = randn({5, 3}).to(test::kCuda0);
  EXPECT_THROW(embedding(w, from_vector(std::vector<int64_t>{1, 5}, {2}).to(test::kCuda0)), Error);
  const Tensor logits = randn({2, 3}).to(test::kCuda0);
  EXPECT_THROW(cross_entropy(logits, from_vector(std::vector<int64_t>{0, 3}, {2}).to(test::kCuda0)),
               Error);
}

}  // namespace
}  // namespace nns

namespace nns {
namespace {

// nn.Linear's addmm with a float32 bias runs as one cuBLASLt product with the bias in its
// epilogue: the output and every gradient match the CPU's, for a bias at an odd address (a
// view one element in), a transposed input, 3-D input and a product of one row.
TEST(CudaOps, LinearsBiasInTheProductsEpilogueMatchesTheCpu) {
  NNS_SKIP_WITHOUT_CUDA();
  manual_seed(2);
  for (const auto& [rows, in, out, offset] :
       {std::tuple{64, 32, 48, 0}, std::tuple{1, 7, 5, 1}, std::tuple{300, 129, 65, 1}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(in) + " -> " + std::to_string(out));
    const Tensor x = randn({rows, in});
    const Tensor w = randn({out, in});
    const Tensor b = randn({out + offset}).narrow(0, offset, out);
    const auto run = [&](const Device& device) {
      Tensor xd = x.to(device).requires_grad_(true);
      Tensor wd = w.to(device).requires_grad_(true);
      Tensor bd = b.to(device).requires_grad_(true);
      const Tensor y = linear(xd, wd, bd);
      (y * y).sum().backward();
      return std::vector<Tensor>{y, xd.grad(), wd.grad(), bd.grad()};
    };
    const std::vector<Tensor> gpu = run(test::kCuda0);
    const std::vector<Tensor> cpu = run(kCPU);
    for (size_t i = 0; i < gpu.size(); ++i) {
      EXPECT_TRUE(test::close_on_cpu(gpu[i], cpu[i], 1e-4, 1e-4)) << "tensor " << i;
    }
  }
  // The same through a transposed input and 3-D input.
  const Tensor x3 = randn({4, 6, 10});
  const Tensor w = randn({12, 10});
  const Tensor b = randn({12});
  EXPECT_TRUE(
      test::close_on_cpu(linear(x3.to(test::kCuda0), w.to(test::kCuda0), b.to(test::kCuda0)),
                         linear(x3, w, b), 1e-4, 1e-4));
  const Tensor xt = randn({10, 9}).t();
  EXPECT_TRUE(
      test::close_on_cpu(linear(xt.to(test::kCuda0), w.to(test::kCuda0), b.to(test::kCuda0)),
                         linear(xt, w, b), 1e-4, 1e-4));
}

}  // namespace
}  // namespace nns
