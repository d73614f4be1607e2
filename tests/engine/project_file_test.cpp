// SPDX-License-Identifier: GPL-3.0-or-later
// The project file (.nns): round trips, stable output, fields of newer versions kept, newer
// major versions refused, errors with the JSON path, atomic save, a setting written only when
// it is not the default; the example projects in resources/examples; and
// docs/project-format.md, whose node type reference is generated from the registry (run with
// NNS_UPDATE_DOCS=1 to rewrite it) and whose every example parses.
// NNS_UPDATE_EXAMPLES=1 rewrites the example projects in the saver's layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/graph/builder.h"
#include "engine/graph/project.h"
#include "engine/ops/ops.h"
#include "graph_test_models.h"

namespace nns::test {
namespace {

using graph::parse_project;
using graph::project_to_json;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string parse_error(const std::string& text) {
  try {
    parse_project(text, "p.nns");
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(no error)";
}

// A minimal valid file with `fields` added at the top level.
std::string file_with(const std::string& fields) {
  return R"({"format": "nnstudio-project", "version": 1, "graph": {"nodes": [
    {"id": 1, "type": "Input", "name": "x", "options": {"shape": [2]}},
    {"id": 2, "type": "Output", "name": "y"}],
    "edges": [{"from": {"node": 1, "port": "out"}, "to": {"node": 2, "port": "in"}}]})" +
         fields + "}";
}

Project full_project() {
  Project p = dynamicnet_project("lrelu");
  p.probes.push_back({p.graph.find_by_name("final")->id, true, false, true, 5});
  p.dataset.name = "moons";
  p.dataset.options = {{"samples", 500}, {"noise", 0.1}};
  p.dataset.seed = 3;
  p.training.optimizer = "Adam";
  p.training.optimizer_options = {{"lr", 0.001}};
  p.training.scheduler = "StepLR";
  p.training.scheduler_options = {{"step_size", 10}};
  p.training.clip_grad_norm = 1.5;
  p.graph.at(2).x = 12.5;
  p.graph.at(3).collapsed = true;
  return p;
}

TEST(ProjectFileTest, RoundTripIsExactAndStable) {
  const Project p = full_project();
  const std::string text = project_to_json(p);
  const Project back = parse_project(text);
  EXPECT_EQ(back, p);
  EXPECT_EQ(project_to_json(back), text);
  // Short lists and ports stay on one line.
  EXPECT_NE(text.find(R"("from": {"node": 1, "port": "out"})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("members": [2, 3, 4])"), std::string::npos) << text;
}

TEST(ProjectFileTest, UnknownFieldsAreKeptAndWrittenBack) {
  const std::string text = R"({"format": "nnstudio-project", "version": 1, "name": "M",
    "graph": {"nodes": [{"id": 1, "type": "Input", "name": "x", "color": "red"}], "edges": []},
    "probes": [{"node": 1, "histogram_bins": 64}],
    "dataset": {"name": "xor", "augment": true},
    "training": {"epochs": 3, "amp": false},
    "layout": {"zoom": 1.5}})";
  const Project p = parse_project(text);
  EXPECT_EQ(p.graph.at(1).extra.dump(), R"({"color":"red"})");
  EXPECT_EQ(p.probes[0].extra.dump(), R"({"histogram_bins":64})");
  EXPECT_EQ(p.dataset.extra.dump(), R"({"augment":true})");
  EXPECT_EQ(p.training.extra.dump(), R"({"amp":false})");
  EXPECT_EQ(p.extra.dump(), R"({"layout":{"zoom":1.5}})");
  const std::string written = project_to_json(p);
  EXPECT_NE(written.find(R"("color": "red")"), std::string::npos);
  EXPECT_NE(written.find(R"("layout": {"zoom": 1.5})"), std::string::npos);
  EXPECT_EQ(parse_project(written), p);
}

// training.cuda_graphs (issue 41): on unless a file says false, which is all it writes.
TEST(ProjectFileTest, CudaGraphsAreOnUnlessTheFileTurnsThemOff) {
  EXPECT_TRUE(parse_project(file_with("")).training.cuda_graphs);
  EXPECT_TRUE(parse_project(file_with(R"(, "training": {"device": "cuda"})")).training.cuda_graphs);
  Project p = full_project();
  EXPECT_EQ(project_to_json(p).find("cuda_graphs"), std::string::npos);
  p.training.cuda_graphs = false;
  const std::string text = project_to_json(p);
  EXPECT_NE(text.find("\"cuda_graphs\": false"), std::string::npos) << text;
  EXPECT_EQ(parse_project(text), p);
  EXPECT_TRUE(parse_project(text).training.extra.empty());
  EXPECT_EQ(parse_error(file_with(R"(, "training": {"cuda_graphs": "off"})")),
            "p.nns: training.cuda_graphs: expected true or false, got \"off\"");
}

TEST(ProjectFileTest, NewerMajorVersionIsRefused) {
  EXPECT_EQ(parse_error(R"({"format": "nnstudio-project", "version": 2, "graph": {"nodes": []}})"),
            "p.nns: project format version 2 is newer than this NN Studio reads (up to version "
            "1); open it with a newer NN Studio");
}

// Found by fuzz.run (tests/fuzz/regressions/project/number_overflow): a number beyond a
// double's range escaped as nlohmann's own exception instead of a ValueError.
TEST(ProjectFileTest, NumberTooLargeIsAValueError) {
  EXPECT_EQ(parse_error("8E888888888873"),
            "p.nns: not valid JSON: number overflow parsing '8E888888888873'");
}

TEST(ProjectFileTest, ErrorsNameTheJsonPath) {
  EXPECT_EQ(parse_error("{\"format\": \"nnstudio-project\",\n \"version\": 1,,}"),
            "p.nns: not valid JSON: parse error at line 2, column 15: syntax error while parsing "
            "object key - unexpected ','; expected string literal");
  EXPECT_EQ(parse_error(R"({"version": 1})"),
            "p.nns: format: not an NN Studio project (expected \"format\": \"nnstudio-project\")");
  EXPECT_EQ(parse_error(R"([1, 2])"), "p.nns: top level: expected an object, got a list");
  EXPECT_EQ(parse_error(R"({"format": "nnstudio-project"})"), "p.nns: version: missing (required)");
  EXPECT_EQ(parse_error(R"({"format": "nnstudio-project", "version": 1,
      "graph": {"nodes": [{"id": 1, "type": "Input", "name": "x", "x": "left"}]}})"),
            "p.nns: graph.nodes[0].x: expected a number, got \"left\"");
  EXPECT_EQ(parse_error(R"({"format": "nnstudio-project", "version": 1,
      "graph": {"nodes": [{"id": 1, "type": "Input", "name": "x"},
                          {"id": 1, "type": "Output", "name": "y"}]}})"),
            "p.nns: graph.nodes[1].id: id 1 is already used by node 'x'");
  EXPECT_EQ(parse_error(R"({"format": "nnstudio-project", "version": 1,
      "graph": {"nodes": [{"id": 1, "type": "Input", "name": "x", "options": [2]}]}})"),
            "p.nns: graph.nodes[0].options: expected an object, got a list");
  EXPECT_EQ(parse_error(file_with(R"(, "probes": [{"node": 9}])")),
            "p.nns: probes[0].node: no node of the graph has id 9");
  EXPECT_EQ(parse_error(file_with(R"(, "training": {"batch_size": 0})")),
            "p.nns: training.batch_size: expected an integer >= 1, got 0");
  EXPECT_EQ(parse_error(file_with(R"(, "blocks": [{"name": "B", "graph": {"nodes": [],
      "edges": [{"from": {"node": 4, "port": "out"}, "to": {"node": 1, "port": "in"}}]}}])")),
            "p.nns: blocks[0].graph.edges[0].from.node: no node has id 4");
  EXPECT_EQ(parse_error(R"({"format": "nnstudio-project", "version": 1, "graph": {"nodes": [
      {"id": 1, "type": "Sequential", "name": "s", "members": [2]},
      {"id": 2, "type": "ModuleList", "name": "l", "members": [2]}]}})"),
            "p.nns: graph.nodes[0].members[0]: node 2 is a member of two groups");
}

TEST(ProjectFileTest, SaveIsAtomicAndLoadsBack) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("nns_project_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.nns").string();
  const Project p = full_project();
  graph::save_project(p, path);
  graph::save_project(p, path);  // over an existing file
  EXPECT_EQ(graph::load_project(path), p);
  EXPECT_EQ(read_text(path), project_to_json(p));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);  // no temporaries
  try {
    graph::load_project((dir / "missing.nns").string());
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot open project file '" + (dir / "missing.nns").string() + "'");
  }
  std::ofstream(dir / "bad.nns") << "{\"format\": \"nnstudio-project\", \"version\": \"one\"}";
  try {
    graph::load_project((dir / "bad.nns").string());
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "bad.nns").string() + ": version: expected an integer, got \"one\"");
  }
  std::filesystem::remove_all(dir);
}

// ---- Example projects ---------------------------------------------------------------------------

TEST(ProjectFileTest, ExampleProjectsParseBuildAndRun) {
  const std::string dir = std::string(NNS_SOURCE_DIR) + "/resources/examples/";
  struct Example {
    const char* file;
    Shape input;
    Shape output;
    const char* first_parameter;
  };
  for (const Example& e : {Example{"spirals.nns", {8, 2}, {8, 3}, "fc1.weight"},
                           Example{"digits.nns", {8, 1, 16, 16}, {8, 10}, "features.0.weight"},
                           Example{"residual_mlp.nns", {8, 2}, {8, 2}, "fc_in.weight"},
                           Example{"dynamic_net.nns", {8, 2}, {8, 3}, "embed.weight"}}) {
    SCOPED_TRACE(e.file);
    const Project p = graph::load_project(dir + e.file);
    if (std::getenv("NNS_UPDATE_EXAMPLES")) graph::save_project(p, dir + e.file);
    EXPECT_EQ(read_text(dir + e.file), project_to_json(p))
        << "not in the saver's own layout: rerun this test with NNS_UPDATE_EXAMPLES=1";
    const graph::Analysis a = graph::analyze(p);
    EXPECT_TRUE(a.ok()) << (a.problems.empty() ? "" : a.problems[0].message);
    auto model = graph::build_model(p);
    EXPECT_EQ(model->named_parameters().front().first, e.first_parameter);
    const Tensor out = (*model)(randn(e.input));
    EXPECT_EQ(out.sizes(), e.output);
  }
}

// ---- The format document ---------------------------------------------------------------------

const char* kBegin = "<!-- node types: generated by tests/engine/project_file_test.cpp -->";
const char* kEnd = "<!-- end of node types -->";

std::string option_text(const graph::OptionSpec& o) {
  std::string s = "`" + o.name + "` (default `" + o.default_value.dump() + "`";
  if (!o.choices.empty()) {
    s += "; one of";
    for (const std::string& c : o.choices) s += " `" + c + "`";
  }
  return s + "): " + o.help;
}

std::string node_type_section(const graph::NodeType& t, NodeId id);

// The reference of every node type by category: ports, options, and an example node.
std::string node_type_reference() {
  // The built-in types: plugins document their own (a test that loaded one may run first).
  std::vector<std::string> categories;
  for (const graph::NodeType& t : graph::node_types()) {
    if (!t.plugin.empty()) continue;
    if (std::find(categories.begin(), categories.end(), t.category) == categories.end())
      categories.push_back(t.category);
  }
  std::string out;
  NodeId id = 1;
  for (const std::string& category : categories) {
    out += "\n### " + category + "\n";
    for (const graph::NodeType& t : graph::node_types()) {
      if (t.category == category && t.plugin.empty()) out += node_type_section(t, id++);
    }
  }
  return out;
}

std::string node_type_section(const graph::NodeType& t, NodeId id) {
  std::string out;
  out += "\n#### " + t.name + "\n\n" + t.description + ".\n\n";
  std::string inputs, outputs;
  for (const std::string& p : t.input_ports(t.default_options()))
    inputs += (inputs.empty() ? "`" : ", `") + p + "`";
  for (const graph::PortSpec& p : t.outputs)
    outputs += (outputs.empty() ? "`" : ", `") + p.name + "`";
  out += "Inputs: " + (inputs.empty() ? std::string("none") : inputs) +
         (t.variadic ? " (one per `inputs`)" : "") +
         ". Outputs: " + (outputs.empty() ? std::string("none") : outputs) + ".\n";
  if (!t.options.empty()) {
    out += "\n";
    for (const graph::OptionSpec& o : t.options) out += "- " + option_text(o) + "\n";
  }
  graph::Graph g;
  graph::Node n;
  n.id = id;
  n.type = t.name;
  n.name = t.name == "F.relu" ? "relu" : "node";
  n.options = t.default_options();
  g.insert_node(n);
  out += "\n```json\n" + graph::graph_to_json(g)["nodes"][0].dump() + "\n```\n";
  return out;
}

TEST(ProjectFileTest, FormatDocumentIsUpToDate) {
  const std::string path = std::string(NNS_SOURCE_DIR) + "/docs/project-format.md";
  std::string doc = read_text(path);
  const size_t begin = doc.find(kBegin), end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << path << " lacks the line " << kBegin;
  ASSERT_NE(end, std::string::npos) << path << " lacks the line " << kEnd;
  const std::string generated = node_type_reference() + "\n";
  const size_t from = begin + std::string(kBegin).size() + 1;
  if (std::getenv("NNS_UPDATE_DOCS")) {
    doc.replace(from, end - from, generated);
    std::ofstream(path, std::ios::binary) << doc;
  }
  EXPECT_EQ(doc.substr(from, doc.find(kEnd) - from), generated)
      << "docs/project-format.md is out of date: rerun this test with NNS_UPDATE_DOCS=1";
}

TEST(ProjectFileTest, EveryExampleInTheFormatDocumentParses) {
  const std::string doc = read_text(std::string(NNS_SOURCE_DIR) + "/docs/project-format.md");
  size_t pos = 0, count = 0;
  while ((pos = doc.find("```json\n", pos)) != std::string::npos) {
    pos += 8;
    const std::string text = doc.substr(pos, doc.find("```", pos) - pos);
    SCOPED_TRACE(text);
    const Json json = Json::parse(text);
    if (json.contains("format")) {
      const Project p = parse_project(text, "docs/project-format.md");
      EXPECT_TRUE(graph::analyze(p).ok());
    } else {
      // A group's members are other nodes, which a single node's example does not hold.
      Json node = json;
      node.erase("members");
      const graph::Graph g = graph::graph_from_json(Json{{"nodes", {node}}}, "doc");
      const graph::Node& n = g.nodes[0];
      if (const graph::NodeType* t = graph::find_node_type(n.type))
        EXPECT_NO_THROW(t->checked_options(n.options));
      else
        EXPECT_TRUE(graph::is_container_type(n.type)) << n.type;
    }
    ++count;
  }
  EXPECT_GT(count, graph::node_types().size());
}

}  // namespace
}  // namespace nns::test
