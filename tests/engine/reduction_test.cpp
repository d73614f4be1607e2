// SPDX-License-Identifier: GPL-3.0-or-later
// Reductions and softmax: values, indices and gradients against PyTorch (fixtures
// "reduction"), gradients against finite differences, dims/keepdim handling and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/ops/ops.h"
#include "support/gradcheck.h"
#include "support/op_case.h"

namespace nns {
namespace {

using test::check_op_case;
using testing::gradcheck;
using V = std::vector<Tensor>;

// Sums run in a different order than PyTorch's cascade sum; max/min are exact.
constexpr double kRtolF32 = 2e-6, kAtolF32 = 1e-6;
constexpr double kRtolF64 = 1e-12, kAtolF64 = 1e-14;

void check_both_dtypes(const std::string& name, const test::OpFunction& fn, bool exact) {
  for (const char* tag : {"f32", "f64"}) {
    const bool f32 = std::string(tag) == "f32";
    check_op_case("reduction", name + "." + tag, fn, exact ? 0 : (f32 ? kRtolF32 : kRtolF64),
                  exact ? 0 : (f32 ? kAtolF32 : kAtolF64));
  }
}

TEST(Reduction, SumAndMeanMatchPyTorch) {
  const std::vector<std::pair<std::string, test::OpFunction>> cases = {
      {"sum", [](const V& x) { return x[0].sum(); }},
      {"sum.dim0", [](const V& x) { return x[0].sum({0}); }},
      {"sum.dims12",
       [](const V& x) {
         return sum(x[0], {1, 2});
       }},
      {"sum.dim-1.keepdim", [](const V& x) { return x[0].sum({-1}, true); }},
      {"sum.dims02.keepdim",
       [](const V& x) {
         return x[0].sum({0, 2}, true);
       }},
      {"sum.dims-1-3",
       [](const V& x) {
         return x[0].sum({-1, -3});
       }},
      {"sum.transposed", [](const V& x) { return x[0].transpose(0, 2).sum({1}); }},
      {"sum.zero_dim", [](const V& x) { return x[0].sum(); }},
      {"mean", [](const V& x) { return x[0].mean(); }},
      {"mean.dim1", [](const V& x) { return x[0].mean({1}); }},
      {"mean.dims01.keepdim",
       [](const V& x) {
         return mean(x[0], {0, 1}, true);
       }},
      {"mean.dim-1", [](const V& x) { return x[0].mean({-1}); }},
  };
  for (const auto& [name, fn] : cases) check_both_dtypes(name, fn, false);
  // Long sums: PyTorch accumulates float32 in float32, the engine in float64 (then rounds), so
  // float32 results differ by PyTorch's own rounding error.
  const std::vector<std::pair<std::string, test::OpFunction>> long_sums = {
      {"sum.large", [](const V& x) { return x[0].sum(); }},
      {"sum.large_dim0", [](const V& x) { return x[0].sum({0}); }},
      {"sum.large_dim1", [](const V& x) { return x[0].sum({1}); }},
  };
  for (const auto& [name, fn] : long_sums) {
    check_op_case("reduction", name + ".f32", fn, 2e-5, 2e-5);
    check_op_case("reduction", name + ".f64", fn, kRtolF64, kAtolF64);
  }
}

TEST(Reduction, MaxMinMatchPyTorch) {
  const std::vector<std::pair<std::string, test::OpFunction>> cases = {
      {"max", [](const V& x) { return x[0].max(); }},
      {"min", [](const V& x) { return x[0].min(); }},
      {"max.ties", [](const V& x) { return max(x[0]); }},  // the gradient is shared by ties
      {"min.ties", [](const V& x) { return min(x[0]); }},
      {"max.nan", [](const V& x) { return x[0].max(); }},  // NaN wins, and takes the gradient
      {"max.dim1", [](const V& x) { return max(x[0], 1).first; }},
      {"max.dim-1.keepdim", [](const V& x) { return max(x[0], -1, true).first; }},
      {"min.dim0", [](const V& x) { return min(x[0], 0).first; }},
      {"max.dim1.ties", [](const V& x) { return max(x[0], 1).first; }},
      {"min.dim0.ties", [](const V& x) { return min(x[0], 0).first; }},
      {"max.dim1.nan", [](const V& x) { return max(x[0], 1).first; }},
      {"max.dim0.transposed", [](const V& x) { return max(x[0].t(), 0).first; }},
  };
  for (const auto& [name, fn] : cases) check_both_dtypes(name, fn, true);
}

TEST(Reduction, IndicesMatchPyTorch) {
  const test::Fixtures& fx = test::Fixtures::load("reduction");
  for (const std::string tag : {"f32", "f64"}) {
    const std::vector<std::pair<std::string, Tensor>> sources = {
        {"x", fx.tensor("sum." + tag + ".in0").to_tensor()},
        {"ties", fx.tensor("max.ties." + tag + ".in0").to_tensor()},
        {"nan", fx.tensor("max.nan." + tag + ".in0").to_tensor()}};
    for (const auto& [src, t] : sources) {
      SCOPED_TRACE(src + "." + tag);
      const std::string suffix = src + "." + tag;
      EXPECT_TRUE(test::exactly_equal(max(t, 1).second, fx.tensor("max.indices." + suffix)));
      EXPECT_TRUE(test::exactly_equal(min(t, 0).second, fx.tensor("min.indices." + suffix)));
      EXPECT_TRUE(test::exactly_equal(t.argmax(), fx.tensor("argmax." + suffix)));
      EXPECT_TRUE(test::exactly_equal(argmax(t, 1), fx.tensor("argmax.dim1." + suffix)));
      EXPECT_TRUE(
          test::exactly_equal(t.argmax(0, true), fx.tensor("argmax.dim0.keepdim." + suffix)));
      EXPECT_TRUE(test::exactly_equal(argmin(t, -1), fx.tensor("argmin.dim-1." + suffix)));
    }
  }
}

TEST(Reduction, VarMatchesPyTorch) {
  const std::vector<std::pair<std::string, test::OpFunction>> cases = {
      {"var.dim1", [](const V& x) { return x[0].var({1}); }},
      {"var.dims02.keepdim",
       [](const V& x) {
         return x[0].var({0, 2}, 1, true);
       }},
      {"var.all", [](const V& x) { return var(x[0]); }},
      {"var.dim-1.correction0", [](const V& x) { return var(x[0], {-1}, 0); }},
      {"var.all.correction0",
       [](const V& x) {
         return var(x[0], {0, 1, 2}, 0);
       }},
      {"var.single", [](const V& x) { return x[0].var({0}); }},  // one element: NaN
  };
  for (const auto& [name, fn] : cases) check_both_dtypes(name, fn, false);
}

TEST(Reduction, SoftmaxMatchesPyTorch) {
  for (int64_t d : {0, 1, 2, -1}) {
    const std::string dim = std::to_string(d);
    check_both_dtypes(
        "softmax.dim" + dim, [d](const V& x) { return x[0].softmax(d); }, false);
    check_both_dtypes(
        "log_softmax.dim" + dim, [d](const V& x) { return log_softmax(x[0], d); }, false);
  }
  const std::vector<std::pair<std::string, test::OpFunction>> cases = {
      {"softmax.large_values", [](const V& x) { return x[0].softmax(-1); }},
      {"log_softmax.large_values", [](const V& x) { return x[0].log_softmax(-1); }},
      {"softmax.masked", [](const V& x) { return x[0].softmax(1); }},
      {"log_softmax.masked", [](const V& x) { return x[0].log_softmax(1); }},
      {"softmax.transposed", [](const V& x) { return x[0].t().softmax(1); }},
      {"softmax.zero_dim", [](const V& x) { return x[0].softmax(0); }},
      {"softmax.long_rows", [](const V& x) { return x[0].softmax(1); }},
  };
  for (const auto& [name, fn] : cases) check_both_dtypes(name, fn, false);
}

TEST(Reduction, IntegerAndEmptyInputsMatchPyTorch) {
  const std::vector<std::pair<std::string, test::OpFunction>> cases = {
      {"sum.int64", [](const V& x) { return x[0].sum(); }},
      {"sum.int64.dim0", [](const V& x) { return x[0].sum({0}); }},
      {"sum.bool", [](const V& x) { return x[0].sum(); }},
      {"max.int64", [](const V& x) { return x[0].max(); }},
      {"max.int64.dim1", [](const V& x) { return max(x[0], 1).first; }},
      {"min.bool", [](const V& x) { return x[0].min(); }},
      {"sum.empty", [](const V& x) { return x[0].sum(); }},
      {"sum.empty.dim0", [](const V& x) { return x[0].sum({0}); }},
      {"mean.empty", [](const V& x) { return x[0].mean(); }},
  };
  for (const auto& [name, fn] : cases) check_op_case("reduction", name, fn);
}

// ---- Gradients against finite differences -------------------------------------------------

Tensor r64(const Shape& shape) {
  return randn(shape, kFloat64);
}

TEST(Reduction, GradcheckSumMean) {
  manual_seed(11);
  const Tensor x = r64({2, 3, 4});
  EXPECT_TRUE(gradcheck([](const V& v) { return v[0].sum(); }, {x}));
  EXPECT_TRUE(gradcheck([](const V& v) { return v[0].mean(); }, {x}));
  for (const Shape& dims : std::vector<Shape>{{0}, {1}, {-1}, {0, 2}, {-1, -3}, {0, 1, 2}}) {
    for (bool keepdim : {false, true}) {
      SCOPED_TRACE(shape_str(dims) + (keepdim ? " keepdim" : ""));
      EXPECT_TRUE(gradcheck([&](const V& v) { return v[0].sum(dims, keepdim); }, {x}));
      EXPECT_TRUE(gradcheck([&](const V& v) { return v[0].mean(dims, keepdim); }, {x}));
    }
  }
  EXPECT_TRUE(gradcheck([](const V& v) { return v[0].t().sum({1}); }, {r64({3, 5})}));
  EXPECT_TRUE(gradcheck([](const V& v) { return v[0].sum(); }, {r64({})}));
}

TEST(Reduction, GradcheckMaxMin) {
  manual_seed(12);
  const Tensor x = r64({3, 4, 2});
  EXPECT_TRUE(gradcheck([](const V& v) { return v[0].max(); }, {x}));
  EXPECT_TRUE(gradcheck([](const V& v) { return v[0].min(); }, {x}));
  for (int64_t d : {0, 1, 2, -1}) {
    for (bool keepdim : {false, true}) {
      SCOPED_TRACE(std::to_string(d) + (keepdim ? " keepdim" : ""));
      EXPECT_TRUE(gradcheck([&](const V& v) { return max(v[0], d, keepdim).first; }, {x}));
      EXPECT_TRUE(gradcheck([&](const V& v) { return min(v[0], d, keepdim).first; }, {x}));
    }
  }
  EXPECT_TRUE(gradcheck([](const V& v) { return max(v[0], 0).first; }, {r64({})}));
}

TEST(Reduction, GradcheckVar) {
  manual_seed(13);
  const Tensor x = r64({3, 4, 2});
  EXPECT_TRUE(gradcheck([](const V& v) { return var(v[0]); }, {x}));
  EXPECT_TRUE(gradcheck([](const V& v) { return var(v[0], 0); }, {x}));
  for (const Shape& dims : std::vector<Shape>{{0}, {-1}, {0, 2}}) {
    for (int64_t correction : {0, 1, 2}) {
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(shape_str(dims) + " correction " + std::to_string(correction));
        EXPECT_TRUE(
            gradcheck([&](const V& v) { return v[0].var(dims, correction, keepdim); }, {x}));
      }
    }
  }
}

TEST(Reduction, GradcheckSoftmax) {
  manual_seed(14);
  const Tensor x = r64({3, 4, 2});
  for (int64_t d : {0, 1, 2, -1, -2}) {
    SCOPED_TRACE(d);
    EXPECT_TRUE(gradcheck([d](const V& v) { return v[0].softmax(d); }, {x}));
    EXPECT_TRUE(gradcheck([d](const V& v) { return v[0].log_softmax(d); }, {x}));
  }
  EXPECT_TRUE(gradcheck([](const V& v) { return v[0].t().softmax(0); }, {r64({3, 5})}));
  EXPECT_TRUE(gradcheck([](const V& v) { return (v[0] * 30.0).log_softmax(1); }, {r64({2, 6})}));
}

// ---- Semantics --------------------------------------------------------------------------------

TEST(Reduction, MaxGradientIsSharedByTies) {
  Tensor x = tensor({1.0, 3.0, 3.0, 2.0}, TensorOptions(kFloat64).requires_grad(true));
  x.max().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0.5, 0.5, 0}));
  Tensor y =
      tensor({{1.0, 3.0, 3.0}, {5.0, 5.0, 0.0}}, TensorOptions(kFloat64).requires_grad(true));
  auto [values, indices] = max(y, 1);
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));  // the first maximum
  values.sum().backward();
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{0, 1, 0, 1, 0, 0}));
}

TEST(Reduction, ShapesAndDtypes) {
  const Tensor x = ones({2, 3, 4});
  EXPECT_EQ(x.sum().dim(), 0);
  EXPECT_EQ(x.sum({1}).sizes(), (Shape{2, 4}));
  EXPECT_EQ(x.sum({1}, true).sizes(), (Shape{2, 1, 4}));
  EXPECT_EQ(x.sum({}).sizes(), (Shape{}));  // an empty dim list reduces everything
  EXPECT_EQ(x.mean({0, -1}).sizes(), (Shape{3}));
  EXPECT_EQ(max(x, -1, true).second.sizes(), (Shape{2, 3, 1}));
  EXPECT_EQ(max(x, -1).second.dtype(), kInt64);
  EXPECT_EQ(x.argmax().sizes(), (Shape{}));
  EXPECT_EQ(ones({3}, kInt64).sum().dtype(), kInt64);
  EXPECT_EQ(ones({3}, kBool).sum().dtype(), kInt64);
  EXPECT_EQ(ones({3}, kFloat64).var({0}).dtype(), kFloat64);
  EXPECT_EQ(x.softmax(1).sizes(), x.sizes());
  // A reduced tensor is not a view: in-place ops on it are fine.
  Tensor s = randn({2, 3}, TensorOptions().requires_grad(true)).sum({0});
  s.mul_(2.0);
  EXPECT_EQ(s.grad_fn()->name(), "MulBackward0");
}

TEST(Reduction, GradFnNamesMatchPyTorch) {
  const Tensor m = randn({2, 3}, TensorOptions().requires_grad(true));
  auto name = [](const Tensor& t) { return t.grad_fn()->name(); };
  EXPECT_EQ(name(m.sum()), "SumBackward0");
  EXPECT_EQ(name(m.sum({0})), "SumBackward1");
  EXPECT_EQ(name(m.mean()), "MeanBackward0");
  EXPECT_EQ(name(m.mean({0})), "MeanBackward1");
  EXPECT_EQ(name(m.max()), "MaxBackward1");
  EXPECT_EQ(name(max(m, 0).first), "MaxBackward0");
  EXPECT_EQ(name(m.min()), "MinBackward1");
  EXPECT_EQ(name(min(m, 0).first), "MinBackward0");
  EXPECT_EQ(name(m.var({0})), "VarBackward0");
  EXPECT_EQ(name(var(m)), "VarBackward0");
  EXPECT_EQ(name(m.softmax(0)), "SoftmaxBackward0");
  EXPECT_EQ(name(m.log_softmax(0)), "LogSoftmaxBackward0");
  EXPECT_FALSE(max(m, 0).second.requires_grad());
  EXPECT_FALSE(m.argmax().requires_grad());
}

TEST(Reduction, BadDimsThrowIndexError) {
  const Tensor x = ones({2, 3});
  try {
    x.sum({2});
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(),
                 "sum: dimension 2 is out of range for a tensor with 2 dimension(s) (expected a "
                 "dim in [-2, 1])");
  }
  try {
    x.sum({0, -2});
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "sum: dim 0 appears multiple times in the list of dims [0, -2]");
  }
  EXPECT_THROW(x.mean({-3}), IndexError);
  EXPECT_THROW(max(x, 2), IndexError);
  EXPECT_THROW(x.argmax(-3), IndexError);
  EXPECT_THROW(x.var({5}), IndexError);
  EXPECT_THROW(x.softmax(2), IndexError);
  EXPECT_THROW(x.log_softmax(-3), IndexError);
}

TEST(Reduction, BadInputThrowsTypedErrors) {
  try {
    ones({0}).max();
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("max(): Expected reduction dim to be specified for "
                                         "input.numel() == 0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ones({0, 3}).argmax(), ShapeError);
  EXPECT_THROW(max(ones({3, 0}), 1), ShapeError);
  try {
    ones({2}, kInt64).mean();
    FAIL() << "expected DtypeError";
  } catch (const DtypeError& e) {
    EXPECT_NE(std::string(e.what()).find("mean(): could not infer output dtype"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ones({2}, kInt64).var({0}), DtypeError);
  EXPECT_THROW(ones({2}, kInt64).softmax(0), DtypeError);
  EXPECT_THROW(ones({2}).to(kFloat16).sum(), DtypeError);
}

TEST(Reduction, SoftmaxIsStable) {
  const Tensor x = tensor({1000.0, 1001.0, -1000.0}, kFloat64);
  const std::vector<double> p = x.softmax(0).to_vector<double>();
  EXPECT_NEAR(p[0], 1 / (1 + std::exp(1.0)), 1e-15);
  EXPECT_NEAR(p[1], 1 / (1 + std::exp(-1.0)), 1e-15);
  EXPECT_EQ(p[2], 0.0);
  const std::vector<double> lp = x.log_softmax(0).to_vector<double>();
  EXPECT_NEAR(lp[2], -2001.0 - std::log1p(std::exp(-1.0)), 1e-9);
}

}  // namespace
}  // namespace nns
