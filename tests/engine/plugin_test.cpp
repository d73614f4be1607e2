// SPDX-License-Identifier: GPL-3.0-or-later
// Plugins (engine/plugin): the example plugins load from the build tree and match their
// PyTorch twins (tests/fixtures/areas/plugins.py) output for output and gradient for gradient,
// broken plugin files are reported one line each while the rest load, and projects record
// the plugin of each plugin type, open without it, save back unchanged and refuse to build.
// Also the three ops the plugins brought into the engine: rsqrt, sin and cos.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/graph/builder.h"
#include "engine/graph/node_types.h"
#include "engine/graph/project.h"
#include "engine/ops/ops.h"
#include "engine/plugin/loader.h"
#include "support/fixtures.h"
#include "support/gradcheck.h"

namespace nns {
namespace {

namespace fs = std::filesystem;
using test::Fixtures;

const plugin::PluginReport& load_examples() {
  return plugin::load_plugins({fs::path(NNS_PLUGIN_BUILD_DIR)});
}

const plugin::LoadedPlugin* loaded(const plugin::PluginReport& report, const std::string& name) {
  for (const plugin::LoadedPlugin& p : report.loaded) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// The failure reported for a file of the test plugins' folder.
std::string failure(const plugin::PluginReport& report, const std::string& file_name) {
  for (const plugin::PluginFailure& f : report.failed) {
    if (fs::path(f.file).filename() == file_name) return f.reason;
  }
  return "";
}

// A module of a plugin type, made from its node type with the fixture's state dict loaded.
nn::ModulePtr plugin_module(const std::string& type, const graph::Json& options,
                            const std::string& fixture_case) {
  const graph::NodeType& t = graph::node_type(type);
  nn::ModulePtr m = t.make_module(t.checked_options(options));
  const Fixtures& fx = Fixtures::load("plugins");
  nn::StateDict sd;
  for (const std::string& name : fx.tensor_names(fixture_case + ".sd."))
    sd.insert(name.substr(fixture_case.size() + 4), fx.tensor(name).to_tensor());
  m->load_state_dict(sd);
  return m;
}

// Forward and backward of the module on the fixture's input against PyTorch's.
void expect_matches_torch(nn::Module& m, const std::string& name, double rtol) {
  const Fixtures& fx = Fixtures::load("plugins");
  SCOPED_TRACE(name);
  EXPECT_EQ(m.repr(), fx.string(name + ".repr"));
  Tensor x = fx.tensor(name + ".x").to_tensor().requires_grad_(true);
  Tensor out = m(x);
  EXPECT_TRUE(test::all_close(out, fx.tensor(name + ".out"), rtol, 1e-6));
  out.backward(fx.tensor(name + ".grad_out").to_tensor());
  EXPECT_TRUE(test::all_close(x.grad(), fx.tensor(name + ".grad.x"), rtol, 1e-6));
  for (const auto& [key, parameter] : m.named_parameters()) {
    EXPECT_TRUE(test::all_close(parameter.grad(), fx.tensor(name + ".grad." + key), rtol, 1e-6))
        << key;
  }
}

TEST(Plugins, TheExamplePluginsLoadFromTheBuildTree) {
  // The programs' own search finds the build's plugins/ folder with no set-up.
  const plugin::PluginReport& report = plugin::load_installed_plugins();
  const plugin::LoadedPlugin* rms = loaded(report, "rmsnorm");
  const plugin::LoadedPlugin* ff = loaded(report, "fourier_features");
  ASSERT_TRUE(rms && ff) << plugin::format_report(report);
  EXPECT_EQ(rms->version, "1.0.0");
  EXPECT_EQ(rms->types, std::vector<std::string>{"RMSNorm"});
  EXPECT_EQ(ff->types, std::vector<std::string>{"FourierFeatures"});
  EXPECT_EQ(fs::path(rms->file).filename(), "rmsnorm.so");
  const graph::NodeType* t = graph::find_node_type("RMSNorm");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->plugin, "rmsnorm");
  EXPECT_EQ(t->plugin_version, "1.0.0");
  EXPECT_EQ(t->kind, graph::NodeKind::Module);
  // Loading the same folder again loads nothing twice and reports nothing.
  const size_t failures = report.failed.size();
  load_examples();
  EXPECT_EQ(plugin::plugin_report().failed.size(), failures);
  EXPECT_EQ(plugin::plugin_report().loaded.size(), report.loaded.size());
}

TEST(Plugins, BrokenPluginFilesAreReportedAndTheRestLoad) {
  load_examples();
  const plugin::PluginReport& report = plugin::load_plugins({fs::path(NNS_TEST_PLUGIN_DIR)});
  EXPECT_NE(failure(report, "not_a_library.so").find("cannot be loaded as a shared library"),
            std::string::npos)
      << failure(report, "not_a_library.so");
  EXPECT_NE(failure(report, "no_entry_point.so")
                .find("not an NN Studio plugin: it has no entry point nns_plugin_v1"),
            std::string::npos);
  EXPECT_NE(failure(report, "wrong_abi.so")
                .find("built for plugin ABI version 999; this NN "
                      "Studio loads version 1"),
            std::string::npos)
      << failure(report, "wrong_abi.so");
  EXPECT_NE(failure(report, "throws_on_register.so")
                .find("plugin 'throws': registering its types failed: cannot read its table"),
            std::string::npos);
  EXPECT_EQ(graph::find_node_type("HalfRegistered"), nullptr);
  EXPECT_NE(failure(report, "duplicate_type.so")
                .find("node type 'Linear' is already registered by a built-in type"),
            std::string::npos)
      << failure(report, "duplicate_type.so");
  EXPECT_EQ(graph::find_node_type("NotShadowed"), nullptr);  // all or none
  EXPECT_EQ(graph::find_node_type("Linear")->plugin, "");
  // The good ones load beside the broken ones.
  ASSERT_NE(loaded(report, "faulty"), nullptr);
  EXPECT_NE(loaded(report, "rmsnorm"), nullptr);
  EXPECT_EQ(report.failed.size(), 5u) << plugin::format_report(report);

  // A second copy of a loaded plugin, in another folder, is skipped with a line.
  const fs::path dir = fs::temp_directory_path() / "nns_plugin_copy_test";
  fs::create_directories(dir);
  fs::copy_file(fs::path(NNS_PLUGIN_BUILD_DIR) / "rmsnorm.so", dir / "rmsnorm_copy.so",
                fs::copy_options::overwrite_existing);
  plugin::load_plugins({dir});
  EXPECT_NE(failure(plugin::plugin_report(), "rmsnorm_copy.so")
                .find("plugin 'rmsnorm' 1.0.0 is already loaded from"),
            std::string::npos);
  fs::remove_all(dir);
  const std::string text = plugin::format_report(plugin::plugin_report());
  EXPECT_NE(text.find("rmsnorm 1.0.0"), std::string::npos) << text;
  EXPECT_NE(text.find("Failed:"), std::string::npos) << text;
}

TEST(Plugins, RegisteringATakenNameOrAnIncompleteTypeIsRefused) {
  graph::NodeType t = graph::module_type(
      "ReLU", "Test", "", {}, [](const graph::Json&) { return nullptr; }, graph::same_shape);
  t.plugin = "mine";
  EXPECT_THROW(graph::register_node_types({t}), ValueError);
  t.name = "Sequential";
  EXPECT_THROW(graph::register_node_types({t}), ValueError);
  t.name = "Twice";
  EXPECT_THROW(graph::register_node_types({t, t}), ValueError);
  EXPECT_EQ(graph::find_node_type("Twice"), nullptr);
  t.make_module = nullptr;
  try {
    graph::register_node_types({t});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("plugin 'mine': module type 'Twice' has no make_module"),
              std::string::npos)
        << e.what();
  }
}

TEST(Plugins, RMSNormMatchesTorch) {
  load_examples();
  auto affine = plugin_module("RMSNorm", {{"normalized_shape", {4, 5}}}, "rms_affine");
  expect_matches_torch(*affine, "rms_affine", 1e-5);
  auto eps = plugin_module(
      "RMSNorm", {{"normalized_shape", {5}}, {"eps", 1e-3}, {"elementwise_affine", false}},
      "rms_eps");
  expect_matches_torch(*eps, "rms_eps", 1e-5);
  auto f64 = plugin_module("RMSNorm", {{"normalized_shape", {5}}}, "rms_f64");
  f64->to(kFloat64);
  expect_matches_torch(*f64, "rms_f64", 1e-12);
  // eps must be a non-negative number or null.
  EXPECT_THROW(graph::node_type("RMSNorm").checked_options({{"eps", "tiny"}}), ValueError);
  EXPECT_THROW(graph::node_type("RMSNorm").checked_options({{"eps", -1}}), ValueError);
}

TEST(Plugins, FourierFeaturesMatchesTorch) {
  load_examples();
  auto ff = plugin_module("FourierFeatures",
                          {{"in_features", 3}, {"out_features", 8}, {"sigma", 2.0}}, "ff");
  expect_matches_torch(*ff, "ff", 1e-4);
  // B is a persistent buffer, not a parameter.
  EXPECT_TRUE(ff->named_parameters().empty());
  EXPECT_EQ(ff->state_dict().keys(), std::vector<std::string>{"B"});
  EXPECT_THROW(graph::node_type("FourierFeatures").checked_options({{"out_features", 1}}),
               ValueError);
}

TEST(Plugins, GradientsMatchFiniteDifferences) {
  load_examples();
  const graph::NodeType& rms = graph::node_type("RMSNorm");
  nn::ModulePtr r = rms.make_module(rms.checked_options({{"normalized_shape", {3}}}));
  r->to(kFloat64);
  EXPECT_TRUE(testing::gradcheck([&](const std::vector<Tensor>& x) { return (*r)(x[0]); },
                                 {randn({2, 3}, kFloat64)}));
  const graph::NodeType& ft = graph::node_type("FourierFeatures");
  nn::ModulePtr f =
      ft.make_module(ft.checked_options({{"in_features", 2}, {"out_features", 4}, {"sigma", 0.3}}));
  f->to(kFloat64);
  EXPECT_TRUE(testing::gradcheck([&](const std::vector<Tensor>& x) { return (*f)(x[0]); },
                                 {randn({3, 2}, kFloat64)}));
}

TEST(Plugins, TheNewOpsMatchTorchAndFiniteDifferences) {
  const Fixtures& fx = Fixtures::load("plugins");
  for (const std::string op : {"rsqrt", "sin", "cos"}) {
    for (const std::string dtype : {"f32", "f64"}) {
      const std::string name = op + "." + dtype;
      SCOPED_TRACE(name);
      auto fn = [&op](const Tensor& x) {
        return op == "rsqrt" ? x.rsqrt() : op == "sin" ? x.sin() : x.cos();
      };
      Tensor x = fx.tensor(name + ".in0").to_tensor().requires_grad_(true);
      Tensor out = fn(x);
      EXPECT_EQ(out.grad_fn()->name(), fx.string(name + ".grad_fn"));
      EXPECT_TRUE(test::all_close(out, fx.tensor(name + ".out"), dtype == "f32" ? 1e-6 : 1e-14));
      out.backward(fx.tensor(name + ".grad_out").to_tensor());
      EXPECT_TRUE(
          test::all_close(x.grad(), fx.tensor(name + ".grad0"), dtype == "f32" ? 1e-5 : 1e-13));
    }
    auto fn = [&op](const std::vector<Tensor>& x) {
      return op == "rsqrt" ? x[0].rsqrt() : op == "sin" ? x[0].sin() : x[0].cos();
    };
    EXPECT_TRUE(testing::gradcheck(fn, {rand({4, 3}, kFloat64) + 0.2})) << op;
  }
}

graph::Project plugin_net() {
  return graph::load_project(std::string(NNS_SOURCE_DIR) + "/tests/cli/plugins_net.nns");
}

TEST(Plugins, AModelWithPluginTypesHasPyTorchsStateDictKeysAndOutputs) {
  load_examples();
  const graph::Project p = plugin_net();
  ASSERT_TRUE(graph::analyze(p).ok());
  auto model = graph::build_model(p);
  const Fixtures& fx = Fixtures::load("plugins");
  std::string keys;
  for (const std::string& k : model->state_dict().keys()) keys += (keys.empty() ? "" : "\n") + k;
  EXPECT_EQ(keys, fx.string("net.sd_keys"));
  nn::StateDict sd;
  for (const std::string& name : fx.tensor_names("net.sd."))
    sd.insert(name.substr(7), fx.tensor(name).to_tensor());
  model->load_state_dict(sd);
  const Tensor out = (*model)(fx.tensor("net.x").to_tensor());
  EXPECT_TRUE(test::all_close(out, fx.tensor("net.out"), 1e-4, 1e-6));
}

TEST(Plugins, AProjectRecordsItsPluginTypesAndReopensEqual) {
  load_examples();
  graph::Project p = plugin_net();
  p.plugin_types.clear();  // a hand-written file need not record them
  ASSERT_TRUE(graph::analyze(p).ok());
  const std::string text = graph::project_to_json(p);
  EXPECT_NE(text.find("\"plugin_types\": {\n    \"FourierFeatures\": {\"plugin\": "
                      "\"fourier_features\", \"version\": \"1.0.0\"}"),
            std::string::npos)
      << text;
  const graph::Project reopened = graph::parse_project(text);
  p.plugin_types = graph::plugin_types_of(p);
  EXPECT_EQ(reopened, p);
  EXPECT_EQ(reopened.plugin_types.at("RMSNorm"), (graph::PluginRef{"rmsnorm", "1.0.0"}));
  EXPECT_EQ(graph::project_to_json(reopened), text);
}

// A project whose plugin is not installed (no plugin provides FancyNorm in any process).
const char* kMissingPluginProject = R"({
  "format": "nnstudio-project", "version": 1, "name": "Fancy",
  "graph": {"nodes": [{"id": 1, "type": "Input", "name": "x", "options": {"shape": [4]}},
                      {"id": 2, "type": "FancyNorm", "name": "norm",
                       "options": {"groups": 2, "eps": null}},
                      {"id": 3, "type": "Output", "name": "y"}],
            "edges": [{"from": {"node": 1, "port": "out"}, "to": {"node": 2, "port": "in"}},
                      {"from": {"node": 2, "port": "out"}, "to": {"node": 3, "port": "in"}}],
            "next_id": 4},
  "plugin_types": {"FancyNorm": {"plugin": "fancy", "version": "2.1.0"}}})";

TEST(Plugins, AProjectWhosePluginIsMissingOpensSavesBackUnchangedAndRefusesToBuild) {
  const graph::Project p = graph::parse_project(kMissingPluginProject);
  const graph::Analysis a = graph::analyze(p);
  ASSERT_FALSE(a.ok());
  bool named = false;
  for (const graph::Problem& problem : a.problems) {
    if (problem.node == 2 &&
        problem.message.find("plugin 'fancy' 2.1.0 is not installed") != std::string::npos)
      named = true;
  }
  EXPECT_TRUE(named) << a.problems.front().message;
  // Its wires keep their ports: the node shows the ports its edges use.
  const graph::NodePorts ports = graph::project_node_ports(p, *p.graph.find(2));
  EXPECT_EQ(ports.inputs, std::vector<std::string>{"in"});
  EXPECT_EQ(ports.outputs, std::vector<std::string>{"out"});
  // Saved, it keeps the node's options and the plugin it needs.
  const std::string text = graph::project_to_json(p);
  EXPECT_EQ(graph::parse_project(text), p);
  EXPECT_NE(text.find("\"FancyNorm\": {\"plugin\": \"fancy\", \"version\": \"2.1.0\"}"),
            std::string::npos);
  try {
    graph::build_model(p);
    FAIL() << "expected a GraphError";
  } catch (const graph::GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("plugin 'fancy' 2.1.0 is not installed"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nns
