// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The recurrent layers of torch.nn: RNN (tanh or relu), LSTM and GRU, with PyTorch's options,
// parameter names and order (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, then the
// reverse direction's ..._l0_reverse, then layer 1), initialisation (every parameter uniform in
// +-1/sqrt(hidden_size), in that order) and repr. The input is [T, N, input_size], or
// [N, T, input_size] with batch_first; initial states are zero. forward returns
// {output, h_n} (and c_n for LSTM): output [T, N, D * hidden_size] (batch_first: [N, T, ...]),
// h_n and c_n [num_layers * D, N, hidden_size], D = 2 when bidirectional.
//
// Built from differentiable ops, so the backward through time is autograd's. The input
// projection of every step is one matrix product per layer and direction; each step adds the
// hidden projection.
//
//   auto lstm = std::make_shared<nns::nn::LSTM>(
//       nns::nn::RNNOptions{.input_size = 8, .hidden_size = 16, .batch_first = true});
//   auto out = lstm->forward({x});   // out[0]: [N, T, 16], out[1] = h_n, out[2] = c_n
#include <string>
#include <vector>

#include "engine/nn/module.h"

namespace nns::nn {

struct RNNOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;  // between layers, while training
  bool bidirectional = false;
};

// RNN, LSTM and GRU share everything but the cell.
class RNNBase : public Module {
 public:
  enum class Mode { RNNTanh, RNNRelu, LSTM, GRU };
  RNNBase(Mode mode, const RNNOptions& options, const std::string& name);

  // Every parameter uniform in +-1/sqrt(hidden_size), in registration order, as PyTorch.
  void reset_parameters();
  const RNNOptions& options() const { return options_; }
  Mode mode() const { return mode_; }

  using Module::forward;
  // {output, h_n} or, for LSTM, {output, h_n, c_n}.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) override;
  // The output alone.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  // The names of the gates, in PyTorch's order within weight_ih: LSTM input, forget, cell,
  // output; GRU reset, update, new; none for RNN.
  std::vector<std::string> gate_names() const;
  // While on, each forward keeps its gates' activations, detached, in last_gates (one tensor
  // per gate name, [steps * N * layers * directions, H]: every step of every layer and
  // direction): the sigmoid gates in (0, 1), the cell or new gate in (-1, 1), for probes that
  // show how saturated the gates are. Off by default; set and read on the thread that runs
  // the model.
  bool record_gates = false;
  std::vector<std::pair<std::string, Tensor>> last_gates;

 private:
  // The weights of one layer and direction.
  struct Cell {
    Tensor weight_ih, weight_hh, bias_ih, bias_hh;
  };
  // One direction of one layer over x [T, N, in]: the outputs [T, N, H], and the last h (and c).
  // With `gates`, each step's gate activations are appended to gates[k] for gate k.
  Tensor run_direction(const Cell& cell, const Tensor& x, bool reverse, Tensor& h, Tensor& c,
                       std::vector<std::vector<Tensor>>* gates) const;
  int64_t gates() const;

  Mode mode_;
  RNNOptions options_;
  std::vector<Cell> cells_;  // layer-major: layer 0 forward, layer 0 reverse, layer 1, ...
};

class RNN : public RNNBase {
 public:
  // nonlinearity: "tanh" or "relu".
  explicit RNN(const RNNOptions& options, const std::string& nonlinearity = "tanh");
};

class LSTM : public RNNBase {
 public:
  explicit LSTM(const RNNOptions& options);
};

class GRU : public RNNBase {
 public:
  explicit GRU(const RNNOptions& options);
};

}  // namespace nns::nn
