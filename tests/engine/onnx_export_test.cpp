// SPDX-License-Identifier: GPL-3.0-or-later
// The ONNX export (engine/onnx/onnx_export.h): what the file holds for the examples and the
// graph models (names, initializers, the batch dimension, the operators of each form), and
// what it refuses. That the model computes what NN Studio computes is torch.onnx_export's
// (tests/torch/onnx_export.py).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/graph/builder.h"
#include "engine/onnx/onnx_export.h"
#include "engine/onnx/onnx_import.h"
#include "engine/onnx/tensor_proto.h"
#include "engine/plugin/loader.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"
#include "tests/engine/graph_test_models.h"

namespace nns {
namespace {

namespace fs = std::filesystem;
using graph::NodeId;
using graph::Project;

Project example(const std::string& name) {
  return graph::load_project(std::string(NNS_SOURCE_DIR) + "/resources/examples/" + name);
}

::onnx::ModelProto parse(const std::string& bytes) {
  ::onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(bytes));
  return model;
}

::onnx::ModelProto exported(const Project& project, int64_t opset = 17,
                            const nn::StateDict* weights = nullptr) {
  return parse(onnx::export_model(project, weights, opset));
}

// The state dict's keys as the file should name its initializers: all but the BatchNorm
// counters.
std::vector<std::string> expected_initializers(const Project& project) {
  std::vector<std::string> keys;
  for (const std::string& key : graph::build_model(project)->state_dict().keys()) {
    if (!key.ends_with("num_batches_tracked")) keys.push_back(key);
  }
  return keys;
}

std::vector<std::string> initializer_names(const ::onnx::ModelProto& m) {
  std::vector<std::string> names;
  for (const auto& t : m.graph().initializer()) names.push_back(t.name());
  return names;
}

std::vector<std::string> op_types(const ::onnx::ModelProto& m) {
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node()) ops.push_back(n.op_type());
  return ops;
}

bool has_node(const ::onnx::ModelProto& m, const std::string& name, const std::string& op) {
  for (const auto& n : m.graph().node()) {
    if (n.name() == name && n.op_type() == op) return true;
  }
  return false;
}

size_t count(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), s));
}

TEST(OnnxExport, TheExamplesHaveTheStateDictsKeysAndADynamicBatch) {
  for (const char* file : {"spirals.nns", "digits.nns", "residual_mlp.nns", "dynamic_net.nns"}) {
    SCOPED_TRACE(file);
    const Project project = example(file);
    const ::onnx::ModelProto m = exported(project);
    EXPECT_EQ(m.ir_version(), 8);
    EXPECT_EQ(m.producer_name(), "NN Studio");
    ASSERT_EQ(m.opset_import_size(), 1);
    EXPECT_EQ(m.opset_import(0).domain(), "");
    EXPECT_EQ(m.opset_import(0).version(), 17);
    EXPECT_EQ(initializer_names(m), expected_initializers(project));
    ASSERT_EQ(m.graph().input_size(), 1);
    EXPECT_EQ(m.graph().input(0).name(), "x");
    ASSERT_EQ(m.graph().output_size(), 1);
    EXPECT_EQ(m.graph().output(0).name(), "logits");
    for (const auto& v : {m.graph().input(0), m.graph().output(0)}) {
      const auto& shape = v.type().tensor_type().shape();
      ASSERT_GE(shape.dim_size(), 2);
      EXPECT_EQ(shape.dim(0).dim_param(), "N");
      EXPECT_EQ(v.type().tensor_type().elem_type(), ::onnx::TensorProto::FLOAT);
    }
    for (const auto& n : m.graph().node()) EXPECT_EQ(n.name().front(), '/') << n.name();
  }
  // Module scopes as torch.onnx writes them, so an importer recovers the module names.
  const ::onnx::ModelProto spirals = exported(example("spirals.nns"));
  EXPECT_TRUE(has_node(spirals, "/fc1/Gemm", "Gemm"));
  EXPECT_TRUE(has_node(spirals, "/relu1/Relu", "Relu"));
  const auto& shape = spirals.graph().input(0).type().tensor_type().shape();
  EXPECT_EQ(shape.dim(1).dim_value(), 2);
  const ::onnx::ModelProto digits = exported(example("digits.nns"));
  EXPECT_TRUE(has_node(digits, "/features/features.0/Conv", "Conv"));
  EXPECT_TRUE(has_node(digits, "/features/features.2/MaxPool", "MaxPool"));
  EXPECT_TRUE(has_node(digits, "/classifier/classifier.0/Gemm", "Gemm"));
}

TEST(OnnxExport, TheInitializersHoldTheGivenWeights) {
  const Project project = example("spirals.nns");
  nn::StateDict weights = graph::build_model(project)->state_dict();
  weights["fc2.bias"] = full({64}, 0.25);
  const ::onnx::ModelProto m = exported(project, 17, &weights);
  for (const auto& init : m.graph().initializer()) {
    const Tensor t = onnx::from_tensor_proto(init, "test");
    EXPECT_EQ(t.shape(), weights[init.name()].shape()) << init.name();
    EXPECT_EQ(t.to_vector<float>(), weights[init.name()].to_vector<float>()) << init.name();
  }
  // Without weights: those a training run starts from, drawn after the project's seed.
  manual_seed(static_cast<uint64_t>(project.training.seed));
  const nn::StateDict initial = graph::build_model(project)->state_dict();
  randn({100});  // draws, which the export does not see: it seeds again
  const ::onnx::ModelProto fresh = parse(onnx::export_model(project, nullptr));
  for (const auto& init : fresh.graph().initializer()) {
    EXPECT_EQ(onnx::from_tensor_proto(init, "test").to_vector<float>(),
              initial[init.name()].to_vector<float>())
        << init.name();
  }
  // Weights that do not fit the model are refused, as a strict load refuses them.
  nn::StateDict wrong = weights;
  wrong["fc1.weight"] = zeros({3, 3});
  EXPECT_ANY_THROW(onnx::export_model(project, &wrong));
}

TEST(OnnxExport, GroupsBlocksRefsAndSwitchesAreFlattened) {
  // A ModuleList of block instances: the block's functions run in the instance's scope.
  const Project dynamic = test::dynamicnet_project("lrelu");
  const ::onnx::ModelProto m = exported(dynamic);
  EXPECT_EQ(initializer_names(m), expected_initializers(dynamic));
  EXPECT_TRUE(has_node(m, "/linears/linears.0/MatMul", "MatMul"));
  EXPECT_TRUE(has_node(m, "/linears/linears.2/Add", "Add"));
  EXPECT_TRUE(has_node(m, "/final/MatMul", "MatMul"));
  // The switch's active member only.
  EXPECT_TRUE(has_node(m, "/activations/activations.lrelu/LeakyRelu", "LeakyRelu"));
  EXPECT_EQ(count(op_types(m), "Relu"), 0u);
  EXPECT_EQ(count(op_types(exported(test::dynamicnet_project("relu"))), "LeakyRelu"), 0u);

  // A block holding block instances, and a functional relu.
  const Project bignet = test::bignet_project();
  const ::onnx::ModelProto big = exported(bignet);
  EXPECT_EQ(initializer_names(big), expected_initializers(bignet));
  EXPECT_TRUE(has_node(big, "/net/net.l0/MatMul", "MatMul"));
  EXPECT_TRUE(has_node(big, "/net/Relu", "Relu"));

  // A Ref calls the same module again: its weights once, its operator twice.
  const Project residual = test::residual_project();
  const ::onnx::ModelProto r = exported(residual);
  EXPECT_EQ(initializer_names(r), expected_initializers(residual));
  EXPECT_EQ(count(op_types(r), "Relu"), 3u);
  EXPECT_TRUE(has_node(r, "/act/Relu_2", "Relu"));

  // A Sequential's members, a BatchNorm with running statistics (its counter left out).
  const Project cnn = test::cnn_project();
  const ::onnx::ModelProto c = exported(cnn);
  EXPECT_EQ(initializer_names(c), expected_initializers(cnn));
  EXPECT_TRUE(has_node(c, "/bn1/BatchNormalization", "BatchNormalization"));
  EXPECT_TRUE(has_node(c, "/flatten/Flatten", "Flatten"));
  EXPECT_TRUE(has_node(exported(test::features_project()), "/features/features.2/Gemm", "Gemm"));
}

// x -> LayerNorm(8) -> Linear(8, 3) -> y on [N, 5, 8]: a rank-3 Linear too.
Project layer_norm_project(const graph::Json& ln_options) {
  Project p;
  p.name = "LN";
  graph::Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {5, 8}}});
  const NodeId ln = g.add_node("LayerNorm", "ln", ln_options);
  const NodeId fc = g.add_node("Linear", "fc", {{"in_features", 8}, {"out_features", 3}});
  const NodeId y = g.add_node("Output", "y");
  test::chain(g, {x, ln, fc, y});
  return p;
}

TEST(OnnxExport, LayerNormIsOneOperatorFromOpset17AndTorchsDecompositionBefore) {
  const Project p = layer_norm_project({{"normalized_shape", {8}}, {"eps", 1e-3}});
  const ::onnx::ModelProto m17 = exported(p, 17);
  EXPECT_TRUE(has_node(m17, "/ln/LayerNormalization", "LayerNormalization"));
  EXPECT_EQ(count(op_types(m17), "ReduceMean"), 0u);
  for (int64_t opset : {13, 14, 15, 16}) {
    const ::onnx::ModelProto m = exported(p, opset);
    EXPECT_EQ(m.opset_import(0).version(), opset);
    const std::vector<std::string> ops = op_types(m);
    EXPECT_EQ(count(ops, "LayerNormalization"), 0u);
    EXPECT_EQ(count(ops, "ReduceMean"), 2u);
    for (const char* op : {"Sub", "Pow", "Sqrt", "Div", "Mul"}) EXPECT_EQ(count(ops, op), 1u) << op;
    EXPECT_TRUE(has_node(m, "/ln/ReduceMean", "ReduceMean"));
    EXPECT_EQ(initializer_names(m), expected_initializers(p));
  }
  // A rank-3 input takes MatMul with the transposed weight, not Gemm.
  const std::vector<std::string> ops = op_types(m17);
  EXPECT_EQ(count(ops, "Gemm"), 0u);
  EXPECT_TRUE(has_node(m17, "/fc/Transpose", "Transpose"));
  EXPECT_TRUE(has_node(m17, "/fc/MatMul", "MatMul"));
  // Without elementwise_affine: no weights, a constant scale.
  const Project plain =
      layer_norm_project({{"normalized_shape", {8}}, {"elementwise_affine", false}});
  EXPECT_EQ(initializer_names(exported(plain, 17)), expected_initializers(plain));
  EXPECT_EQ(count(op_types(exported(plain, 13)), "Mul"), 0u);
}

float max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const std::vector<float> x = a.contiguous().to_vector<float>();
  const std::vector<float> y = b.contiguous().to_vector<float>();
  float d = x.size() == y.size() ? 0 : INFINITY;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

// ReduceMean's node at `opset`: its axes as an attribute, or (from 18) a Constant input.
std::vector<int64_t> reduce_mean_axes(const ::onnx::ModelProto& m) {
  std::map<std::string, const ::onnx::TensorProto*> constants;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == "Constant") constants[n.output(0)] = &n.attribute(0).t();
    if (n.op_type() != "ReduceMean") continue;
    for (const auto& a : n.attribute()) {
      if (a.name() == "axes") return {a.ints().begin(), a.ints().end()};
    }
    EXPECT_EQ(n.input_size(), 2);
    const ::onnx::TensorProto* axes = constants.at(n.input(1));
    return {axes->int64_data().begin(), axes->int64_data().end()};
  }
  ADD_FAILURE() << "no ReduceMean";
  return {};
}

TEST(OnnxExport, Opset18HasTheReductionsAxesAsAnInputAndImportsBack) {
  Project p;
  p.name = "MeanNet";
  graph::Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {5, 8}}});
  const NodeId mean = g.add_node("Mean", "mean", {{"dim", {1}}, {"keepdim", false}});
  const NodeId fc = g.add_node("Linear", "fc", {{"in_features", 8}, {"out_features", 3}});
  const NodeId y = g.add_node("Output", "y");
  test::chain(g, {x, mean, fc, y});
  for (int64_t opset : {17, 18}) {
    const std::string bytes = onnx::export_model(p, nullptr, opset);  // passes the checker
    const ::onnx::ModelProto m = parse(bytes);
    EXPECT_EQ(m.opset_import(0).version(), opset);
    const ::onnx::NodeProto& reduce =
        *std::find_if(m.graph().node().begin(), m.graph().node().end(),
                      [](const auto& n) { return n.op_type() == "ReduceMean"; });
    EXPECT_EQ(reduce.input_size(), opset == 18 ? 2 : 1);
    EXPECT_EQ(reduce_mean_axes(m), std::vector<int64_t>{1});
    // The import reads either form back as the Mean, with the same outputs.
    const graph::ImportedProject back = onnx::import_model(bytes, "mean.onnx");
    const graph::Node* imported = back.project.graph.find_by_name("mean");
    ASSERT_TRUE(imported);
    EXPECT_EQ(imported->type, "Mean");
    EXPECT_EQ(imported->options.at("dim"), graph::Json::array({1}));
    auto original = graph::build_initial_model(p);
    auto again = graph::build_model(back.project);
    serialize::load_into(*again, back.weights, /*strict=*/true);
    const Tensor in = randn({4, 5, 8});
    EXPECT_LT(max_diff((*again)(in), (*original)(in)), 1e-5f);
  }
}

TEST(OnnxExport, EveryBuiltInLayerHasItsForm) {
  Project p;
  p.name = "Layers";
  graph::Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {2, 8, 8}}});
  const NodeId conv = g.add_node("Conv2d", "conv", {{"in_channels", 2}, {"out_channels", 4}});
  const NodeId bn =
      g.add_node("BatchNorm2d", "bn", {{"num_features", 4}, {"track_running_stats", false}});
  const NodeId prelu = g.add_node("PReLU", "prelu", {{"num_parameters", 4}});
  const NodeId pool = g.add_node("AdaptiveAvgPool2d", "pool", {{"output_size", {3, 3}}});
  const NodeId avg = g.add_node("AvgPool2d", "avg", {{"kernel_size", 1}});
  const NodeId gap = g.add_node("AdaptiveAvgPool2d", "gap");
  const NodeId flat = g.add_node("Flatten", "flat", {{"start_dim", 2}});
  const NodeId unflat =
      g.add_node("Unflatten", "unflat", {{"dim", 1}, {"unflattened_size", {2, 2}}});
  const NodeId flat2 = g.add_node("Flatten", "flat2");
  const NodeId gelu = g.add_node("GELU", "gelu");
  const NodeId silu = g.add_node("SiLU", "silu");
  const NodeId soft = g.add_node("Softmax", "soft");
  const NodeId id = g.add_node("Identity", "id");
  const NodeId y = g.add_node("Output", "y");
  test::chain(g,
              {x, conv, bn, prelu, pool, avg, gap, flat, unflat, flat2, gelu, silu, soft, id, y});
  const ::onnx::ModelProto m = exported(p);
  EXPECT_EQ(initializer_names(m), expected_initializers(p));
  const std::vector<std::string> ops = op_types(m);
  for (const char* op : {"Conv", "PRelu", "AveragePool", "GlobalAveragePool", "Reshape", "Erf",
                         "Sigmoid", "Softmax", "Identity"})
    EXPECT_GE(count(ops, op), 1u) << op;
  // Batch statistics: BatchNorm without running statistics normalizes with ReduceMean.
  EXPECT_EQ(count(ops, "BatchNormalization"), 0u);
  EXPECT_TRUE(has_node(m, "/bn/ReduceMean", "ReduceMean"));
  // The Output's name is the last operator's output: Identity makes "y".
  EXPECT_EQ(m.graph().node(m.graph().node_size() - 1).output(0), "y");

  // A pooling whose windows cannot be equal is refused, naming the node.
  g.at(pool).options = {{"output_size", {3, 5}}};
  try {
    onnx::export_model(p, nullptr);
    FAIL() << "uneven AdaptiveAvgPool2d exported";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'pool'"), std::string::npos) << e.what();
  }
}

TEST(OnnxExport, AnInputThatIsAnOutputGetsAnIdentityAndInt64InputsStayInt64) {
  Project p;
  p.name = "Lookup";
  graph::Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "tokens", {{"shape", {6}}, {"dtype", "int64"}});
  const NodeId emb = g.add_node("Embedding", "emb", {{"num_embeddings", 10}, {"embedding_dim", 4}});
  const NodeId drop = g.add_node("Dropout", "drop");
  const NodeId y = g.add_node("Output", "vectors");
  const NodeId same = g.add_node("Output", "echo");
  test::chain(g, {x, emb, drop, y});
  g.connect({x, "out"}, {same, "in"});
  const ::onnx::ModelProto m = exported(p);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().elem_type(), ::onnx::TensorProto::INT64);
  EXPECT_TRUE(has_node(m, "/emb/Gather", "Gather"));
  ASSERT_EQ(m.graph().output_size(), 2);
  EXPECT_EQ(m.graph().output(0).name(), "vectors");
  EXPECT_EQ(m.graph().output(1).name(), "echo");
  EXPECT_EQ(m.graph().output(1).type().tensor_type().elem_type(), ::onnx::TensorProto::INT64);
  EXPECT_EQ(count(op_types(m), "Identity"), 1u);  // Dropout is nothing in eval mode
}

TEST(OnnxExport, ABadOpsetOrAPluginTypeIsRefusedAndNothingIsWritten) {
  const fs::path dir = fs::temp_directory_path() / "nns_onnx_export_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "model.onnx").string();
  const Project spirals = example("spirals.nns");
  for (int64_t opset : {12, 19}) {
    try {
      onnx::write_model_file(spirals, path, nullptr, opset);
      FAIL() << "opset " << opset << " exported";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("opset " + std::to_string(opset) +
                                           " is not supported (NN Studio writes opsets 13 to 18)"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(fs::exists(path));
  }
  plugin::load_plugins({fs::path(NNS_PLUGIN_BUILD_DIR), fs::path(NNS_TEST_PLUGIN_DIR)});
  const Project plugins =
      graph::load_project(std::string(NNS_SOURCE_DIR) + "/tests/cli/plugins_net.nns");
  try {
    onnx::write_model_file(plugins, path, nullptr);
    FAIL() << "a plugin type exported";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'ff': the type FourierFeatures comes from the "
                                         "plugin 'fourier_features', which has no ONNX form"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
  // A good export writes the file; a failed one leaves it as it was.
  onnx::write_model_file(spirals, path, nullptr);
  ASSERT_TRUE(fs::exists(path));
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  EXPECT_EQ(bytes.str(), onnx::export_model(spirals, nullptr));
  EXPECT_THROW(onnx::write_model_file(plugins, path, nullptr), ValueError);
  EXPECT_EQ(fs::file_size(path), bytes.str().size());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nns
