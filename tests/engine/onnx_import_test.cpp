// SPDX-License-Identifier: GPL-3.0-or-later
// The ONNX import (engine/onnx/onnx_import.h) on the files torch.onnx.export wrote
// (tests/fixtures/onnx/make_onnx_fixtures.py), on files of opsets 18 to 21 as torch 2.x's
// exporter writes them (make_opset_fixtures.py, with the outputs of the PyTorch modules they
// stand for) and on hand-made hostile ones: the names, groups and weights it makes, and what it
// refuses. That the imported model computes what torch computed is also torch.onnx_import's
// and torch.onnx_opsets's (tests/torch/).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <map>
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
  for (int64_t opset : {12, 22}) {
    EXPECT_NE(changed([opset](auto& m) { m.mutable_opset_import(0)->set_version(opset); })
                  .find("opset " + std::to_string(opset) +
                        " is not supported (NN Studio reads opsets 13 to 21)"),
              std::string::npos);
  }
  for (int64_t opset : {18, 21}) {
    EXPECT_EQ(changed([opset](auto& m) { m.mutable_opset_import(0)->set_version(opset); }), "");
  }
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

// ---- Opsets 18 to 21: torch 2.x's exporter (tests/fixtures/onnx/make_opset_fixtures.py) -------

// The imported fixture's model (with its weights) on the input the script stored gives the
// output of the PyTorch module it stands for.
void expect_module_output(const std::string& name, const graph::ImportedProject& m) {
  const nn::StateDict io = serialize::load_state_dict_file(fixture("opset_fixtures.safetensors"));
  auto model = graph::build_model(m.project);
  serialize::load_into(*model, m.weights, /*strict=*/true);
  model->eval();
  const Tensor got = (*model)(*io.find(name + ".input"));
  const Tensor want = *io.find(name + ".output");
  ASSERT_EQ(got.shape(), want.shape()) << name;
  const std::vector<float> a = got.contiguous().to_vector<float>();
  const std::vector<float> b = want.contiguous().to_vector<float>();
  for (size_t k = 0; k < a.size(); ++k)
    ASSERT_NEAR(a[k], b[k], 1e-5 + 1e-4 * std::abs(b[k])) << name << " at " << k;
}

std::vector<const graph::Node*> nodes_of_type(const graph::Graph& g, const std::string& type) {
  std::vector<const graph::Node*> out;
  for (const graph::Node& n : g.nodes) {
    if (n.type == type) out.push_back(&n);
  }
  return out;
}

TEST(OnnxImport, TheReductionsAxesInputsAndEmptyAxes) {
  const graph::ImportedProject m = onnx::import_model_file(fixture("opset_reductions.onnx"));
  // ReduceMean, ReduceSum and ReduceSumSquare over [2] / [-1] with keepdims: three Means; the
  // sums times 6 (a Constant) and the squares of x * x first; the no-op ReduceMean nothing.
  const auto means = nodes_of_type(m.project.graph, "Mean");
  ASSERT_EQ(means.size(), 3u);
  for (const graph::Node* n : means) EXPECT_EQ(n->options.at("keepdim"), true);
  EXPECT_EQ(means[0]->options.at("dim"), graph::Json::array({2}));
  EXPECT_EQ(means[2]->options.at("dim"), graph::Json::array({2}));  // -1 of a rank-3 input
  const auto constants = nodes_of_type(m.project.graph, "Constant");
  ASSERT_EQ(constants.size(), 2u);
  EXPECT_EQ(constants[0]->options.at("value"), 6.0);
  EXPECT_EQ(nodes_of_type(m.project.graph, "Mul").size(), 3u);
  expect_module_output("opset_reductions", m);
}

TEST(OnnxImport, LayerNormalizationGeluAndTheirTorch2Decompositions) {
  for (const char* name : {"opset_layernorm_gelu", "opset_decomposed"}) {
    const graph::ImportedProject m = onnx::import_model_file(fixture(std::string(name) + ".onnx"));
    const graph::Graph& g = m.project.graph;
    std::vector<std::string> types;
    for (const graph::Node& n : g.nodes) types.push_back(n.type);
    EXPECT_EQ(types, (std::vector<std::string>{"Input", "Linear", "LayerNorm", "GELU", "Linear",
                                               "GELU", "Output"}))
        << name;
    ASSERT_TRUE(g.find_by_name("act") && g.find_by_name("act2")) << name;
    EXPECT_EQ(g.find_by_name("act")->options.at("approximate"), "none") << name;
    EXPECT_EQ(g.find_by_name("act2")->options.at("approximate"), "tanh") << name;
    EXPECT_EQ(g.find_by_name("norm")->options.at("normalized_shape"), graph::Json::array({8}));
    expect_module_output(name, m);
  }
}

TEST(OnnxImport, SplitByNumOutputsAndPadWithAxes) {
  const graph::ImportedProject split = onnx::import_model_file(fixture("opset_split.onnx"));
  std::vector<int64_t> lengths;
  for (const graph::Node* n : nodes_of_type(split.project.graph, "Narrow"))
    lengths.push_back(n->options.at("length"));
  EXPECT_EQ(lengths, (std::vector<int64_t>{4, 4, 2}));  // 10 in 3: ceil(10 / 3), the last less
  expect_module_output("opset_split", split);
  const graph::ImportedProject pad = onnx::import_model_file(fixture("opset_pad.onnx"));
  const graph::Node* conv = pad.project.graph.find_by_name("conv");
  ASSERT_TRUE(conv);
  EXPECT_EQ(conv->options.at("padding"), graph::Json::array({1, 1}));
  expect_module_output("opset_pad", pad);
}

TEST(OnnxImport, Torch2MetadataScopesNameModulesWithoutWeights) {
  const graph::ImportedProject m = onnx::import_model_file(fixture("opset_mlp.onnx"));
  const graph::Graph& g = m.project.graph;
  // Relu and Softmax have no initializers: their names are the scopes in the nodes' metadata
  // (pkg.torch.onnx.name_scopes), so the Sequential's indices 1 and 3 come back.
  ASSERT_TRUE(g.find_by_name("1") && g.find_by_name("3"));
  EXPECT_EQ(g.find_by_name("1")->type, "ReLU");
  EXPECT_EQ(g.find_by_name("3")->type, "Softmax");
  expect_module_output("opset_mlp", m);
}

TEST(OnnxImport, ScaledDotProductAttentionBetweenProjectionsIsMultiheadAttention) {
  const graph::ImportedProject m = onnx::import_model_file(fixture("opset_attention.onnx"));
  const graph::Graph& g = m.project.graph;
  const auto attention = nodes_of_type(g, "MultiheadAttention");
  ASSERT_EQ(attention.size(), 2u);
  for (const graph::Node* a : attention) {
    EXPECT_EQ(a->name, "attn");
    EXPECT_EQ(a->options.at("embed_dim"), 8);
    EXPECT_EQ(a->options.at("num_heads"), 2);
    EXPECT_EQ(a->options.at("batch_first"), true);
  }
  EXPECT_EQ(attention[0]->options.at("is_causal"), false);
  EXPECT_EQ(attention[1]->options.at("is_causal"), true);  // the float's lowest as -inf
  EXPECT_TRUE(nodes_of_type(g, "MatMul").empty());
  EXPECT_TRUE(nodes_of_type(g, "Softmax").empty());
  // in_proj_weight is the q, k and v projections' weights, one under the other.
  ::onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(read_bytes(fixture("opset_attention.onnx"))));
  std::map<std::string, Tensor> init;
  for (const auto& t : proto.graph().initializer()) init[t.name()] = onnx::from_tensor_proto(t, "");
  const Tensor* in_proj = m.weights.find("blk0.attn.in_proj_weight");
  ASSERT_TRUE(in_proj);
  EXPECT_EQ(in_proj->narrow(0, 8, 8).contiguous().to_vector<float>(),
            init.at("blk0.attn.k.weight").contiguous().to_vector<float>());
  const Tensor* fused = m.weights.find("blk1.attn.in_proj_weight");
  ASSERT_TRUE(fused);
  EXPECT_EQ(fused->contiguous().to_vector<float>(),
            init.at("blk1.attn.qkv.weight").contiguous().to_vector<float>());
  expect_module_output("opset_attention", m);
}

TEST(OnnxImport, CrossAttentionTakesTheQueryFromItsOwnInput) {
  const graph::ImportedProject m = onnx::import_model_file(fixture("opset_cross_attention.onnx"));
  const graph::Graph& g = m.project.graph;
  const auto attention = nodes_of_type(g, "MultiheadAttention");
  ASSERT_EQ(attention.size(), 1u);
  const graph::Node* narrow = g.find_by_name("narrow");
  const graph::Node* x = g.find_by_name("x");
  ASSERT_TRUE(narrow && x);
  EXPECT_EQ(g.edge_into({attention[0]->id, "query"})->from.node, narrow->id);
  EXPECT_EQ(g.edge_into({attention[0]->id, "key"})->from.node, x->id);
  EXPECT_EQ(g.edge_into({attention[0]->id, "value"})->from.node, x->id);
  // The query projection has no bias: its part of in_proj_bias is zeros (the same sums).
  const Tensor* bias = m.weights.find("attn.in_proj_bias");
  ASSERT_TRUE(bias);
  EXPECT_EQ(bias->narrow(0, 0, 8).contiguous().to_vector<float>(), std::vector<float>(8, 0.0f));
  expect_module_output("opset_cross_attention", m);
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
