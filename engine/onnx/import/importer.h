// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The ONNX importer (engine/onnx/onnx_import.h), one op family per file of this folder:
// importer.cpp reads and checks the model, makes a unit per node and dispatches each node to
// its operator's converter; patterns.cpp finds the decompositions that stand for one layer
// (layer_norm, GELU, SiLU, MatMul + Add), attention.cpp those of attention; layers.cpp holds the
// operator table and converts the layers and functions; shapes.cpp the sizes torch computes from
// shapes and the views and slices that read them; project.cpp names the units and makes the project
// and its weights. Internal to the engine.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/graph/node_types.h"
#include "engine/graph/project.h"
#include "engine/onnx/onnx_import.h"
#include "engine/tensor/error.h"

namespace nns::onnx::detail {

using graph::Json;
using graph::NodeId;
using graph::SymShape;
using ::onnx::AttributeProto;
using ::onnx::NodeProto;

// The operators the importer converts a node of: those of Importer's converter table (layers.cpp).
const std::set<std::string>& supported_ops();

// ---- Helpers (helpers.cpp) ----------------------------------------------------------------------

const AttributeProto* find_attribute(const NodeProto& node, const std::string& name);
int64_t attr_int(const NodeProto& node, const std::string& name, int64_t fallback);
double shortest(double value);
double attr_float(const NodeProto& node, const std::string& name, double fallback);
std::string attr_string(const NodeProto& node, const std::string& name,
                        const std::string& fallback);
std::optional<std::vector<int64_t>> attr_ints(const NodeProto& node, const std::string& name);
Json json_list(const std::vector<int64_t>& v);
std::string lower(std::string s);
std::string sanitized(const std::string& name);
bool is_index(const std::string& s);
std::vector<std::string> split(const std::string& s, char sep);
bool is_module_path(const std::string& path);
std::string module_of_initializer(const std::string& name);
std::string scope_of_node(const NodeProto& node);
std::string first_call_scope(const std::string& scope);

// The custom modules whose forward is x @ self.weight (+ self.bias), with the weight [in, out]
// under the module's own key: the seeds' MyLinear. ONNX keeps no class names, so these are
// their names in an imported project.
constexpr const char* kWeightBlock = "MatMulWeight";
constexpr const char* kWeightBiasBlock = "MatMulWeightBias";

graph::BlockDef weight_block(bool bias);

// One node of the project to be: a layer, function, parameter or buffer, with the ONNX values
// it reads and writes.
struct Unit {
  std::string type;  // a NodeType name
  Json options = Json::object();
  std::vector<std::string> inputs;  // values, in port order
  std::vector<std::string> ports;   // the input ports, when not in (one) or in0, in1, ...
  std::string output;
  // The module's state by entry ("weight" -> tensor), and the initializers it came from.
  std::vector<std::pair<std::string, Tensor>> state;
  std::vector<std::string> sources;
  std::string scope;      // the ONNX node's module scope, if any
  std::string module;     // its module path, when a pattern knows it (Pattern::module)
  std::string label;      // the ONNX node, for messages: "Conv '/conv1/Conv'"
  bool constant = false;  // a Buffer of a Constant node's value (not an initializer)
  // A custom block instance (type is a block of kWeightBlocks), not a NodeType.
  bool block = false;
  // Filled in when named and placed.
  std::string path;              // module path ("features.0"); a node name for functions
  std::optional<size_t> ref_of;  // a second call of this unit's module
  NodeId id = 0;
};

// A decomposition found in the graph that stands for one node (patterns.cpp).
struct Pattern {
  std::string type;
  Json options = Json::object();
  std::vector<std::string> inputs;
  std::vector<std::string> ports;  // the node's input ports, when not in/in0, in1, ...
  std::string output;
  // entry -> constant; an entry ending in ^T takes the constant transposed.
  std::vector<std::pair<std::string, std::string>> state;
  // Entries made here (attention's in_proj_weight from three projections), and the
  // initializers they come from.
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::vector<std::string> sources;
  std::string module;  // the module path, when the initializers' own names do not give it
  std::vector<int> nodes;
};

class Importer {
 public:
  Importer(const ::onnx::ModelProto& model, std::string source)
      : model_(model), graph_(model.graph()), source_(std::move(source)) {}

  graph::ImportedProject run();

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw ValueError(source_ + ": " + message);
  }
  [[noreturn]] void unsupported_form(int i, const std::string& why) const {
    fail(label(i) + ": " + why);
  }
  std::string label(int index) const;

  // ---- The model as a whole (importer.cpp) -----------------------------------------------------

  void check_model();
  void read_values();
  void check_arity(int i) const;
  void read_input(const ::onnx::ValueInfoProto& input);
  void fold_transpose(int i);
  void fold_reshape(int i);
  std::string source_of(const std::string& value) const;
  void read_constant(int i);
  void check_supported();

  // The graph's values and nodes (importer.cpp).
  int only_consumer(const std::string& value) const;
  bool is_graph_output(const std::string& value) const;
  const NodeProto& node(int i) const { return graph_.node(i); }
  // The module scope of node i (scope_of_node), read once.
  const std::string& scope(int i) const { return scopes_.at(i); }
  std::optional<double> scalar(const std::string& value) const;
  std::optional<std::pair<std::string, std::string>> split_constant(const NodeProto& n) const;
  int producer_of(const std::string& value) const;

  static bool near(std::optional<double> v, double want) {
    return v && std::abs(*v - want) <= 1e-4 * std::max(1.0, std::abs(want));
  }

  // ---- Attention (attention.cpp) ---------------------------------------------------------------

  std::optional<Pattern> match_attention(int softmax);
  static bool is_causal_mask(const Tensor& mask);
  bool is_size(const std::string& value) const;
  // torch 2.x's scaled_dot_product_attention between projections.
  struct Projection {
    std::string x, weight, bias;  // x @ weight (+ bias), the weight [in, out]: constants
    int64_t part = 0, parts = 1;  // the block of its columns a Split takes (q of qkv)
  };
  struct Heads {
    Projection projection;
    int64_t heads = 0, head_dim = 0;
  };
  std::optional<Pattern> match_sdpa(int softmax);
  std::string unscaled(std::string value, double& scale, std::vector<int>& nodes) const;
  std::optional<std::string> untransposed_key(const std::string& kt, std::vector<int>& nodes) const;
  std::optional<Heads> heads_of(const std::string& value, std::vector<int>& nodes) const;
  std::optional<Projection> projection_of(const std::string& value, std::vector<int>& nodes) const;
  std::optional<std::pair<std::string, Projection>> merged_heads(const std::string& value,
                                                                 int64_t e,
                                                                 std::vector<int>& nodes) const;
  std::vector<int64_t> constant_tail(const std::string& sizes) const;
  void take_size_nodes(std::vector<int>& nodes) const;
  bool read_only_by(const NodeProto& n, const std::set<int>& in) const;
  bool closed(const std::vector<int>& nodes, const std::string& output) const;
  Pattern sdpa_pattern(const std::array<Projection, 3>& qkv, const Projection& out, int64_t heads,
                       int64_t e, bool causal, const std::string& output,
                       const std::vector<int>& nodes) const;
  static std::string common_module(const std::vector<std::string>& paths);

  // ---- Patterns: layer_norm's and GELU's decompositions, MatMul + Add (patterns.cpp) -----------

  void match_patterns();
  std::optional<Pattern> match_hardswish(int hard_sigmoid);
  static bool is_torch_hardsigmoid(const NodeProto& n);
  std::optional<Pattern> match_layer_norm(int mean1);
  std::optional<Pattern> match_silu(int sigmoid);
  std::optional<Pattern> match_gelu(int erf);
  std::optional<Pattern> match_gelu_tanh(int tanh);
  std::optional<std::vector<int>> match_cube(const std::string& value, const std::string& x);
  std::optional<Pattern> gelu_tail(const std::string& x, std::vector<int> nodes,
                                   const std::string& approximate);
  std::optional<Pattern> match_linear(int matmul);
  void add_pattern(int last, const Pattern& p);

  // ---- One unit per node or pattern, in order, with shapes (importer.cpp) ----------------------

  std::string resolve(const std::string& value) const;
  const SymShape& shape_of(const std::string& value);
  std::string constant_unit(const std::string& name);
  void add_unit(Unit u);
  Tensor constant(const std::string& name) const { return constants_.at(resolve(name)); }
  Unit unit_for(int i, std::string type) const;
  void convert_nodes();
  void convert(int i);

  // ---- Layers and functions (layers.cpp) -------------------------------------------------------

  // The converter of a node, by its operator. supported_ops() lists the table's operators, so
  // that every node check_supported accepts has one.
  using Converter = void (Importer::*)(int);
  static const std::map<std::string, Converter>& converters();
  friend const std::set<std::string>& supported_ops();
  [[noreturn]] void no_node(int i);
  [[noreturn]] void only_sizes(int i);

  std::string input(int i, int k) const;
  Tensor need_constant(int i, int k, const std::string& what) const;
  void convert_clip(int i);
  void convert_hardsigmoid(int i);
  void convert_hardswish(int i);
  void convert_plain_activation(int i);
  void convert_leaky_relu(int i);
  void convert_elu(int i);
  void convert_prelu(int i);
  void convert_softmax(int i);
  std::optional<std::vector<int64_t>> reduction_axes(int i) const;
  void convert_reduce(int i);
  void convert_gelu(int i);
  void convert_binary(int i);
  void convert_concat(int i);
  void convert_dropout(int i);
  void convert_gemm(int i);
  void convert_conv(int i);
  void convert_batch_norm(int i);
  void convert_layer_norm(int i);
  void convert_pool(int i);
  void convert_global_average_pool(int i);
  void convert_gather(int i);
  void convert_embedding(int i);
  void convert_identity(int i);
  void convert_pad(int i);
  std::vector<int64_t> pads_of_every_axis(int i, const std::vector<int64_t>& given,
                                          size_t rank) const;
  std::string take_padding(const std::string& value, std::vector<int64_t>& pads);

  // ---- Shapes, views and slices (shapes.cpp) ---------------------------------------------------

  int64_t axis_dim(int i, int64_t axis, size_t rank) const;
  std::optional<std::vector<int64_t>> int_values(const std::string& value) const;
  bool convert_shape_arithmetic(int i);
  void convert_reshape(int i);
  void convert_transpose(int i);
  void convert_slice(int i);
  void convert_split(int i);
  void narrow(int i, const std::string& value, const std::vector<std::array<int64_t, 3>>& cuts,
              const std::string& output);
  void convert_select(int i);
  void convert_expand(int i);

  // ---- Names (project.cpp) ---------------------------------------------------------------------

  static bool is_module(const Unit& u);
  bool path_free(const std::string& path) const;
  void take(const std::string& path);
  std::string unique(const std::string& path) const;
  void name_units();

  // ---- The project (project.cpp) ---------------------------------------------------------------

  // A group of the module tree: dotted paths as nested groups.
  struct Tree {
    std::string key;
    std::optional<size_t> unit;                   // a leaf
    std::vector<std::unique_ptr<Tree>> children;  // in first-use order
    bool sequential = false;
    std::string in, out;  // for a chain: the value it reads and the one it makes
    NodeId id = 0;        // its node, once made
  };

  Tree* child(Tree& t, const std::string& key);
  size_t uses(const std::string& value) const;
  void decide(Tree& t);
  graph::Project make_project();
  static std::vector<std::string> input_ports(const Unit& u);
  void connect(graph::Graph& g, const std::map<std::string, graph::PortRef>& value_port,
               const std::string& value, graph::PortRef to) const;
  nn::StateDict make_weights(const graph::Project& project);
  void choose_dataset(graph::ImportedProject& out);

  struct InputInfo {
    std::string name, dtype;
    Json shape;
  };

  const ::onnx::ModelProto& model_;
  const ::onnx::GraphProto& graph_;
  std::string source_;
  std::map<std::string, Tensor> constants_;
  std::set<std::string> initializers_;
  std::set<std::string> known_;  // values nodes or inputs make
  std::map<std::string, int> producer_;
  std::vector<std::string> scopes_;  // by node
  std::map<std::string, std::vector<int>> consumers_;
  std::map<std::string, std::string> aliases_;
  std::map<std::string, std::string> folded_;  // a folded transpose or reshape -> its initializer
  // Sizes computed from shapes (convert_shape_arithmetic), kBatch for the batch's.
  std::map<std::string, std::vector<int64_t>> shape_values_;
  static constexpr int64_t kBatch = std::numeric_limits<int64_t>::min();
  // A shape value that holds the batch -> a tensor whose dim 0 that is (for an Expand).
  std::map<std::string, std::string> batch_source_;
  std::set<std::string> used_blocks_;  // kWeightBlock, kWeightBiasBlock
  // A Pad's output -> what it pads and its padding per spatial dim (convert_pad).
  std::map<std::string, std::pair<std::string, std::vector<int64_t>>> zero_pads_;
  std::set<int> done_;               // nodes read already (constants) or part of a pattern
  std::map<int, Pattern> patterns_;  // by their last node
  std::vector<InputInfo> inputs_;
  std::map<std::string, SymShape> shapes_;
  std::vector<Unit> units_;
  std::set<std::string> leaves_, prefixes_;
  std::vector<std::string> notes_;
};

}  // namespace nns::onnx::detail
