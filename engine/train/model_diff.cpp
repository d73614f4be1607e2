// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/model_diff.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine/data/sources.h"
#include "engine/graph/builder.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/dtype.h"
#include "engine/train/accuracy.h"
#include "engine/train/losses.h"
#include "engine/train/probes.h"
#include "engine/train/session.h"
#include "engine/train/weight_changes.h"

namespace nns::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What one node gave on the batch: its first output and d loss / d that output, as float64
// copies (a later in-place layer would change the tensor itself).
struct Kept {
  Tensor output;
  Tensor grad;
};
using KeptByNode = std::unordered_map<graph::NodeId, Kept>;

Tensor float64_copy(const Tensor& t) {
  const Tensor host = t.detach().to(kCPU);
  return host.dtype() == kFloat64 ? host.clone() : host.to(kFloat64);
}

// The node's first output of its first call (a module a Ref calls again keeps the first), and
// through a tensor hook on it the gradient that reaches it.
void keep(KeptByNode& kept, graph::NodeId node, const std::vector<Tensor>& outputs) {
  if (outputs.empty() || !outputs[0].defined() || kept.count(node)) return;
  Kept& k = kept[node];  // unordered_map entries stay where they are
  k.output = float64_copy(outputs[0]);
  if (outputs[0].requires_grad()) {
    outputs[0].register_hook([&k](const Tensor& grad) { k.grad = float64_copy(grad); });
  }
}

// One side's model and what it gave on the batch.
struct Run {
  std::shared_ptr<graph::GraphModule> model;
  KeptByNode kept;
  std::vector<RemovableHandle> hooks;
  double loss = kNaN;
};

std::shared_ptr<graph::GraphModule> side_model(const DiffSide& side) {
  if (!side.weights) return graph::build_initial_model(side.project);
  std::shared_ptr<graph::GraphModule> model = graph::build_model(side.project);
  serialize::load_into(*model, *side.weights, /*strict=*/true);
  return model;
}

// Hooks on the side's matched nodes: a forward hook on each module, the graph's output
// observer for functional nodes (they have no module to hook).
void place_hooks(Run& run, const std::vector<graph::NodeId>& nodes) {
  auto functional = std::make_shared<std::unordered_set<graph::NodeId>>();
  for (graph::NodeId id : nodes) {
    const nn::ModulePtr module = run.model->node_module(id);
    if (!module) {
      functional->insert(id);
      continue;
    }
    run.hooks.push_back(module->register_forward_hook(
        [&kept = run.kept, id](nn::Module&, const std::vector<Tensor>&,
                               const std::vector<Tensor>& outputs) {
          keep(kept, id, outputs);
          return std::optional<std::vector<Tensor>>();
        }));
  }
  run.model->node_output_observer = [&kept = run.kept, functional](
                                        graph::NodeId id, const std::vector<Tensor>& outputs) {
    if (functional->count(id)) keep(kept, id, outputs);
  };
}

void run_batch(Run& run, const Tensor& inputs, const Tensor& targets, nn::Module& loss) {
  // Eval mode, unlike a training step: dropout would make the two sides differ by chance, and
  // batch norm's running statistics are what each model has learned.
  run.model->eval();
  // A floating-point input requires grad, so that the modules before the first parameter have a
  // gradient too (as PyTorch's x.requires_grad_() gives them).
  Tensor x = inputs.detach();
  if (x.is_floating_point()) x.requires_grad_(true);
  const Tensor output = (*run.model)(x);
  const auto [scores, labels] = loss_inputs(output, targets);
  const Tensor l = loss({scores, labels}).at(0);
  run.loss = l.item();
  l.backward();
}

std::string data_name(const graph::DatasetSettings& d) {
  if (d.name == "files") return d.path;
  if (d.name == "csv") return d.csv_path;
  return d.name;
}

// The first `batch` training samples of A's data, in order, as a test set sees them (no random
// transforms).
std::pair<Tensor, Tensor> first_samples(const DiffSide& a, int64_t batch) {
  const data::Dataset train = project_split(a.project, a.base_dir).train;
  const int64_t n = std::min(batch, train.size());
  std::vector<int64_t> first(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) first[static_cast<size_t>(i)] = i;
  const data::Dataset d = data::without_augmentation(train.subset(first));
  return {d.inputs.defined() ? d.inputs : d.input_range(0, n), d.targets};
}

TensorMoments moments(const Tensor& t) {
  if (!t.defined()) return {};
  const TensorStats s = summarize(t, Saturation::None, 1);
  return {s.mean, s.std, s.norm};
}

// Of the two tensors flattened; NaN when either is missing or their shapes differ. Two zero
// tensors agree (1); a zero tensor and another do not (0).
double cosine(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.sizes() != b.sizes()) return kNaN;
  const Tensor p = a.contiguous(), q = b.contiguous();
  const double* u = p.data_ptr<double>();
  const double* v = q.data_ptr<double>();
  double uv = 0, uu = 0, vv = 0;
  for (int64_t i = 0; i < p.numel(); ++i) {
    uv += u[i] * v[i];
    uu += u[i] * u[i];
    vv += v[i] * v[i];
  }
  if (uu == 0 && vv == 0) return 1;
  if (uu == 0 || vv == 0) return 0;
  // sqrt(uu * uu) is exactly uu, so a tensor against itself gives exactly 1.
  return std::clamp(uv / std::sqrt(uu * vv), -1.0, 1.0);
}

// ||w_b - w_a|| / ||w_a|| over the parameters both modules have with the same name and shape.
double weight_change(const nn::ModulePtr& a, const nn::ModulePtr& b) {
  if (!a || !b) return kNaN;
  nn::StateDict pa, pb;
  for (const auto& [name, p] : a->named_parameters()) pa.insert(name, p);
  for (const auto& [name, p] : b->named_parameters()) pb.insert(name, p);
  const auto changes = weight_changes(pa, pb);
  if (changes.empty()) return kNaN;
  WeightChange total;
  for (const auto& [name, c] : changes) total.add(c);
  return total.relative();
}

double divergence(const ModuleDiff& m, bool outputs_comparable) {
  if (!outputs_comparable) return 1;
  double d = std::isnan(m.output_cosine) ? 0 : std::clamp(1 - m.output_cosine, 0.0, 1.0);
  if (std::isinf(m.weight_change)) return 1;
  if (!std::isnan(m.weight_change)) d = std::max(d, m.weight_change / (1 + m.weight_change));
  return d;
}

ModuleDiff compare(const graph::NodeDiff& n, const Run& a, const Run& b) {
  ModuleDiff m;
  m.a = n.a;
  m.b = n.b;
  m.path_a = n.path_a;
  m.path_b = n.path_b;
  const auto ka = a.kept.find(n.a), kb = b.kept.find(n.b);
  const Kept none;
  const Kept& oa = ka == a.kept.end() ? none : ka->second;
  const Kept& ob = kb == b.kept.end() ? none : kb->second;
  m.output_a = moments(oa.output);
  m.output_b = moments(ob.output);
  m.grad_a = moments(oa.grad);
  m.grad_b = moments(ob.grad);
  m.output_cosine = cosine(oa.output, ob.output);
  m.weight_change = weight_change(a.model->node_module(n.a), b.model->node_module(n.b));
  // Neither ran (a switch's inactive branch): only the weights say anything.
  const bool neither = !oa.output.defined() && !ob.output.defined();
  m.divergence = divergence(m, neither || !std::isnan(m.output_cosine));
  return m;
}

}  // namespace

ModelDiff diff_models(const DiffSide& a, const DiffSide& b, const graph::ProjectDiff& diff,
                      int64_t batch) {
  ModelDiff out;
  out.data = data_name(a.project.dataset);
  auto weights_name = [](const DiffSide& side) {
    if (side.weights) return side.weights_name.empty() ? std::string("weights") : side.weights_name;
    return "initial (seed " + std::to_string(side.project.training.seed) + ")";
  };
  out.weights_a = weights_name(a);
  out.weights_b = weights_name(b);

  // The matched pairs that run: every NodeDiff both sides have, but Input and Output nodes.
  std::vector<const graph::NodeDiff*> pairs;
  std::vector<graph::NodeId> nodes_a, nodes_b;
  for (const graph::NodeDiff& n : diff.nodes) {
    if (!n.a || !n.b) continue;
    const auto kind = graph::node_kind(n.type_a);
    if (kind == graph::NodeKind::Input || kind == graph::NodeKind::Output) continue;
    pairs.push_back(&n);
    nodes_a.push_back(n.a);
    nodes_b.push_back(n.b);
  }

  Run ra, rb;
  std::string side = "A";
  try {
    ra.model = side_model(a);
    side = "B";
    rb.model = side_model(b);
    side = "data";
    const auto [inputs, targets] =
        first_samples(a, batch >= 1 ? batch : a.project.training.batch_size);
    out.batch = targets.defined() ? targets.size(0) : 0;
    side = "loss";
    const nn::ModulePtr loss = make_loss(a.project.training.loss, a.project.training.loss_options);
    place_hooks(ra, nodes_a);
    place_hooks(rb, nodes_b);
    side = "A";
    run_batch(ra, inputs, targets, *loss);
    side = "B";
    run_batch(rb, inputs, targets, *loss);
  } catch (const std::exception& e) {
    out.error = side + ": " + e.what();
    out.loss_a = ra.loss;
    out.loss_b = rb.loss;
    return out;
  }
  out.loss_a = ra.loss;
  out.loss_b = rb.loss;
  for (const graph::NodeDiff* n : pairs) out.modules.push_back(compare(*n, ra, rb));
  std::stable_sort(
      out.modules.begin(), out.modules.end(),
      [](const ModuleDiff& x, const ModuleDiff& y) { return x.divergence > y.divergence; });
  return out;
}

}  // namespace nns::train
