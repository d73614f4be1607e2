// SPDX-License-Identifier: GPL-3.0-or-later
// The recurrent layers (engine/nn/rnn.h): RNN (tanh, relu), LSTM and GRU against PyTorch
// (tests/fixtures/rnn.json, written by tests/fixtures/areas/rnn.py): the initial parameters
// bit for bit after the same seed, the repr, output, h_n and c_n, and the gradients through
// time of the input and every parameter; the backward against finite differences; errors.
#include <gtest/gtest.h>

#include <functional>

#include "engine/autograd/autograd.h"
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "support/fixtures.h"
#include "support/gradcheck.h"
#include "support/op_case.h"

namespace nns::test {
namespace {

const Fixtures& fx() {
  return Fixtures::load("rnn");
}

// Sums over time in another order than PyTorch's fused kernels.
constexpr double kRtol = 1e-5, kAtol = 1e-6;

void check_case(const std::string& name, uint64_t seed, const std::function<nn::ModulePtr()>& make,
                bool train = true) {
  const std::string key = "rnn." + name;
  SCOPED_TRACE(key);
  manual_seed(seed);
  nn::ModulePtr m = make();
  m->train(train);
  for (const auto& [pname, p] : m->named_parameters())
    EXPECT_TRUE(exactly_equal(p.detach(), fx().tensor(key + ".param." + pname))) << pname;
  EXPECT_EQ(m->repr(), fx().string(key + ".repr"));
  Tensor x = fx().tensor(key + ".x").to_tensor().requires_grad_(true);
  const std::vector<Tensor> outs = m->forward(std::vector<Tensor>{x});
  Tensor total;
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::string out = key + ".out" + std::to_string(k);
    ASSERT_TRUE(fx().has_tensor(out)) << "PyTorch gives fewer outputs than " << outs.size();
    EXPECT_TRUE(matches(outs[k].detach(), fx().tensor(out), kRtol, kAtol)) << out;
    const Tensor term =
        (outs[k] * fx().tensor(key + ".grad_out" + std::to_string(k)).to_tensor()).sum();
    total = total.defined() ? total + term : term;
  }
  EXPECT_FALSE(fx().has_tensor(key + ".out" + std::to_string(outs.size())));
  total.backward();
  EXPECT_TRUE(matches(x.grad(), fx().tensor(key + ".grad_input"), kRtol, kAtol)) << "grad_input";
  for (const auto& [pname, p] : m->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << pname;
    EXPECT_TRUE(matches(p.grad(), fx().tensor(key + ".grad." + pname), kRtol, kAtol)) << pname;
  }
}

nn::RNNOptions options(int64_t input, int64_t hidden, int64_t layers = 1, bool batch_first = false,
                       bool bidirectional = false, bool bias = true, double dropout = 0) {
  nn::RNNOptions o;
  o.input_size = input;
  o.hidden_size = hidden;
  o.num_layers = layers;
  o.batch_first = batch_first;
  o.bidirectional = bidirectional;
  o.bias = bias;
  o.dropout = dropout;
  return o;
}

TEST(NnRnn, RnnMatchesPyTorch) {
  check_case("rnn_tanh", 0, [] { return std::make_shared<nn::RNN>(options(3, 4)); });
  check_case("rnn_relu_2layers_batch_first", 1,
             [] { return std::make_shared<nn::RNN>(options(3, 4, 2, true), "relu"); });
}

TEST(NnRnn, LstmMatchesPyTorch) {
  check_case("lstm", 2, [] { return std::make_shared<nn::LSTM>(options(3, 5)); });
  check_case("lstm_bidirectional_2layers_batch_first", 3,
             [] { return std::make_shared<nn::LSTM>(options(4, 3, 2, true, true)); });
  check_case("lstm_no_bias", 4,
             [] { return std::make_shared<nn::LSTM>(options(2, 3, 1, false, false, false)); });
}

TEST(NnRnn, GruMatchesPyTorch) {
  check_case("gru", 5, [] { return std::make_shared<nn::GRU>(options(3, 4)); });
  check_case("gru_bidirectional", 6,
             [] { return std::make_shared<nn::GRU>(options(3, 4, 1, false, true)); });
  check_case(
      "gru_2layers_batch_first_dropout_eval", 7,
      [] { return std::make_shared<nn::GRU>(options(3, 4, 2, true, false, true, 0.25)); },
      /*train=*/false);
}

// The backward through time against central differences, in float64, for every output.
TEST(NnRnn, BackwardThroughTimeMatchesFiniteDifferences) {
  const std::vector<std::function<nn::ModulePtr()>> makers = {
      [] { return std::make_shared<nn::RNN>(options(2, 3, 2, false, true)); },
      [] { return std::make_shared<nn::LSTM>(options(2, 3, 2, true, true)); },
      [] { return std::make_shared<nn::GRU>(options(2, 3, 1, false, true)); },
  };
  for (const auto& make : makers) {
    manual_seed(0);
    nn::ModulePtr m = make();
    m->to(kFloat64);
    SCOPED_TRACE(m->repr());
    EXPECT_TRUE(nns::testing::gradcheck(
        [&m](const std::vector<Tensor>& x) {
          std::vector<Tensor> flat;
          for (const Tensor& t : m->forward(std::vector<Tensor>{x[0]})) flat.push_back(t.flatten());
          return cat(flat, 0);
        },
        {randn({4, 2, 2}, kFloat64)}));
  }
}

// Whether a and b agree within atol + rtol * |b| everywhere.
bool close(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-6) {
  return ((a - b).abs() - b.abs() * rtol).max().item() <= atol;
}

// The fused LSTM step (nn_ops.h lstm_cell) against the separate ops it replaces, forward and
// backward, and against finite differences (with and without a previous c).
TEST(NnRnn, LstmCellMatchesTheSeparateOpsAndFiniteDifferences) {
  manual_seed(5);
  for (const Dtype dtype : {kFloat32, kFloat64}) {
    const Tensor gates = (randn({3, 8}) * 2).to(dtype).requires_grad_(true);
    const Tensor c = randn({3, 2}).to(dtype).requires_grad_(true);
    const std::vector<Tensor> fused = lstm_cell(gates, c);
    const Tensor s = gates.sigmoid();
    const Tensor g = gates.narrow(1, 4, 2).tanh();
    const Tensor c_next = s.narrow(1, 2, 2) * c + s.narrow(1, 0, 2) * g;
    const Tensor h = s.narrow(1, 6, 2) * c_next.tanh();
    // The same functions in the same order: bit for bit.
    EXPECT_EQ(fused[0].to_vector<double>(), h.to_vector<double>()) << dtype_name(dtype);
    EXPECT_EQ(fused[1].to_vector<double>(), c_next.to_vector<double>()) << dtype_name(dtype);
    EXPECT_FALSE(fused[2].requires_grad());
    const Tensor w = randn({3, 2}).to(dtype);
    const Tensor loss_fused = (fused[0] * w).sum() + (fused[1] * fused[1]).sum();
    const Tensor loss_ops = (h * w).sum() + (c_next * c_next).sum();
    const std::vector<Tensor> want = autograd::grad({loss_ops}, {gates, c});
    const std::vector<Tensor> got = autograd::grad({loss_fused}, {gates, c});
    EXPECT_TRUE(close(got[0], want[0])) << dtype_name(dtype);
    EXPECT_TRUE(close(got[1], want[1])) << dtype_name(dtype);
  }
  EXPECT_TRUE(nns::testing::gradcheck(
      [](const std::vector<Tensor>& x) {
        const std::vector<Tensor> out = lstm_cell(x[0], x[1]);
        return cat({out[0].flatten(), out[1].flatten()}, 0);
      },
      {randn({2, 12}, kFloat64), randn({2, 3}, kFloat64)}));
  // Without a previous c (zeros), and only h used: c's gradient path is absent.
  EXPECT_TRUE(nns::testing::gradcheck(
      [](const std::vector<Tensor>& x) { return lstm_cell(x[0], Tensor()).at(0); },
      {randn({2, 12}, kFloat64)}));
  EXPECT_THROW(lstm_cell(randn({2, 7}), Tensor()), ShapeError);
  EXPECT_THROW(lstm_cell(randn({2, 8}), randn({2, 3})), ShapeError);
}

// The gates a probe shows: recorded LSTM gates rebuild the LSTM's own outputs step by step
// (c = f * c + i * g, h = o * tanh(c)), and GRU's (h = (1 - z) * n + z * h).
TEST(NnRnn, RecordedGatesRebuildTheOutputs) {
  constexpr int64_t kSteps = 5, kBatch = 3, kHidden = 4;
  manual_seed(2);
  nn::LSTM lstm(options(2, kHidden, 1, true));
  const Tensor x = randn({kBatch, kSteps, 2});
  EXPECT_TRUE(lstm.last_gates.empty());
  lstm.record_gates = true;
  const std::vector<Tensor> out = lstm.forward(std::vector<Tensor>{x});
  ASSERT_EQ(lstm.last_gates.size(), 4u);
  std::vector<std::string> names;
  for (const auto& [name, value] : lstm.last_gates) {
    names.push_back(name);
    EXPECT_EQ(value.sizes(), (Shape{kSteps * kBatch, kHidden})) << name;
    EXPECT_FALSE(value.requires_grad()) << name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"input", "forget", "cell", "output"}));
  Tensor c = zeros({kBatch, kHidden});
  for (int64_t t = 0; t < kSteps; ++t) {
    auto gate = [&](size_t k) { return lstm.last_gates[k].second.narrow(0, t * kBatch, kBatch); };
    c = gate(1) * c + gate(0) * gate(2);
    const Tensor h = gate(3) * c.tanh();
    EXPECT_TRUE(close(h, out[0].select(1, t).detach())) << "step " << t;
  }
  EXPECT_TRUE(close(c, out[2].select(0, 0).detach()));

  nn::GRU gru(options(2, kHidden, 1, true));
  gru.record_gates = true;
  const std::vector<Tensor> gout = gru.forward(std::vector<Tensor>{x});
  ASSERT_EQ(gru.last_gates.size(), 3u);
  EXPECT_EQ(gru.last_gates[1].first, "update");
  Tensor h = zeros({kBatch, kHidden});
  for (int64_t t = 0; t < kSteps; ++t) {
    const Tensor z = gru.last_gates[1].second.narrow(0, t * kBatch, kBatch);
    const Tensor n = gru.last_gates[2].second.narrow(0, t * kBatch, kBatch);
    h = (1 - z) * n + z * h;
    EXPECT_TRUE(close(h, gout[0].select(1, t).detach())) << "step " << t;
  }
  // Off again: nothing is kept.
  lstm.record_gates = false;
  lstm.last_gates.clear();
  lstm.forward(std::vector<Tensor>{x});
  EXPECT_TRUE(lstm.last_gates.empty());
}

TEST(NnRnn, BadInputsAndOptionsAreClearErrors) {
  nn::LSTM lstm(options(3, 4, 1, true));
  try {
    lstm.forward(std::vector<Tensor>{randn({2, 5, 2})});
    FAIL() << "a wrong input size was accepted";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("expected an input of shape [N, T, 3], got [2, 5, 2]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(lstm.forward(std::vector<Tensor>{randn({5, 3})}), ShapeError);
  EXPECT_THROW(nn::GRU(options(0, 4)), ValueError);
  EXPECT_THROW(nn::RNN(options(3, 4), "sigmoid"), ValueError);
  EXPECT_THROW(nn::LSTM(options(3, 4, 2, false, false, true, 1.5)), ValueError);
}

}  // namespace
}  // namespace nns::test
