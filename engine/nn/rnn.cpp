// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/rnn.h"

#include <cmath>

#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "engine/ops/indexing.h"
#include "engine/ops/linalg.h"
#include "engine/ops/nn_ops.h"
#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns::nn {

RNNBase::RNNBase(Mode mode, const RNNOptions& options, const std::string& name)
    : Module(name), mode_(mode), options_(options) {
  const RNNOptions& o = options_;
  if (o.input_size < 1 || o.hidden_size < 1 || o.num_layers < 1)
    throw ValueError(name + ": input_size, hidden_size and num_layers must be >= 1, got " +
                     std::to_string(o.input_size) + ", " + std::to_string(o.hidden_size) + " and " +
                     std::to_string(o.num_layers));
  if (o.dropout < 0 || o.dropout > 1)
    throw ValueError(name + ": dropout must be in [0, 1], got " + python_float(o.dropout));
  const int64_t directions = o.bidirectional ? 2 : 1;
  const int64_t g = gates() * o.hidden_size;
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    const int64_t in = layer == 0 ? o.input_size : o.hidden_size * directions;
    for (int64_t d = 0; d < directions; ++d) {
      const std::string suffix = "_l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
      Cell cell;
      cell.weight_ih = register_parameter("weight_ih" + suffix, Parameter(empty({g, in})));
      cell.weight_hh =
          register_parameter("weight_hh" + suffix, Parameter(empty({g, o.hidden_size})));
      if (o.bias) {
        cell.bias_ih = register_parameter("bias_ih" + suffix, Parameter(empty({g})));
        cell.bias_hh = register_parameter("bias_hh" + suffix, Parameter(empty({g})));
      }
      cells_.push_back(cell);
    }
  }
  reset_parameters();
}

int64_t RNNBase::gates() const {
  switch (mode_) {
    case Mode::LSTM:
      return 4;
    case Mode::GRU:
      return 3;
    default:
      return 1;
  }
}

void RNNBase::reset_parameters() {
  const double bound = 1 / std::sqrt(static_cast<double>(options_.hidden_size));
  std::vector<Tensor> params = parameters();
  for (Tensor& p : params) init::uniform_(p, -bound, bound);
}

std::vector<std::string> RNNBase::gate_names() const {
  switch (mode_) {
    case Mode::LSTM:
      return {"input", "forget", "cell", "output"};
    case Mode::GRU:
      return {"reset", "update", "new"};
    default:
      return {};
  }
}

Tensor RNNBase::run_direction(const Cell& cell, const Tensor& x, bool reverse, Tensor& h, Tensor& c,
                              std::vector<std::vector<Tensor>>* gates_seen) const {
  const int64_t steps = x.size(0);
  const int64_t hidden = options_.hidden_size;
  // Every step's input projection in one product: [T, N, gates * H]. RNN and LSTM add the
  // hidden projection whole, so both biases go in here and each step is one addmm; GRU scales
  // part of the hidden projection (r * (h W_hn^T + b_hn)), so its bias_hh stays per step.
  const bool gru = mode_ == Mode::GRU;
  const Tensor bias = !gru && cell.bias_hh.defined() ? cell.bias_ih + cell.bias_hh : cell.bias_ih;
  const Tensor projected = linear(x, cell.weight_ih, bias);
  const Tensor weight_hh_t = cell.weight_hh.t();
  // The steps' projections as views with one backward (unbind), not a select each.
  const std::vector<Tensor> step_inputs = unbind(projected, 0);
  std::vector<Tensor> outputs(static_cast<size_t>(steps));
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = reverse ? steps - 1 - k : k;
    const Tensor& xi = step_inputs[static_cast<size_t>(t)];
    switch (mode_) {
      case Mode::RNNTanh:
        h = addmm(xi, h, weight_hh_t).tanh();
        break;
      case Mode::RNNRelu:
        h = addmm(xi, h, weight_hh_t).relu();
        break;
      case Mode::LSTM: {
        // Gates i, f, g, o and the new c and h in one fused step (nn_ops.h).
        const std::vector<Tensor> next = lstm_cell(addmm(xi, h, weight_hh_t), c);
        h = next[0];
        c = next[1];
        if (gates_seen) {
          for (int64_t k = 0; k < 4; ++k) {
            (*gates_seen)[static_cast<size_t>(k)].push_back(next[2].narrow(1, k * hidden, hidden));
          }
        }
        break;
      }
      case Mode::GRU: {
        Tensor hh = mm(h, weight_hh_t);
        if (cell.bias_hh.defined()) hh = hh + cell.bias_hh;
        const Tensor rz = (xi.narrow(1, 0, 2 * hidden) + hh.narrow(1, 0, 2 * hidden)).sigmoid();
        const Tensor z = rz.narrow(1, hidden, hidden);
        const Tensor n = (xi.narrow(1, 2 * hidden, hidden) +
                          rz.narrow(1, 0, hidden) * hh.narrow(1, 2 * hidden, hidden))
                             .tanh();
        h = n + z * (h - n);  // (1 - z) * n + z * h
        if (gates_seen) {
          (*gates_seen)[0].push_back(rz.narrow(1, 0, hidden).detach());
          (*gates_seen)[1].push_back(z.detach());
          (*gates_seen)[2].push_back(n.detach());
        }
        break;
      }
    }
    outputs[static_cast<size_t>(t)] = h;
  }
  return stack(outputs, 0);
}

std::vector<Tensor> RNNBase::forward(const std::vector<Tensor>& inputs) {
  if (inputs.size() != 1)
    throw ValueError(name() + ": expected one input (initial states are zero), got " +
                     std::to_string(inputs.size()));
  const RNNOptions& o = options_;
  Tensor x = inputs[0];
  if (x.dim() != 3 || x.size(2) != o.input_size)
    throw ShapeError(name() + ": expected an input of shape [" +
                     (o.batch_first ? "N, T, " : "T, N, ") + std::to_string(o.input_size) +
                     "], got " + shape_str(x.shape()));
  if (o.batch_first) x = x.transpose(0, 1);
  const int64_t batch = x.size(1);
  const int64_t directions = o.bidirectional ? 2 : 1;
  const TensorOptions t = TensorOptions(x.dtype()).device(x.device());
  std::vector<Tensor> h_n, c_n;
  const std::vector<std::string> names = gate_names();
  std::vector<std::vector<Tensor>> seen(names.size());
  std::vector<std::vector<Tensor>>* gates_seen = record_gates && !names.empty() ? &seen : nullptr;
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    if (layer > 0 && o.dropout > 0) x = dropout(x, o.dropout, is_training());
    std::vector<Tensor> outs;
    for (int64_t d = 0; d < directions; ++d) {
      Tensor h = zeros({batch, o.hidden_size}, t);
      Tensor c = mode_ == Mode::LSTM ? zeros({batch, o.hidden_size}, t) : Tensor();
      outs.push_back(run_direction(cells_[static_cast<size_t>(layer * directions + d)], x, d == 1,
                                   h, c, gates_seen));
      h_n.push_back(h);
      if (mode_ == Mode::LSTM) c_n.push_back(c);
    }
    x = directions == 1 ? outs[0] : cat(outs, 2);
  }
  if (gates_seen) {
    last_gates.clear();
    for (size_t k = 0; k < names.size(); ++k) last_gates.emplace_back(names[k], cat(seen[k], 0));
  }
  std::vector<Tensor> out{o.batch_first ? x.transpose(0, 1) : x, stack(h_n, 0)};
  if (mode_ == Mode::LSTM) out.push_back(stack(c_n, 0));
  return out;
}

Tensor RNNBase::forward(const Tensor& input) {
  return forward(std::vector<Tensor>{input}).at(0);
}

std::string RNNBase::extra_repr() const {
  const RNNOptions& o = options_;
  std::string s = std::to_string(o.input_size) + ", " + std::to_string(o.hidden_size);
  if (o.num_layers != 1) s += ", num_layers=" + std::to_string(o.num_layers);
  if (!o.bias) s += ", bias=False";
  if (o.batch_first) s += ", batch_first=True";
  if (o.dropout != 0) s += ", dropout=" + python_float(o.dropout);
  if (o.bidirectional) s += ", bidirectional=True";
  return s;
}

namespace {

RNNBase::Mode rnn_mode(const std::string& nonlinearity) {
  if (nonlinearity == "tanh") return RNNBase::Mode::RNNTanh;
  if (nonlinearity == "relu") return RNNBase::Mode::RNNRelu;
  throw ValueError("RNN: unknown nonlinearity '" + nonlinearity + "' (tanh or relu)");
}

}  // namespace

RNN::RNN(const RNNOptions& options, const std::string& nonlinearity)
    : RNNBase(rnn_mode(nonlinearity), options, "RNN") {}

LSTM::LSTM(const RNNOptions& options) : RNNBase(Mode::LSTM, options, "LSTM") {}

GRU::GRU(const RNNOptions& options) : RNNBase(Mode::GRU, options, "GRU") {}

}  // namespace nns::nn
