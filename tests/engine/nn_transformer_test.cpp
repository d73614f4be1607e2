// nn::TransformerEncoderLayer and nn::TransformerDecoderLayer (engine/nn/transformer.h) against
// PyTorch (tests/fixtures/transformer.json, written by tests/fixtures/areas/transformer.py): the
// initial parameters bit for bit after the same seed, the repr (PyTorch's submodule names),
// the output and the gradients of the inputs and every parameter, with relu and gelu, norm
// first or after, batch_first both ways, eval mode with dropout; errors.
#include <gtest/gtest.h>

#include "engine/nn/transformer.h"
#include "engine/ops/ops.h"
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
  const Tensor out = m->forward(inputs).at(0);
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

}  // namespace
}  // namespace nns::test
