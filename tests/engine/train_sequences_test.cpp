// SPDX-License-Identifier: GPL-3.0-or-later
// Training on sequence tasks (engine/train/accuracy.h, attention_maps.h and the session): the
// accuracy per position, per sequence and with ignored positions; the loss over positions as
// PyTorch code computes it; a probe on a Transformer layer publishing its attention maps; a
// prediction carrying the maps of every attention module; the example transformer's project.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/data/sequences.h"
#include "engine/graph/project.h"
#include "engine/ops/ops.h"
#include "engine/tensor/factories.h"
#include "engine/train/accuracy.h"
#include "engine/train/attention_maps.h"
#include "engine/train/session.h"
#include "support/test_util.h"

namespace nns::train {
namespace {

// One-hot scores [N, T, C] for the predicted classes.
Tensor scores_for(const std::vector<int64_t>& predicted, int64_t n, int64_t t, int64_t classes) {
  std::vector<float> s(static_cast<size_t>(n * t * classes), 0.0f);
  for (size_t i = 0; i < predicted.size(); ++i) {
    s[i * static_cast<size_t>(classes) + static_cast<size_t>(predicted[i])] = 1.0f;
  }
  return from_vector(s, {n, t, classes});
}

TEST(TrainAccuracy, PositionsSequencesAndIgnoredTargets) {
  // Two sequences of three positions; the second's first position does not count.
  const Tensor targets =
      from_vector(std::vector<int64_t>{0, 1, 2, data::kIgnoredPosition, 1, 1}, {2, 3});
  const Tensor output = scores_for({0, 1, 2, 0, 1, 2}, 2, 3, 3);
  const std::optional<Accuracy> a = score_predictions(output, targets);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->counted, 5);
  EXPECT_EQ(a->correct, 4);
  EXPECT_DOUBLE_EQ(a->rate(), 0.8);
  EXPECT_EQ(a->sequences, 2);
  EXPECT_EQ(a->sequences_correct, 1);  // the second sequence's last position is wrong
  EXPECT_EQ(a->position_counted, (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(a->position_correct, (std::vector<int64_t>{1, 2, 1}));
  const std::vector<double> rates = a->position_rates();
  EXPECT_DOUBLE_EQ(rates[2], 0.5);
  Accuracy sum = *a;
  sum.add(*a);
  EXPECT_EQ(sum.counted, 10);
  EXPECT_EQ(sum.position_correct, (std::vector<int64_t>{2, 4, 2}));
  // A class per sample: no sequence figures.
  const std::optional<Accuracy> plain =
      score_predictions(from_vector(std::vector<float>{1, 0, 0, 1}, {2, 2}),
                        from_vector(std::vector<int64_t>{0, 0}, {2}));
  ASSERT_TRUE(plain.has_value());
  EXPECT_DOUBLE_EQ(plain->rate(), 0.5);
  EXPECT_TRUE(std::isnan(plain->sequence_rate()));
  // Regression outputs and mismatched shapes are not scored.
  EXPECT_FALSE(score_predictions(zeros({2, 1}), zeros({2, 1})).has_value());
  EXPECT_FALSE(score_predictions(zeros({2, 4, 3}), targets).has_value());
}

TEST(TrainAccuracy, LossInputsFlattenPositionsAsPyTorchCodeDoes) {
  const Tensor targets =
      from_vector(std::vector<int64_t>{0, 1, 2, data::kIgnoredPosition, 1, 1}, {2, 3});
  manual_seed(3);
  const Tensor output = randn({2, 3, 4});
  const auto [scores, labels] = loss_inputs(output, targets);
  EXPECT_EQ(scores.sizes(), (Shape{6, 4}));
  EXPECT_EQ(labels.sizes(), (Shape{6}));
  // cross_entropy over the five positions that count: the mean of their -log softmax.
  const double loss = cross_entropy(scores, labels).item();
  const std::vector<float> x = output.to_vector<float>();
  const std::vector<int64_t> y = targets.to_vector<int64_t>();
  double total = 0;
  for (size_t r = 0; r < 6; ++r) {
    if (y[r] == data::kIgnoredPosition) continue;
    double norm = 0;
    for (size_t c = 0; c < 4; ++c) norm += std::exp(static_cast<double>(x[r * 4 + c]));
    total += std::log(norm) - x[r * 4 + static_cast<size_t>(y[r])];
  }
  EXPECT_NEAR(loss, total / 5, 1e-6);
  // A class per sample passes through; a per-position target with a flat output is refused.
  const Tensor plain = zeros({2, 4});
  EXPECT_TRUE(loss_inputs(plain, zeros({2}, kInt64)).first.is_same(plain));
  test::expect_error<ShapeError>(
      [&] {
        loss_inputs(zeros({2, 12}), targets);
      },
      {"the targets hold a class per position, [2, 3] = [N, T], so the "
       "model's output must be [N, T, classes], but it is [2, 12]"});
}

class TrainSequenceSession : public ::testing::Test {
 protected:
  void SetUp() override {
    project_ = graph::load_project(std::string(NNS_SOURCE_DIR) +
                                   "/resources/examples/reverse_transformer.nns");
  }
  graph::Project project_;
};

TEST_F(TrainSequenceSession, EvaluationReportsPositionsAndTheLossOverThem) {
  std::unique_ptr<TrainingSession> session = make_session(project_, ".");
  EXPECT_TRUE(session->train_set().per_position());
  session->step(20);
  session->evaluate();
  ASSERT_TRUE(session->wait_idle(std::chrono::seconds(60)));
  const SessionStatus st = session->status();
  ASSERT_EQ(st.state, RunState::Paused) << st.error;
  ASSERT_TRUE(st.last_evaluation.has_value());
  const Evaluation& e = *st.last_evaluation;
  ASSERT_EQ(e.position_accuracy.size(), 8u);
  // The whole test set by hand: the loss over every position, the share of right positions and
  // of sequences right everywhere.
  const data::Dataset& test = session->test_set();
  NoGradGuard no_grad;
  nn::ModulePtr model = session->model();
  model->eval();
  const Tensor out = (*model)(test.inputs);
  model->train();
  const auto [scores, labels] = loss_inputs(out, test.targets);
  EXPECT_NEAR(e.loss, cross_entropy(scores, labels).item(), 1e-5);
  const std::vector<int64_t> predicted = argmax(out, 2).to_vector<int64_t>();
  const std::vector<int64_t> y = test.targets.to_vector<int64_t>();
  int64_t right = 0, sequences = 0;
  for (int64_t i = 0; i < test.size(); ++i) {
    bool all = true;
    for (int64_t t = 0; t < 8; ++t) {
      const bool ok =
          predicted[static_cast<size_t>(i * 8 + t)] == y[static_cast<size_t>(i * 8 + t)];
      right += ok;
      all = all && ok;
    }
    sequences += all;
  }
  EXPECT_DOUBLE_EQ(e.accuracy, static_cast<double>(right) / static_cast<double>(test.size() * 8));
  EXPECT_DOUBLE_EQ(e.sequence_accuracy,
                   static_cast<double>(sequences) / static_cast<double>(test.size()));
  const double mean =
      std::accumulate(e.position_accuracy.begin(), e.position_accuracy.end(), 0.0) / 8;
  EXPECT_NEAR(mean, e.accuracy, 1e-12);
}

TEST_F(TrainSequenceSession, AProbeOnALayerPublishesItsAttentionMapsPerHead) {
  std::unique_ptr<TrainingSession> session = make_session(project_, ".");
  ProbeOptions o;
  o.every = 5;
  o.max_overhead = 0;
  session->add_probe("encoder.0", o);
  session->step(11);  // samples steps 1, 6 and 11
  ASSERT_TRUE(session->wait_idle(std::chrono::seconds(60)));
  std::vector<int64_t> steps;
  for (const ProbeSample& s : session->take_probe_samples()) {
    if (s.kind != ProbeKind::Attention) continue;
    steps.push_back(s.step);
    EXPECT_EQ(s.module, "encoder.0");
    EXPECT_EQ(s.tensor, "self_attn");
    const AttentionMap& m = s.attention;
    EXPECT_EQ(m.module, "self_attn");
    ASSERT_EQ(m.heads, 4);
    ASSERT_EQ(m.queries, 8);
    ASSERT_EQ(m.keys, 8);
    ASSERT_EQ(m.weights.size(), 4u * 8 * 8);
    for (int64_t row = 0; row < 4 * 8; ++row) {
      const float* w = m.weights.data() + row * 8;
      EXPECT_NEAR(std::accumulate(w, w + 8, 0.0), 1.0, 1e-5) << "row " << row;
    }
    EXPECT_EQ(s.stats.numel, 4 * 8 * 8);
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 6, 11}));
  // Recording is on only inside sampled steps.
  for (const auto& [name, mha] : attention_modules(session->model())) {
    EXPECT_FALSE(mha->record_head_weights) << name;
    EXPECT_FALSE(mha->last_head_weights.defined()) << name;
  }
}

TEST_F(TrainSequenceSession, APredictionCarriesTheMapsOfEveryAttentionModule) {
  std::unique_ptr<TrainingSession> session = make_session(project_, ".");
  session->step(5);
  const Tensor sequence = session->test_set().inputs.narrow(0, 3, 1);
  const uint64_t id = session->predict(sequence);
  ASSERT_TRUE(session->wait_idle(std::chrono::seconds(60)));
  const std::optional<Prediction> p = session->take_prediction();
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->id, id);
  ASSERT_TRUE(p->error.empty()) << p->error;
  ASSERT_EQ(p->attention.size(), 2u);
  EXPECT_EQ(p->attention[0].module, "encoder.0.self_attn");
  EXPECT_EQ(p->attention[1].module, "encoder.1.self_attn");
  // The same maps as recording the model by hand in eval mode on that sequence.
  NoGradGuard no_grad;
  nn::ModulePtr model = session->model();
  model->eval();
  std::vector<AttentionMap> expected;
  {
    const AttentionRecording recording(model);
    (*model)(sequence);
    expected = recording.maps(0);
  }
  model->train();
  ASSERT_EQ(expected.size(), 2u);
  for (size_t a = 0; a < 2; ++a) EXPECT_EQ(p->attention[a].weights, expected[a].weights) << a;
}

TEST(TrainSequenceProbes, AnLstmProbeShowsHowSaturatedItsGatesAre) {
  const graph::Project project =
      graph::load_project(std::string(NNS_SOURCE_DIR) + "/resources/examples/sine_lstm.nns");
  std::unique_ptr<TrainingSession> session = make_session(project, ".");
  ProbeOptions o;
  o.every = 1;
  o.max_overhead = 0;
  o.gradients = o.parameters = false;
  session->add_probe("lstm", o);
  session->step(2);
  ASSERT_TRUE(session->wait_idle(std::chrono::seconds(60)));
  std::map<std::string, int> seen;
  for (const ProbeSample& s : session->take_probe_samples()) {
    if (s.tensor.rfind("gates.", 0) != 0) continue;
    ++seen[s.tensor];
    EXPECT_EQ(s.kind, ProbeKind::Activation);
    EXPECT_EQ(s.stats.numel, 24 * 32 * 32);  // steps x batch x hidden
    EXPECT_FALSE(std::isnan(s.stats.saturated_fraction)) << s.tensor;
    if (s.tensor == "gates.cell") {
      EXPECT_GE(s.stats.min, -1.0);
      EXPECT_LE(s.stats.max, 1.0);
    } else {
      EXPECT_GE(s.stats.min, 0.0);
      EXPECT_LE(s.stats.max, 1.0);
    }
  }
  EXPECT_EQ(seen,
            (std::map<std::string, int>{
                {"gates.cell", 2}, {"gates.forget", 2}, {"gates.input", 2}, {"gates.output", 2}}));
}

}  // namespace
}  // namespace nns::train
