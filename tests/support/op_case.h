// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Replays one op case that make_fixtures.py's op_case() recorded with PyTorch: runs fn on the
// recorded inputs (floating ones as leaves that require grad) and compares the output, its
// grad_fn name and, after backward of the recorded output gradient, every input gradient.
//
//   check_op_case("linalg", "mm", [](const std::vector<Tensor>& x) { return mm(x[0], x[1]); });
//
// With rtol = atol = 0 every value must match bit for bit; products and normalizations,
// whose summation order differs from PyTorch's, pass tolerances as torch.allclose does.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/ops/ops.h"
#include "support/fixtures.h"

namespace nns::test {

using OpFunction = std::function<Tensor(const std::vector<Tensor>&)>;

// The recorded inputs of case `name`, floating ones as fresh leaves that require grad.
inline std::vector<Tensor> op_case_inputs(const Fixtures& fx, const std::string& name) {
  std::vector<Tensor> inputs;
  for (int i = 0; fx.has_tensor(name + ".in" + std::to_string(i)); ++i) {
    Tensor t = fx.tensor(name + ".in" + std::to_string(i)).to_tensor();
    if (t.is_floating_point()) t.requires_grad_(true);
    inputs.push_back(t);
  }
  return inputs;
}

inline ::testing::AssertionResult matches(const Tensor& actual, const FixtureTensor& expected,
                                          double rtol, double atol) {
  return rtol == 0 && atol == 0 ? exactly_equal(actual, expected)
                                : all_close(actual, expected, rtol, atol);
}

inline void check_op_case(const std::string& area, const std::string& name, const OpFunction& fn,
                          double rtol = 0, double atol = 0) {
  SCOPED_TRACE("op case " + area + "/" + name);
  const Fixtures& fx = Fixtures::load(area);
  std::vector<Tensor> inputs = op_case_inputs(fx, name);
  ASSERT_FALSE(inputs.empty()) << "no inputs recorded for " << name;
  Tensor out = fn(inputs);
  EXPECT_TRUE(matches(out.detach(), fx.tensor(name + ".out"), rtol, atol)) << name << ".out";
  EXPECT_EQ(out.grad_fn() ? out.grad_fn()->name() : std::string(), fx.string(name + ".grad_fn"));
  if (!fx.has_tensor(name + ".grad_out")) return;
  out.backward(fx.tensor(name + ".grad_out").to_tensor());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string key = name + ".grad" + std::to_string(i);
    if (!fx.has_tensor(key)) {
      EXPECT_FALSE(inputs[i].grad().defined()) << key << " should have no gradient";
      continue;
    }
    ASSERT_TRUE(inputs[i].grad().defined()) << key << " is missing";
    EXPECT_TRUE(matches(inputs[i].grad(), fx.tensor(key), rtol, atol)) << key;
  }
}

}  // namespace nns::test
