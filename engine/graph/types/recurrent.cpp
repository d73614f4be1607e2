// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"
#include "engine/nn/rnn.h"

namespace nns::graph {
namespace {

nn::RNNOptions rnn_options(const Json& o) {
  nn::RNNOptions r;
  r.input_size = get_int(o, "input_size");
  r.hidden_size = get_int(o, "hidden_size");
  r.num_layers = get_int(o, "num_layers");
  r.bias = get_bool(o, "bias");
  r.batch_first = get_bool(o, "batch_first");
  r.dropout = get_float(o, "dropout");
  r.bidirectional = get_bool(o, "bidirectional");
  return r;
}

// [T, N, input_size] (batch_first: [N, T, input_size]) -> out [T, N, D * hidden_size] (or
// [N, T, ...]), h_n (and c_n) [num_layers * D, N, hidden_size].
Shapes infer_rnn(const Json& o, const Shapes& in, size_t states) {
  const SymShape& x = one_input(in);
  const nn::RNNOptions r = rnn_options(o);
  if (x.size() != 3 || x[2] != r.input_size)
    bad_input("in", x,
              std::string(r.batch_first ? "[N, T, input_size]" : "[T, N, input_size]") +
                  " with input_size = " + std::to_string(r.input_size));
  const int64_t directions = r.bidirectional ? 2 : 1;
  const int64_t batch = r.batch_first ? x[0] : x[1];
  Shapes out{{x[0], x[1], directions * r.hidden_size}};
  for (size_t k = 0; k < states; ++k)
    out.push_back({r.num_layers * directions, batch, r.hidden_size});
  return out;
}

// The options of torch.nn.RNN/LSTM/GRU in their constructor's order (RNN has nonlinearity
// after num_layers).
std::vector<OptionSpec> rnn_option_specs(bool nonlinearity) {
  std::vector<OptionSpec> specs{
      int_option("input_size", 1, "features of each step of the input", 1),
      int_option("hidden_size", 1, "features of the hidden state", 1),
      int_option("num_layers", 1, "recurrent layers stacked, each reading the one before", 1)};
  if (nonlinearity)
    specs.push_back(choice_option("nonlinearity", "tanh", {"tanh", "relu"},
                                  "the activation of the hidden state"));
  specs.push_back(bool_option("bias", true, "learn the biases bias_ih and bias_hh"));
  specs.push_back(bool_option("batch_first", false,
                              "the input and output are [N, T, features] (else [T, N, ...])"));
  specs.push_back(float_option("dropout", 0, "dropout between layers while training", 0, 1));
  specs.push_back(bool_option("bidirectional", false, "also run backwards in time"));
  return specs;
}

NodeType recurrent_type(std::string name, std::string description, bool nonlinearity,
                        std::vector<std::string> states,
                        std::function<nn::ModulePtr(const Json&)> make) {
  NodeType t;
  t.name = std::move(name);
  t.category = "Recurrent";
  t.description = std::move(description);
  t.options = rnn_option_specs(nonlinearity);
  t.inputs = in_port();
  t.outputs = {{"out", "every step's hidden state of the last layer"}};
  for (const std::string& s : states)
    t.outputs.push_back({s, s == "h_n" ? "the last hidden state of every layer and direction"
                                       : "the last cell state of every layer and direction"});
  t.make_module = std::move(make);
  const size_t count = states.size();
  t.infer_shapes = [count](const Json& o, const Shapes& in) { return infer_rnn(o, in, count); };
  return t;
}

}  // namespace

std::vector<NodeType> recurrent_types() {
  std::vector<NodeType> types;
  types.push_back(recurrent_type(
      "RNN", "an Elman RNN: h = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) at each step", true,
      {"h_n"}, [](const Json& o) {
        return std::make_shared<nn::RNN>(rnn_options(o), get_string(o, "nonlinearity"));
      }));
  types.push_back(recurrent_type(
      "LSTM", "long short-term memory: input, forget, cell and output gates at each step", false,
      {"h_n", "c_n"}, [](const Json& o) { return std::make_shared<nn::LSTM>(rnn_options(o)); }));
  types.push_back(recurrent_type(
      "GRU", "gated recurrent unit: reset and update gates at each step", false, {"h_n"},
      [](const Json& o) { return std::make_shared<nn::GRU>(rnn_options(o)); }));
  return types;
}

}  // namespace nns::graph
