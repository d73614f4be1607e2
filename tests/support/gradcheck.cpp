// SPDX-License-Identifier: GPL-3.0-or-later
#include "support/gradcheck.h"

#include <cmath>
#include <sstream>

namespace nns::testing {

::testing::AssertionResult gradcheck(const Function& fn, std::vector<Tensor> inputs,
                                     GradcheckOptions options) {
  std::vector<size_t> checked;  // indices of the inputs we differentiate against
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].is_floating_point()) continue;
    if (inputs[i].dtype() != kFloat64) {
      return ::testing::AssertionFailure()
             << "gradcheck: input " << i << " is " << dtype_name(inputs[i].dtype())
             << "; finite differences need float64 inputs";
    }
    // A fresh contiguous leaf, so that perturbing it touches nothing else.
    inputs[i] = inputs[i].detach().clone().requires_grad_(true);
    checked.push_back(i);
  }
  if (checked.empty()) return ::testing::AssertionFailure() << "gradcheck: no floating inputs";

  Tensor out = fn(inputs);
  if (!out.requires_grad()) {
    return ::testing::AssertionFailure() << "gradcheck: the output does not require grad";
  }
  const int64_t n_out = out.numel();
  std::vector<Tensor> leaves;
  for (size_t i : checked) leaves.push_back(inputs[i]);

  // Analytical Jacobian, one row per output element, by backward of a unit gradient.
  std::vector<std::vector<std::vector<double>>> analytic(n_out);
  for (int64_t j = 0; j < n_out; ++j) {
    std::vector<double> unit(n_out, 0.0);
    unit[j] = 1.0;
    Tensor g = from_vector(unit, out.sizes()).to(out.dtype());
    std::vector<Tensor> grads = autograd::grad({out}, leaves, {g}, /*retain_graph=*/true,
                                               /*allow_unused=*/true);
    for (size_t k = 0; k < leaves.size(); ++k) {
      analytic[j].push_back(grads[k].defined() ? grads[k].to_vector<double>()
                                               : std::vector<double>(leaves[k].numel(), 0.0));
    }
  }

  // Numerical Jacobian by central differences, perturbing one input element at a time.
  std::ostringstream failures;
  int reported = 0;
  for (size_t k = 0; k < leaves.size(); ++k) {
    double* data = leaves[k].data_ptr<double>();
    for (int64_t e = 0; e < leaves[k].numel(); ++e) {
      const double saved = data[e];
      std::vector<double> plus, minus;
      {
        NoGradGuard no_grad;
        data[e] = saved + options.eps;
        plus = fn(inputs).to_vector<double>();
        data[e] = saved - options.eps;
        minus = fn(inputs).to_vector<double>();
        data[e] = saved;
      }
      for (int64_t j = 0; j < n_out; ++j) {
        const double numeric = (plus[j] - minus[j]) / (2 * options.eps);
        const double a = analytic[j][k][e];
        if (std::abs(a - numeric) > options.atol + options.rtol * std::abs(numeric)) {
          if (reported++ < 8) {
            failures << "\n  d out[" << j << "] / d input" << checked[k] << "[" << e
                     << "]: backward " << a << ", finite difference " << numeric;
          }
        }
      }
    }
  }
  if (reported > 0) {
    return ::testing::AssertionFailure()
           << "gradcheck: " << reported << " Jacobian entries differ (grad_fn "
           << (out.grad_fn() ? out.grad_fn()->name() : "none") << "):" << failures.str();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace nns::testing
