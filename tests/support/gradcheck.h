// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one gradient check every differentiable op goes through: the Jacobian that backward
// computes against central finite differences, in float64.
//
//   EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& x) { return nns::tanh(x[0]); },
//                         {nns::randn({3, 4}, nns::kFloat64)}));
//
// Floating inputs are made leaves that require grad; others (indices, masks) are passed as
// they are. The function may return any shape; every output element is checked.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "engine/ops/ops.h"

namespace nns::testing {

using Function = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

::testing::AssertionResult gradcheck(const Function& fn, std::vector<Tensor> inputs,
                                     GradcheckOptions options = {});

}  // namespace nns::testing
