// SPDX-License-Identifier: GPL-3.0-or-later
// The ONNX import (engine/onnx/onnx_import.h) on the files torch.onnx.export wrote
// (tests/fixtures/onnx/make_onnx_fixtures.py) and on hand-made hostile ones: the names, groups
// and weights it makes, and what it refuses. That the imported model computes what torch
// computed is torch.onnx_import's (tests/torch/onnx_import.py).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/graph/builder.h"
#include "engine/onnx/onnx_export.h"
#include "engine/onnx/onnx_import.h"
#include "engine/onnx/tensor_proto.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return std::string(NNS_SOURCE_DIR) + "/tests/fixtures/onnx/" + name;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The ValueError's message of importing `bytes`; empty when it imports.
std::string import_error(const std::string& bytes) {
  try {
    onnx::import_model(bytes, "m.onnx");
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

TEST(OnnxImport, ASequentialKeepsItsIndicesAndItsWeights) {
  const graph::ImportedProject m = onnx::import_model_file(fixture("cnn.onnx"));
  // torch exported an nn.Sequential: its modules are 0, 1, ..., the state-dict keys "0.weight".
  ASSERT_TRUE(m.project.graph.find_by_name("x"));
  const std::vector<std::string> keys = m.weights.keys();
  EXPECT_EQ(keys.front(), "0.weight");
  EXPECT_NE(std::find(keys.begin(), keys.end(), "1.running_var"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "6.bias"), keys.end());
  // The weights load strictly into the model the project builds, and equal the file's.
  auto model = graph::build_model(m.project);
  serialize::load_into(*model, m.weights, /*strict=*/true);
  ::onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(read_bytes(fixture("cnn.onnx"))));
  for (const auto& init : proto.graph().initializer()) {
    const Tensor* w = m.weights.find(init.name());
    ASSERT_TRUE(w) << init.name();
    EXPECT_EQ(w->contiguous().to_vector<float>(),
              onnx::from_tensor_proto(init, "test").contiguous().to_vector<float>())
        << init.name();
  }
}

TEST(OnnxImport, NamesComeFromInitializersAndScopes) {
  const graph::ImportedProject m = onnx::import_model_file(fixture("residual.onnx"));
  const graph::Graph& g = m.project.graph;
  const graph::Node* stem = g.find_by_name("stem");
  const graph::Node* layer1 = g.find_by_name("layer1");
  const graph::Node* head = g.find_by_name("head");
  ASSERT_TRUE(stem && layer1 && head);
  EXPECT_EQ(stem->type, "Sequential");
  EXPECT_EQ(head->type, "Sequential");
  // The residual blocks are not chains (an Add joins their input): each is a ModuleDict.
  EXPECT_EQ(layer1->type, "ModuleDict");
  ASSERT_EQ(layer1->members.size(), 2u);
  const graph::Node& block0 = g.at(layer1->members[0]);
  EXPECT_EQ(block0.name, "0");
  std::vector<std::string> names;
  for (graph::NodeId id : block0.members) names.push_back(g.at(id).name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1", "bn1", "relu", "conv2", "bn2"}));
  // The block's second ReLU call (torch's scope relu_1) is a Ref to its relu.
  size_t refs = 0;
  for (const graph::Node& n : g.nodes) refs += n.type == "Ref";
  EXPECT_EQ(refs, 2u);
  const std::vector<std::string> keys = m.weights.keys();
  EXPECT_NE(std::find(keys.begin(), keys.end(), "layer1.1.bn2.running_mean"), keys.end());
  // 1x16x16 images into 10 classes: the digits data set, at that size.
  EXPECT_EQ(m.project.dataset.name, "digits");
  EXPECT_EQ(m.project.dataset.options.at("size"), 16);
}

TEST(OnnxImport, DecompositionsBecomeOneNode) {
  const graph::ImportedProject m = onnx::import_model_file(fixture("layernorm.onnx"));
  std::vector<std::string> types;
  for (const graph::Node& n : m.project.graph.nodes) types.push_back(n.type);
  EXPECT_NE(std::find(types.begin(), types.end(), "LayerNorm"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "GELU"), types.end());
  EXPECT_EQ(std::count(types.begin(), types.end(), "Add"), 0);
  EXPECT_EQ(std::count(types.begin(), types.end(), "Mul"), 0);
  const graph::Node* norm = m.project.graph.find_by_name("1");
  ASSERT_TRUE(norm);
  EXPECT_EQ(norm->options.at("eps"), 1e-5);  // the float32 constant read as PyTorch wrote it
}

TEST(OnnxImport, AnEmbeddingTakesInt64Indices) {
  const graph::ImportedProject m = onnx::import_model_file(fixture("tokens.onnx"));
  const graph::Node* x = m.project.graph.find_by_name("x");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->options.at("dtype"), "int64");
  const graph::Node* embed = m.project.graph.find_by_name("embed");
  ASSERT_TRUE(embed);
  EXPECT_EQ(embed->type, "Embedding");
  const graph::Node* proj = m.project.graph.find_by_name("proj");
  ASSERT_TRUE(proj);
  EXPECT_EQ(proj->type, "Linear");  // MatMul with a transposed weight + Add
}

TEST(OnnxImport, WritesTheProjectAndItsWeightsBesideIt) {
  const fs::path dir = fs::temp_directory_path() / "nns_onnx_import_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string project = (dir / "mlp.nns").string();
  graph::write_imported(onnx::import_model_file(fixture("mlp.onnx")), project);
  EXPECT_EQ(graph::weights_path_for(project), (dir / "mlp.safetensors").string());
  const graph::Project p = graph::load_project(project);
  const nn::StateDict w = serialize::load_state_dict_file(graph::weights_path_for(project));
  auto model = graph::build_model(p);
  EXPECT_NO_THROW(serialize::load_into(*model, w, /*strict=*/true));
  fs::remove_all(dir);
}

TEST(OnnxImport, RefusesWhatItCannotRead) {
  const std::string good = read_bytes(fixture("mlp.onnx"));
  EXPECT_NE(import_error("").find("not an ONNX model"), std::string::npos);
  EXPECT_NE(import_error("\x08\x07garbage\xff").find("not an ONNX model"), std::string::npos);
  EXPECT_NE(import_error(good.substr(0, good.size() / 2)).find("not an ONNX model"),
            std::string::npos);
  ::onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(good));
  // Each change below on a fresh copy, and the message that names it.
  auto changed = [&proto](const std::function<void(::onnx::ModelProto&)>& change) {
    ::onnx::ModelProto m = proto;
    change(m);
    return import_error(m.SerializeAsString());
  };
  EXPECT_NE(changed([](auto& m) {
              m.mutable_opset_import(0)->set_version(12);
            }).find("opset 12 is not supported (NN Studio reads and writes opsets 13 to 17)"),
            std::string::npos);
  EXPECT_NE(changed([](auto& m) {
              m.mutable_graph()->mutable_initializer(0)->add_dims(2);
            }).find("tensor '0.weight' has"),
            std::string::npos);
  const std::string unsupported = changed([](auto& m) {
    m.mutable_graph()->mutable_node(1)->set_op_type("Softplus");
    m.mutable_graph()->mutable_node(0)->set_op_type("Hardmax");
  });
  EXPECT_NE(unsupported.find("operators NN Studio has no node for"), std::string::npos);
  EXPECT_NE(unsupported.find("Softplus (1): /1/Relu"), std::string::npos) << unsupported;
  EXPECT_NE(unsupported.find("Hardmax (1): /0/Gemm"), std::string::npos) << unsupported;
  EXPECT_NE(changed([](auto& m) {
              m.mutable_graph()->mutable_node(0)->clear_input();
            }).find("lacks its input 1"),
            std::string::npos);
  EXPECT_NE(changed([](auto& m) {
              m.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
            }).find("reads 'nowhere', which no earlier node"),
            std::string::npos);
  // A name made up to ask for a Sequential of a billion Identity gaps is a ModuleDict.
  const std::string gaps =
      changed([](auto& m) { m.mutable_graph()->mutable_node(1)->set_name("/999999999/Relu"); });
  EXPECT_EQ(gaps, "");
}

TEST(OnnxImport, ReadsItsOwnExportBack) {
  const graph::Project p =
      graph::load_project(std::string(NNS_SOURCE_DIR) + "/resources/examples/digits.nns");
  const std::string bytes = onnx::export_model(p, nullptr, 17);
  const graph::ImportedProject m = onnx::import_model(bytes, "digits.onnx");
  auto original = graph::build_model(p);
  std::vector<std::string> want;
  for (const std::string& k : original->state_dict().keys()) want.push_back(k);
  EXPECT_EQ(m.weights.keys(), want);
}

}  // namespace
}  // namespace nns
