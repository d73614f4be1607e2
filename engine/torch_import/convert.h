// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to the PyTorch import (torch_import.h): how one traced call (a call_function or
// call_method node of a torch.fx graph) becomes nodes. Each op family is a file of this folder
// with one converter; trace_reader.cpp asks them in turn.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/node_types.h"
#include "engine/graph/spec.h"

namespace nns::torch_import::detail {

using graph::Json;
using graph::PortRef;
using graph::SymShape;

// A traced value as the project sees it.
struct Value {
  enum class Kind { Tensor, Number, Tuple, None, Other };
  Kind kind = Kind::Other;
  PortRef port;    // Tensor: the output port that makes it
  SymShape shape;  // Tensor: its shape, -1 where it is the batch size
  // Number: its value at the tracer's two batch sizes (equal for a constant; x.size(0) differs).
  double first = 0, second = 0;
  std::vector<Value> items;  // Tuple
  Json raw;                  // Other: the argument as the tracer wrote it (a slice, Ellipsis, ...)
  // Number (or a tuple of them): a tensor whose dims it was read from (x.shape[0] -> x), so a
  // batch-sized number can name the batch it is (x.expand(n, -1) takes n from there).
  std::optional<PortRef> read_from;

  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_number() const { return kind == Kind::Number; }
  bool is_constant() const { return kind == Kind::Number && first == second; }
};

// One call of a function or method: "operator.add", "torch.flatten", "F.relu", or a method's
// name ("view") with the tensor as args[0].
struct Call {
  std::string target;
  bool method = false;
  std::vector<Value> args;
  std::map<std::string, Value> kwargs;

  // The positional argument i, else the keyword `name`, else nullptr.
  const Value* arg(size_t i, const std::string& name) const;
};

// What a converter may do to the graph it is adding to.
class Emitter {
 public:
  virtual ~Emitter() = default;
  // Adds a functional node of `type` with its options and inputs (wired to the type's input
  // ports in order) and returns its output as a tensor value of the given shape.
  virtual Value add(const std::string& type, Json options, const std::vector<Value>& inputs,
                    const SymShape& shape) = 0;
  // A Constant node's output.
  virtual Value constant(double value) = 0;
  // The traced result's shape (what PyTorch gave), -1 at the batch.
  virtual SymShape result_shape() const = 0;
  // The shapes of a traced result that is a tuple of tensors (x.chunk(2)).
  virtual std::vector<SymShape> result_shapes() const = 0;
  // Refuses the import: the message names the op, the module path and the source line.
  [[noreturn]] virtual void refuse(const std::string& why) = 0;
  // A note for the user (once per text).
  virtual void note(const std::string& text) = 0;
};

// nullopt: not this family's op.
std::optional<Value> convert_arithmetic(const Call& call, Emitter& out);
std::optional<Value> convert_shape(const Call& call, Emitter& out);

// An integer argument (a constant from the code, or a folded size that does not depend on
// the batch); refuses otherwise, naming `what`.
int64_t constant_int(const Value& v, const std::string& what, Emitter& out);
// A list of integers from varargs (x.view(a, b)) or one list argument (x.view([a, b])),
// starting at args[first].
std::vector<Value> int_list(const Call& call, size_t first, const std::string& name);

}  // namespace nns::torch_import::detail
