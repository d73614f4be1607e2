// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli diff A.nns B.nns [--weights-a W] [--weights-b W] [--batch N] [--json]: what
// differs between two projects' models, node by node (engine/graph/diff.h), then both models
// on the same batch of A's data, module by module, most divergent first
// (engine/train/model_diff.h).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "engine/graph/diff.h"
#include "engine/serialize/serialize.h"
#include "engine/train/model_diff.h"

namespace nns::cli {
namespace {

// Four significant digits; "-" for NaN (nothing to show).
std::string number(double v) {
  if (std::isnan(v)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

std::string or_dash(const std::string& text) {
  return text.empty() ? "-" : text;
}

// "option out_features: 16 -> 32; parameters: 272 -> 544"; an added or removed node's type.
std::string what_changed(const graph::NodeDiff& d) {
  if (d.kind == graph::DiffKind::Added) return d.type_b;
  if (d.kind == graph::DiffKind::Removed) return d.type_a;
  std::string out;
  for (const graph::FieldChange& c : d.changes)
    out += (out.empty() ? "" : "; ") + c.field + ": " + c.a + " -> " + c.b;
  return out;
}

void print_differences(const graph::ProjectDiff& diff) {
  const std::vector<const graph::NodeDiff*> differences = diff.differences();
  if (differences.empty()) {
    std::cout << "No differences.\n";
    return;
  }
  std::cout << "Differences (" << differences.size() << "):\n";
  std::vector<std::vector<std::string>> rows{{"kind", "path A", "path B", "what changed"}};
  for (const graph::NodeDiff* d : differences) {
    rows.push_back(
        {graph::diff_kind_name(d->kind), or_dash(d->path_a), or_dash(d->path_b), what_changed(*d)});
  }
  print_table(rows);
}

void print_modules(const train::ModelDiff& m) {
  if (!m.error.empty()) {
    std::cout << "\nThe models were not compared: " << m.error << "\n";
    return;
  }
  std::cout << "\n"
            << m.batch << " samples of " << m.data << "; weights A: " << m.weights_a
            << ", B: " << m.weights_b << "\n";
  std::cout << "Loss A: " << number(m.loss_a) << ", B: " << number(m.loss_b)
            << "\n\nModules, most divergent first:\n";
  if (m.modules.empty()) {
    std::cout << "  (none matched)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows{{"module", "mean A", "mean B", "std A", "std B",
                                              "norm A", "norm B", "cosine", "weight change",
                                              "grad norm A", "grad norm B", "divergence"}};
  for (const train::ModuleDiff& d : m.modules) {
    rows.push_back({d.path_a == d.path_b ? d.path_a : d.path_a + " -> " + d.path_b,
                    number(d.output_a.mean), number(d.output_b.mean), number(d.output_a.std),
                    number(d.output_b.std), number(d.output_a.norm), number(d.output_b.norm),
                    number(d.output_cosine), number(d.weight_change), number(d.grad_a.norm),
                    number(d.grad_b.norm), number(d.divergence)});
  }
  print_table(rows);
}

graph::Json optional_json(const std::optional<int64_t>& v) {
  return v ? graph::Json(*v) : graph::Json(nullptr);
}

// NaN as null (JSON has no NaN).
graph::Json number_json(double v) {
  return std::isfinite(v) ? graph::Json(v) : graph::Json();
}

graph::Json moments_json(const train::TensorMoments& m) {
  return {
      {"mean", number_json(m.mean)}, {"std", number_json(m.std)}, {"norm", number_json(m.norm)}};
}

graph::Json diff_json(const std::string& path_a, const std::string& path_b,
                      const graph::ProjectDiff& diff, const train::ModelDiff& m) {
  graph::Json differences = graph::Json::array();
  for (const graph::NodeDiff* d : diff.differences()) {
    graph::Json changes = graph::Json::array();
    for (const graph::FieldChange& c : d->changes)
      changes.push_back({{"field", c.field}, {"a", c.a}, {"b", c.b}});
    differences.push_back({{"kind", graph::diff_kind_name(d->kind)},
                           {"path_a", d->path_a},
                           {"path_b", d->path_b},
                           {"type_a", d->type_a},
                           {"type_b", d->type_b},
                           {"changes", changes},
                           {"parameters_a", optional_json(d->parameters_a)},
                           {"parameters_b", optional_json(d->parameters_b)}});
  }
  graph::Json modules = graph::Json::array();
  for (const train::ModuleDiff& d : m.modules) {
    modules.push_back({{"a", d.a},
                       {"b", d.b},
                       {"path_a", d.path_a},
                       {"path_b", d.path_b},
                       {"output_a", moments_json(d.output_a)},
                       {"output_b", moments_json(d.output_b)},
                       {"grad_a", moments_json(d.grad_a)},
                       {"grad_b", moments_json(d.grad_b)},
                       {"output_cosine", number_json(d.output_cosine)},
                       {"weight_change", number_json(d.weight_change)},
                       {"divergence", number_json(d.divergence)}});
  }
  return {{"a", path_a},
          {"b", path_b},
          {"differences", differences},
          {"batch", m.batch},
          {"data", m.data},
          {"weights_a", m.weights_a},
          {"weights_b", m.weights_b},
          {"loss_a", number_json(m.loss_a)},
          {"loss_b", number_json(m.loss_b)},
          {"modules", modules},
          {"error", m.error}};
}

int run_diff(const Options& o) {
  const std::string path_a = o.positional(0), path_b = o.positional(1);
  const graph::Project a = graph::load_project(path_a);
  const graph::Project b = graph::load_project(path_b);
  std::optional<nn::StateDict> weights_a, weights_b;
  if (o.has("weights-a")) weights_a = serialize::load_state_dict_file(o.text("weights-a"));
  if (o.has("weights-b")) weights_b = serialize::load_state_dict_file(o.text("weights-b"));
  const int64_t batch =
      o.has("batch") ? o.integer("batch", 1, int64_t{1} << 40) : a.training.batch_size;

  const graph::ProjectDiff diff = graph::diff_projects(a, b);
  auto folder = [](const std::string& path) {
    return std::filesystem::path(path).parent_path().string();
  };
  const train::ModelDiff m = train::diff_models(
      {a, weights_a ? &*weights_a : nullptr, o.text("weights-a"), folder(path_a)},
      {b, weights_b ? &*weights_b : nullptr, o.text("weights-b"), folder(path_b)}, diff, batch);

  if (o.flag("json")) {
    std::cout << diff_json(path_a, path_b, diff, m).dump(1) << "\n";
    return 0;
  }
  std::cout << "A: " << path_a << " (" << a.graph.nodes.size() << " nodes)  B: " << path_b << " ("
            << b.graph.nodes.size() << " nodes)\n\n";
  print_differences(diff);
  print_modules(m);
  return 0;
}

}  // namespace

Command diff_command() {
  return {"diff",
          "compare two projects' models: the nodes that differ, then both models on one batch",
          {{"A", "the project to compare from (.nns); its data and loss are used"},
           {"B", "the project to compare with (.nns)"}},
          {{"weights-a", "FILE", "",
            "A's weights (.pt, .pth or .safetensors); without it, those training starts from"},
           {"weights-b", "FILE", "", "B's weights; without it, those training starts from"},
           {"batch", "N", "", "compare on A's first N training samples (default: A's batch size)"},
           {"json", "", "", "print the comparison as one JSON object"}},
          run_diff};
}

}  // namespace nns::cli
