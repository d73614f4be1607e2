// The fast paths of the training step give what the general paths give: the vectorized
// float32 tanh over contiguous memory, the weight gradient that linear's backward makes in the
// weight's own layout (taken by AccumulateGrad without a copy), SGD's one-pass momentum
// update, the probes' update ratio of a large parameter estimated from a sample, the column
// sums of a reduction over leading dims (bias gradients), and the CPU allocator's reuse of
// freed blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/ops/ops.h"
#include "engine/optim/sgd.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"
#include "engine/train/probes.h"

namespace nns {
namespace {

TEST(SpeedPaths, ContiguousTanhMatchesTheStridedPath) {
  manual_seed(0);
  Tensor x = randn({64, 40}) * 6;
  // The edges of the formula: tiny values (tanh(x) = x), the clamp at +-20, non-finite values.
  const float specials[] = {0.0f,
                            -0.0f,
                            5e-5f,
                            -5e-5f,
                            1e-4f,
                            25.0f,
                            -25.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  float* p = x.data_ptr<float>();
  for (size_t i = 0; i < std::size(specials); ++i) p[i * 7] = specials[i];
  const Tensor contiguous = x.tanh();
  // The transposed input takes the general (strided) kernel.
  const Tensor strided = x.t().tanh().t();
  ASSERT_FALSE(x.t().is_contiguous());
  const std::vector<float> a = contiguous.to_vector<float>();
  const std::vector<float> b = strided.contiguous().to_vector<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << i;
    } else {
      EXPECT_EQ(a[i], b[i]) << "at " << i << ", x = " << p[i];
    }
  }
}

TEST(SpeedPaths, LinearWeightGradientIsContiguousAndExact) {
  manual_seed(1);
  nn::Linear layer(5, 3);
  const Tensor x = randn({7, 5});
  const Tensor g = randn({7, 3});
  (layer(x) * g).sum().backward();
  const Tensor grad = layer.weight.grad();
  EXPECT_TRUE(grad.is_contiguous());
  EXPECT_FALSE(grad.impl()->is_view);
  EXPECT_EQ(grad.sizes(), (Shape{3, 5}));
  // grad_W = g^T @ x, computed here as a plain product.
  const Tensor want = mm(g.t(), x);
  const std::vector<float> got = grad.to_vector<float>();
  const std::vector<float> expected = want.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], expected[i]) << i;
  // A second backward accumulates into the taken buffer.
  (layer(x) * g).sum().backward();
  const std::vector<float> twice = layer.weight.grad().to_vector<float>();
  for (size_t i = 0; i < twice.size(); ++i) EXPECT_FLOAT_EQ(twice[i], 2 * expected[i]) << i;
}

TEST(SpeedPaths, MomentumStepOnContiguousAndStridedGradientsAgree) {
  // The one-pass update (contiguous gradient) and the tensor-op path (a strided gradient,
  // which the one-pass update does not take) follow the same roundings.
  manual_seed(2);
  const Tensor w0 = randn({6, 4});
  const Tensor g = randn({6, 4});
  optim::SGDOptions o(0.1);
  o.momentum = 0.9;
  o.dampening = 0.25;
  Tensor a = w0.clone().requires_grad_(true);
  Tensor b = w0.clone().requires_grad_(true);
  optim::SGD sa({a}, o), sb({b}, o);
  for (int step = 0; step < 3; ++step) {
    a.set_grad(g.clone());
    b.set_grad(g.t().contiguous().t());
    ASSERT_FALSE(b.grad().is_contiguous());
    sa.step();
    sb.step();
  }
  EXPECT_EQ(a.detach().to_vector<float>(), b.detach().to_vector<float>());
}

TEST(SpeedPaths, UpdateRatioOfALargeParameterIsEstimatedFromASample) {
  manual_seed(3);
  auto net = std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{std::make_shared<nn::Linear>(200, 100)});
  train::Probes probes(net);
  probes.add("0", train::ProbeOptions{false, false, true, 1});
  optim::SGD sgd(net->parameters(), optim::SGDOptions(0.5));
  const Tensor w = net->get_parameter("0.weight");
  const Tensor before = w.detach().clone();
  probes.begin_step(1);
  (*net)(randn({32, 200})).pow(2).mean().backward();
  probes.before_optimizer_step();
  sgd.step();
  probes.end_step();
  double diff = 0, norm = 0;
  const std::vector<float> after_values = w.detach().to_vector<float>();
  const std::vector<float> before_values = before.to_vector<float>();
  for (size_t i = 0; i < after_values.size(); ++i) {
    const double d = static_cast<double>(after_values[i]) - before_values[i];
    diff += d * d;
    norm += static_cast<double>(after_values[i]) * after_values[i];
  }
  const double exact = std::sqrt(diff) / std::sqrt(norm);
  bool seen = false;
  for (const train::ProbeSample& s : probes.take_samples()) {
    if (s.tensor != "weight") continue;
    seen = true;
    ASSERT_GT(w.numel(), static_cast<int64_t>(train::kReservoirValues));
    EXPECT_NEAR(s.update_ratio, exact, 0.05 * exact);
  }
  EXPECT_TRUE(seen);
}

// A contiguous input summed over its leading dims takes the register-blocked column sums; the
// same values in a transposed layout take the general strided loop, which adds each column's
// rows in the same order: the results are the same bits. The widths cover a tail only (3), whole
// blocks (64) and blocks plus a tail (70).
TEST(SpeedPaths, SumOverLeadingDimsMatchesTheStridedPath) {
  manual_seed(4);
  for (Dtype dtype : {kFloat32, kFloat64}) {
    for (const Shape& shape : {Shape{256, 3}, Shape{256, 64}, Shape{300, 70}, Shape{2, 33}}) {
      const Tensor x = (randn(shape) * 1000).to(dtype);
      const Tensor strided = x.t().contiguous().t();
      ASSERT_FALSE(strided.is_contiguous());
      EXPECT_EQ(x.sum({0}).to(kFloat64).to_vector<double>(),
                strided.sum({0}).to(kFloat64).to_vector<double>())
          << shape_str(shape);
      EXPECT_EQ(x.mean({0}, true).to(kFloat64).to_vector<double>(),
                strided.mean({0}, true).to(kFloat64).to_vector<double>())
          << shape_str(shape);
    }
    // Two leading dims of a 3-D input; the transposed copy visits its rows in the same order.
    const Tensor x3 = randn({4, 6, 40}).to(dtype);
    const Tensor strided3 = x3.transpose(0, 1).contiguous().transpose(0, 1);
    ASSERT_FALSE(strided3.is_contiguous());
    EXPECT_EQ(x3.sum({0, 1}).to(kFloat64).to_vector<double>(),
              strided3.sum({0, 1}).to(kFloat64).to_vector<double>());
  }
  const Tensor ints = randint(-1000, 1000, {50, 37});
  EXPECT_EQ(ints.sum({0}).to_vector<int64_t>(),
            ints.t().contiguous().t().sum({0}).to_vector<int64_t>());
  // An empty batch sums to zeros; a mean over it is NaN, as on the general path.
  const Tensor empty_rows = zeros({0, 5});
  EXPECT_EQ(empty_rows.sum({0}).to_vector<float>(), std::vector<float>(5, 0.0f));
  for (float v : empty_rows.mean({0}).to_vector<float>()) EXPECT_TRUE(std::isnan(v));
}

// Freed blocks come back for the next allocation of the same size, 64-byte aligned, and a
// factory's fill still writes every element of a reused block.
TEST(SpeedPaths, AllocatorReusesFreedBlocksOfTheSameSize) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{5} << 20}) {
    const void* first = nullptr;
    {
      Tensor a = full({n}, 7.0f);
      first = a.raw_data();
    }
    Tensor b = zeros({n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.raw_data()) % 64, 0u) << n;
    if (n > 0 && n * 4 <= (int64_t{16} << 20)) EXPECT_EQ(b.raw_data(), first) << n;
    for (float v : b.to_vector<float>()) ASSERT_EQ(v, 0.0f) << n;
  }
}

}  // namespace
}  // namespace nns
