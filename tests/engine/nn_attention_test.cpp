// SPDX-License-Identifier: GPL-3.0-or-later
// nn::MultiheadAttention (engine/nn/attention.h) against PyTorch (tests/fixtures/attention.json,
// written by tests/fixtures/areas/attention.py): the initial parameters bit for bit after the
// same seed, the repr, the output, the head-averaged weights and those per head kept for
// attention maps, the gradients of query, key,
// value and every parameter (self-attention, cross-attention with batch_first, no bias, a
// causal mask); the backward against finite differences; errors.
#include <gtest/gtest.h>

#include <functional>

#include "engine/nn/attention.h"
#include "engine/ops/ops.h"
#include "support/fixtures.h"
#include "support/gradcheck.h"
#include "support/op_case.h"

namespace nns::test {
namespace {

const Fixtures& fx() {
  return Fixtures::load("attention");
}

constexpr double kRtol = 1e-5, kAtol = 1e-6;

nn::MultiheadAttentionOptions options(int64_t e, int64_t heads, bool batch_first = false,
                                      bool bias = true, bool causal = false) {
  nn::MultiheadAttentionOptions o;
  o.embed_dim = e;
  o.num_heads = heads;
  o.batch_first = batch_first;
  o.bias = bias;
  o.is_causal = causal;
  return o;
}

void check_case(const std::string& name, uint64_t seed, const nn::MultiheadAttentionOptions& o) {
  const std::string key = "mha." + name;
  SCOPED_TRACE(key);
  manual_seed(seed);
  auto m = std::make_shared<nn::MultiheadAttention>(o);
  for (const auto& [pname, p] : m->named_parameters())
    EXPECT_TRUE(exactly_equal(p.detach(), fx().tensor(key + ".param." + pname))) << pname;
  EXPECT_EQ(m->repr(), fx().string(key + ".repr"));
  const bool self = !fx().has_tensor(key + ".grad_k");
  Tensor q = fx().tensor(key + ".q").to_tensor().requires_grad_(true);
  Tensor k = self ? q : fx().tensor(key + ".k").to_tensor().requires_grad_(true);
  Tensor v = self ? q : fx().tensor(key + ".v").to_tensor().requires_grad_(true);
  m->record_head_weights = true;
  const std::vector<Tensor> outs = m->forward(std::vector<Tensor>{q, k, v});
  ASSERT_EQ(outs.size(), 2u);
  // The weights per head it keeps for attention maps: average_attn_weights=False's, detached.
  EXPECT_TRUE(matches(m->last_head_weights, fx().tensor(key + ".heads"), kRtol, kAtol)) << "heads";
  EXPECT_FALSE(m->last_head_weights.requires_grad());
  Tensor total;
  for (size_t i = 0; i < 2; ++i) {
    const std::string out = key + ".out" + std::to_string(i);
    EXPECT_TRUE(matches(outs[i].detach(), fx().tensor(out), kRtol, kAtol)) << out;
    const Tensor term =
        (outs[i] * fx().tensor(key + ".grad_out" + std::to_string(i)).to_tensor()).sum();
    total = total.defined() ? total + term : term;
  }
  total.backward();
  EXPECT_TRUE(matches(q.grad(), fx().tensor(key + ".grad_q"), kRtol, kAtol)) << "grad_q";
  if (!self) {
    EXPECT_TRUE(matches(k.grad(), fx().tensor(key + ".grad_k"), kRtol, kAtol)) << "grad_k";
    EXPECT_TRUE(matches(v.grad(), fx().tensor(key + ".grad_v"), kRtol, kAtol)) << "grad_v";
  }
  for (const auto& [pname, p] : m->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << pname;
    EXPECT_TRUE(matches(p.grad(), fx().tensor(key + ".grad." + pname), kRtol, kAtol)) << pname;
  }
}

TEST(NnAttention, MultiheadAttentionMatchesPyTorch) {
  check_case("self", 0, options(8, 2));
  check_case("cross_batch_first", 1, options(6, 3, true));
  check_case("no_bias", 2, options(4, 1, false, false));
  check_case("causal_batch_first", 3, options(8, 4, true, true, true));
}

TEST(NnAttention, CausalWeightsAreZeroAfterEachQuery) {
  manual_seed(0);
  nn::MultiheadAttention m(options(4, 2, true, true, true));
  const Tensor x = randn({2, 5, 4});
  const Tensor w = m.forward(std::vector<Tensor>{x, x, x})[1].contiguous();
  const std::vector<float> values = w.to_vector<float>();
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t i = 0; i < 5; ++i) {
      double row = 0;
      for (int64_t j = 0; j < 5; ++j) {
        const float a = values[static_cast<size_t>((b * 5 + i) * 5 + j)];
        if (j > i) EXPECT_EQ(a, 0.0f) << b << " " << i << " " << j;
        row += a;
      }
      EXPECT_NEAR(row, 1.0, 1e-6);
    }
  }
}

TEST(NnAttention, BackwardMatchesFiniteDifferences) {
  manual_seed(0);
  nn::MultiheadAttention m(options(4, 2, false, true, true));
  m.to(kFloat64);
  EXPECT_TRUE(nns::testing::gradcheck(
      [&m](const std::vector<Tensor>& x) {
        const std::vector<Tensor> outs = m.forward(std::vector<Tensor>{x[0], x[1], x[2]});
        return cat({outs[0].flatten(), outs[1].flatten()}, 0);
      },
      {randn({3, 2, 4}, kFloat64), randn({3, 2, 4}, kFloat64), randn({3, 2, 4}, kFloat64)}));
}

TEST(NnAttention, BadInputsAndOptionsAreClearErrors) {
  EXPECT_THROW(nn::MultiheadAttention(options(6, 4)), ValueError);  // 6 % 4 != 0
  nn::MultiheadAttention m(options(4, 2, true));
  try {
    m.forward(std::vector<Tensor>{randn({2, 3, 5}), randn({2, 3, 4}), randn({2, 3, 4})});
    FAIL() << "a wrong embed_dim was accepted";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("query must be [N, L, E] with E = embed_dim = 4"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(m.forward(std::vector<Tensor>{randn({2, 3, 4})}), ValueError);
}

}  // namespace
}  // namespace nns::test
