// SPDX-License-Identifier: GPL-3.0-or-later
// nn::TransformerEncoderLayer and nn::TransformerDecoderLayer (engine/nn/transformer.h) against
// PyTorch (tests/fixtures/transformer.json, written by tests/fixtures/areas/transformer.py): the
// initial parameters bit for bit after the same seed, the repr (PyTorch's submodule names),
// the output, the attention maps per head of self_attn (and multihead_attn) as a probe records
// them, and the gradients of the inputs and every parameter, with relu and gelu, norm
// first or after, batch_first both ways, eval mode with dropout; errors.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/nn/positional.h"
#include "engine/nn/transformer.h"
#include "engine/ops/ops.h"
#include "engine/train/attention_maps.h"
#include "support/fixtures.h"
#include "support/op_case.h"

namespace nns::test {
namespace {

const Fixtures& fx() {
  return Fixtures::load("transformer");
}

constexpr double kRtol = 1e-5, kAtol = 1e-5;

nn::TransformerOptions options(int64_t d, int64_t heads, int64_t ff, double dropout,
                               const std::string& activation = "relu", double eps = 1e-5,
                               bool batch_first = false, bool norm_first = false) {
  nn::TransformerOptions o;
  o.d_model = d;
  o.nhead = heads;
  o.dim_feedforward = ff;
  o.dropout = dropout;
  o.activation = activation;
  o.layer_norm_eps = eps;
  o.batch_first = batch_first;
  o.norm_first = norm_first;
  return o;
}

template <class Layer>
void check_case(const std::string& name, uint64_t seed, const nn::TransformerOptions& o,
                bool train = true) {
  const std::string key = "tf." + name;
  SCOPED_TRACE(key);
  manual_seed(seed);
  auto m = std::make_shared<Layer>(o);
  m->train(train);
  for (const auto& [pname, p] : m->named_parameters())
    EXPECT_TRUE(exactly_equal(p.detach(), fx().tensor(key + ".param." + pname))) << pname;
  EXPECT_EQ(m->repr(), fx().string(key + ".repr"));
  std::vector<Tensor> inputs;
  for (int i = 0; fx().has_tensor(key + ".in" + std::to_string(i)); ++i)
    inputs.push_back(fx().tensor(key + ".in" + std::to_string(i)).to_tensor().requires_grad_(true));
  std::vector<train::AttentionMap> maps;
  Tensor out;
  {
    // The attention maps a probe on the layer shows: each attention submodule's weights per
    // head, against PyTorch's need_weights=True, average_attn_weights=False on what it saw.
    const train::AttentionRecording recording(m);
    out = m->forward(inputs).at(0);
    maps = recording.maps(0);
  }
  const train::AttentionModules attention = train::attention_modules(m);
  ASSERT_EQ(maps.size(), attention.size());
  for (size_t a = 0; a < maps.size(); ++a) {
    const std::string heads = key + ".heads." + attention[a].first;
    const Tensor expected = fx().tensor(heads).to_tensor().select(0, 0);  // sequence 0
    EXPECT_EQ(maps[a].module, attention[a].first);
    EXPECT_EQ((Shape{maps[a].heads, maps[a].queries, maps[a].keys}), expected.sizes()) << heads;
    const std::vector<float> want = expected.to_vector<float>();
    ASSERT_EQ(maps[a].weights.size(), want.size()) << heads;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(maps[a].weights[i], want[i], kAtol + kRtol * std::abs(want[i]))
          << heads << " " << i;
    }
    EXPECT_FALSE(attention[a].second->record_head_weights);  // off again after the recording
  }
  EXPECT_TRUE(matches(out.detach(), fx().tensor(key + ".out"), kRtol, kAtol));
  out.backward(fx().tensor(key + ".grad_out").to_tensor());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string g = key + ".grad_in" + std::to_string(i);
    EXPECT_TRUE(matches(inputs[i].grad(), fx().tensor(g), kRtol, kAtol)) << g;
  }
  for (const auto& [pname, p] : m->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << pname;
    EXPECT_TRUE(matches(p.grad(), fx().tensor(key + ".grad." + pname), kRtol, kAtol)) << pname;
  }
}

TEST(NnTransformer, EncoderLayerMatchesPyTorch) {
  check_case<nn::TransformerEncoderLayer>("encoder", 0, options(8, 2, 16, 0.0));
  check_case<nn::TransformerEncoderLayer>("encoder_gelu_norm_first_batch_first", 1,
                                          options(8, 4, 12, 0.0, "gelu", 1e-3, true, true));
  check_case<nn::TransformerEncoderLayer>("encoder_eval_dropout", 2, options(4, 1, 8, 0.1),
                                          /*train=*/false);
}

TEST(NnTransformer, DecoderLayerMatchesPyTorch) {
  check_case<nn::TransformerDecoderLayer>("decoder_batch_first", 3,
                                          options(8, 2, 12, 0.0, "relu", 1e-5, true));
  check_case<nn::TransformerDecoderLayer>("decoder_gelu_norm_first", 4,
                                          options(6, 3, 10, 0.0, "gelu", 1e-5, false, true));
}

TEST(NnTransformer, BadOptionsAndInputsAreClearErrors) {
  EXPECT_THROW(nn::TransformerEncoderLayer(options(8, 3, 16, 0.0)), ValueError);  // 8 % 3
  EXPECT_THROW(nn::TransformerEncoderLayer(options(8, 2, 16, 0.0, "tanh")), ValueError);
  nn::TransformerDecoderLayer decoder(options(4, 2, 8, 0.0));
  EXPECT_THROW(decoder.forward(std::vector<Tensor>{randn({3, 2, 4})}), ValueError);
}

// The sinusoids of "Attention Is All You Need", added per position (not per batch element);
// their table is no state-dict entry. The PyTorch twin computes the same (torch.export's
// sequence_models.nns).
TEST(NnTransformer, PositionalEncodingAddsTheSinusoids) {
  nn::PositionalOptions o;
  o.d_model = 6;
  o.max_len = 10;
  o.batch_first = true;
  nn::PositionalEncoding pe(o);
  EXPECT_TRUE(pe.state_dict().empty());
  EXPECT_EQ(pe.repr(), "PositionalEncoding(d_model=6, max_len=10, batch_first=True)");
  const Tensor y = pe(zeros({2, 4, 6})).contiguous();
  const std::vector<float> v = y.to_vector<float>();
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t p = 0; p < 4; ++p) {
      for (int64_t i = 0; i < 6; i += 2) {
        const double angle = p / std::pow(10000.0, static_cast<double>(i) / 6);
        const size_t at = static_cast<size_t>((n * 4 + p) * 6 + i);
        EXPECT_NEAR(v[at], std::sin(angle), 1e-6);
        EXPECT_NEAR(v[at + 1], std::cos(angle), 1e-6);
      }
    }
  }
  EXPECT_THROW(pe(zeros({2, 11, 6})), ShapeError);  // more positions than max_len
  EXPECT_THROW(pe(zeros({2, 4, 5})), ShapeError);
}

TEST(NnTransformer, LearnedPositionalEncodingAddsAWeightRowPerPosition) {
  nn::PositionalOptions o;
  o.d_model = 3;
  o.max_len = 5;
  manual_seed(0);
  nn::LearnedPositionalEncoding pe(o);
  ASSERT_EQ(pe.state_dict().keys(), std::vector<std::string>{"weight"});
  const Tensor x = randn({4, 2, 3}).requires_grad_(true);
  const Tensor y = pe(x);
  const std::vector<float> xv = x.detach().contiguous().to_vector<float>();
  const std::vector<float> yv = y.detach().contiguous().to_vector<float>();
  const std::vector<float> wv = pe.weight.detach().contiguous().to_vector<float>();
  for (size_t p = 0; p < 4; ++p) {
    for (size_t n = 0; n < 2; ++n) {
      for (size_t d = 0; d < 3; ++d) {
        const size_t at = (p * 2 + n) * 3 + d;
        EXPECT_EQ(yv[at], xv[at] + wv[p * 3 + d]);
      }
    }
  }
  y.sum().backward();
  // Each used row's gradient is the batch size; the unused row's is 0.
  const std::vector<float> g = pe.weight.grad().contiguous().to_vector<float>();
  for (size_t k = 0; k < 12; ++k) EXPECT_EQ(g[k], 2.0f);
  for (size_t k = 12; k < 15; ++k) EXPECT_EQ(g[k], 0.0f);
}

}  // namespace
}  // namespace nns::test
