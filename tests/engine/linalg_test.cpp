// SPDX-License-Identifier: GPL-3.0-or-later
// Matrix products: mm, bmm, addmm, matmul's cases and linear, against PyTorch's values and
// grad_fn names (tests/fixtures/linalg.json), finite differences, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/ops/ops.h"
#include "support/gradcheck.h"
#include "support/op_case.h"
#include "support/test_util.h"

namespace nns {
namespace {

using test::error_of;
using test::values;

using testing::gradcheck;
using Inputs = std::vector<Tensor>;

// Float32 products sum in a different order than PyTorch's BLAS.
constexpr double kRtol = 1e-5, kAtol = 1e-5;

Tensor rnd(const Shape& shape) {
  return randn(shape, kFloat64);
}

TEST(Linalg, MmValues) {
  Tensor a = tensor({{1, 2, 3}, {4, 5, 6}});
  Tensor b = tensor({{1, 0}, {0, 1}, {2, -1}});
  Tensor c = mm(a, b);
  EXPECT_EQ(c.sizes(), (Shape{2, 2}));
  EXPECT_EQ(values(c), (std::vector<double>{7, -1, 16, -1}));
  EXPECT_EQ(values(a.mm(b)), values(c));
  EXPECT_EQ(values(a.matmul(b)), values(c));
}

TEST(Linalg, MatchesPyTorch) {
  using test::check_op_case;
  auto two = [](Tensor (*f)(const Tensor&, const Tensor&)) {
    return [f](const Inputs& x) { return f(x[0], x[1]); };
  };
  check_op_case("linalg", "mm", two(mm), kRtol, kAtol);
  check_op_case("linalg", "mm_large", two(mm), kRtol, kAtol);
  check_op_case(
      "linalg", "mm_transposed", [](const Inputs& x) { return mm(x[0].t(), x[1].t()); }, kRtol,
      kAtol);
  for (const char* name :
       {"matmul_1d_1d", "matmul_2d_1d", "matmul_1d_2d", "matmul_3d_2d", "matmul_3d_1d",
        "matmul_2d_3d", "matmul_1d_3d", "matmul_3d_3d", "matmul_4d_3d_broadcast"}) {
    check_op_case("linalg", name, two(matmul), kRtol, kAtol);
  }
  check_op_case(
      "linalg", "matmul_permuted_3d_2d",
      [](const Inputs& x) { return matmul(x[0].transpose(1, 2), x[1]); }, kRtol, kAtol);
  check_op_case("linalg", "bmm", two(bmm), kRtol, kAtol);
  check_op_case(
      "linalg", "addmm", [](const Inputs& x) { return addmm(x[0], x[1], x[2]); }, kRtol, kAtol);
  check_op_case(
      "linalg", "addmm_broadcast",
      [](const Inputs& x) { return addmm(x[0], x[1], x[2], 0.5, 2.0); }, kRtol, kAtol);
  for (const char* name : {"linear_2d", "linear_3d", "linear_4d", "linear_1d"}) {
    check_op_case(
        "linalg", name, [](const Inputs& x) { return linear(x[0], x[1], x[2]); }, kRtol, kAtol);
  }
  check_op_case(
      "linalg", "linear_no_bias", [](const Inputs& x) { return linear(x[0], x[1]); }, kRtol, kAtol);
}

TEST(Linalg, StridedOperandsAreReadInPlaceWithTheSameResult) {
  // Integer-valued data: every layout must give exactly the same products.
  Tensor a = randint(-4, 5, {6, 5}, kFloat64);
  Tensor b = randint(-4, 5, {5, 7}, kFloat64);
  const std::vector<double> want = values(mm(a, b));
  Tensor at = a.t().contiguous().t();  // column-major storage
  Tensor bt = b.t().contiguous().t();
  EXPECT_EQ(values(mm(at, b)), want);
  EXPECT_EQ(values(mm(a, bt)), want);
  EXPECT_EQ(values(mm(at, bt)), want);
  // Every other row and column: not BLAS-compatible, read through a copy.
  Tensor big = randint(-4, 5, {12, 10}, kFloat64);
  Tensor sliced = big.slice(0, 0, 12, 2).slice(1, 0, 10, 2);
  EXPECT_EQ(values(mm(sliced, b)), values(mm(sliced.contiguous(), b)));
  // Broadcast (stride 0) rows.
  Tensor row = randint(-4, 5, {1, 5}, kFloat64).expand({6, 5});
  EXPECT_EQ(values(mm(row, b)), values(mm(row.contiguous(), b)));
  // Strided vectors in dot and mv.
  Tensor v = randint(-4, 5, {10}, kFloat64).slice(0, 0, 10, 2);
  EXPECT_EQ(values(matmul(v, v)), values(matmul(v.contiguous(), v.contiguous())));
  EXPECT_EQ(values(matmul(a, v)), values(matmul(a, v.contiguous())));
  // Transposed batches.
  Tensor x = randint(-4, 5, {3, 5, 6}, kFloat64).transpose(1, 2);
  Tensor y = randint(-4, 5, {3, 5, 2}, kFloat64);
  EXPECT_EQ(values(bmm(x, y)), values(bmm(x.contiguous(), y)));
}

TEST(Linalg, BroadcastBatchesMatchPerMatrixProducts) {
  Tensor a = randint(-3, 4, {2, 1, 3, 4}, kFloat64);
  Tensor b = randint(-3, 4, {5, 4, 2}, kFloat64);
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.sizes(), (Shape{2, 5, 3, 2}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      EXPECT_EQ(values(c[i][j]), values(mm(a[i][0], b[j])));
    }
  }
  // A broadcast batch operand of size 1 is read with batch stride 0.
  Tensor d = matmul(randint(-3, 4, {4, 3, 4}, kFloat64), b[0].unsqueeze(0));
  EXPECT_EQ(d.sizes(), (Shape{4, 3, 2}));
}

TEST(Linalg, EmptyAndDegenerateShapes) {
  Tensor z = mm(ones({2, 0}), ones({0, 3}));
  EXPECT_EQ(z.sizes(), (Shape{2, 3}));
  EXPECT_EQ(values(z), std::vector<double>(6, 0.0));
  EXPECT_EQ(mm(ones({0, 4}), ones({4, 3})).sizes(), (Shape{0, 3}));
  EXPECT_EQ(matmul(ones({3, 0, 4}), ones({4, 2})).sizes(), (Shape{3, 0, 2}));
  EXPECT_EQ(matmul(ones({1}), ones({1})).dim(), 0);
  EXPECT_EQ(values(matmul(ones({1, 1}), full({1, 1}, 3))), (std::vector<double>{3}));
}

TEST(Linalg, AddmmScalesAndIgnoresInputWhenBetaIsZero) {
  Tensor input = full({2, 2}, std::numeric_limits<double>::quiet_NaN());
  Tensor a = tensor({{1, 2}, {3, 4}});
  Tensor out = addmm(input, a, a, /*beta=*/0, /*alpha=*/2);
  EXPECT_EQ(values(out), (std::vector<double>{14, 20, 30, 44}));
  Tensor bias = tensor({1, -1});
  EXPECT_EQ(values(addmm(bias, a, a, 3, 1)), (std::vector<double>{10, 7, 18, 19}));
  EXPECT_EQ(values(addmm(scalar_tensor(1), a, a)), (std::vector<double>{8, 11, 16, 23}));
}

TEST(Linalg, GradFnNames) {
  auto leaf = [](const Shape& s) { return randn(s).requires_grad_(true); };
  EXPECT_EQ(mm(leaf({2, 3}), leaf({3, 4})).grad_fn()->name(), "MmBackward0");
  EXPECT_EQ(bmm(leaf({2, 2, 3}), leaf({2, 3, 4})).grad_fn()->name(), "BmmBackward0");
  EXPECT_EQ(addmm(leaf({4}), leaf({2, 3}), leaf({3, 4})).grad_fn()->name(), "AddmmBackward0");
  EXPECT_EQ(matmul(leaf({3}), leaf({3})).grad_fn()->name(), "DotBackward0");
  EXPECT_EQ(matmul(leaf({2, 3}), leaf({3})).grad_fn()->name(), "MvBackward0");
  EXPECT_EQ(matmul(leaf({3}), leaf({3, 2})).grad_fn()->name(), "SqueezeBackward3");
  EXPECT_EQ(matmul(leaf({5, 2, 3}), leaf({3, 4})).grad_fn()->name(), "UnsafeViewBackward0");
  EXPECT_EQ(matmul(leaf({2, 3}), leaf({5, 3, 4})).grad_fn()->name(), "CloneBackward0");
  EXPECT_EQ(linear(leaf({2, 3}), leaf({4, 3})).grad_fn()->name(), "MmBackward0");
  // Nothing recorded without grad, or under no_grad.
  EXPECT_EQ(mm(randn({2, 3}), randn({3, 4})).grad_fn(), nullptr);
  NoGradGuard no_grad;
  EXPECT_FALSE(matmul(leaf({5, 2, 3}), leaf({3, 4})).requires_grad());
}

TEST(Linalg, Gradcheck) {
  auto two = [](Tensor (*f)(const Tensor&, const Tensor&)) {
    return [f](const Inputs& x) { return f(x[0], x[1]); };
  };
  EXPECT_TRUE(gradcheck(two(mm), {rnd({3, 4}), rnd({4, 2})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return mm(x[0].t(), x[1].t()); },
                        {rnd({4, 3}), rnd({2, 4})}));
  EXPECT_TRUE(gradcheck(two(bmm), {rnd({2, 3, 4}), rnd({2, 4, 2})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return bmm(x[0].transpose(1, 2), x[1]); },
                        {rnd({2, 4, 3}), rnd({2, 4, 2})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return addmm(x[0], x[1], x[2], 0.5, -1.5); },
                        {rnd({2}), rnd({3, 4}), rnd({4, 2})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return addmm(x[0], x[1], x[2]); },
                        {rnd({3, 1}), rnd({3, 4}), rnd({4, 2})}));
  const std::vector<std::pair<Shape, Shape>> matmul_shapes = {{{4}, {4}},
                                                              {{3, 4}, {4}},
                                                              {{4}, {4, 3}},
                                                              {{2, 3, 4}, {4, 2}},
                                                              {{2, 3, 4}, {4}},
                                                              {{3, 4}, {2, 4, 2}},
                                                              {{4}, {2, 4, 3}},
                                                              {{2, 3, 4}, {2, 4, 2}},
                                                              {{2, 1, 3, 4}, {3, 4, 2}},
                                                              {{3, 4}, {1, 2, 4, 2}}};
  for (const auto& [sa, sb] : matmul_shapes) {
    EXPECT_TRUE(gradcheck(two(matmul), {rnd(sa), rnd(sb)}))
        << shape_str(sa) << " @ " << shape_str(sb);
  }
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return matmul(x[0].transpose(1, 2), x[1]); },
                        {rnd({2, 4, 3}), rnd({4, 2})}));
  for (const Shape& sx : {Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 2, 1, 4}, Shape{4}}) {
    EXPECT_TRUE(gradcheck([](const Inputs& x) { return linear(x[0], x[1], x[2]); },
                          {rnd(sx), rnd({2, 4}), rnd({2})}))
        << shape_str(sx);
    EXPECT_TRUE(
        gradcheck([](const Inputs& x) { return linear(x[0], x[1]); }, {rnd(sx), rnd({2, 4})}))
        << shape_str(sx);
  }
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return linear(x[0].transpose(1, 2), x[1], x[2]); },
                        {rnd({2, 4, 3}), rnd({2, 4}), rnd({2})}));
}

TEST(Linalg, OnlyWantedGradientsAreComputed) {
  Tensor x = randn({3, 4});
  Tensor w = randn({2, 4}).requires_grad_(true);
  Tensor y = linear(x, w).sum();
  y.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_FALSE(x.grad().defined());
  EXPECT_EQ(w.grad().sizes(), (Shape{2, 4}));
}

TEST(Linalg, ShapeErrorsNameTheOpAndShapes) {
  std::string msg = error_of<ShapeError>([] { mm(ones({2, 3}), ones({4, 5})); });
  EXPECT_NE(msg.find("mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
            std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] { mm(ones({2, 3, 4}), ones({4, 5})); });
  EXPECT_NE(msg.find("[2, 3, 4]"), std::string::npos) << msg;
  msg = error_of<ShapeError>([] { matmul(ones({2, 3, 4}), ones({5, 6})); });
  EXPECT_NE(msg.find("matmul: shapes [2, 3, 4] and [5, 6] cannot be multiplied"), std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] { matmul(ones({2, 3, 4}), ones({3, 4, 6})); });
  EXPECT_NE(msg.find("matmul (batch dims of [2, 3, 4] and [3, 4, 6]): shapes [2] and [3] cannot "
                     "be broadcast"),
            std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] { matmul(scalar_tensor(1), ones({2})); });
  EXPECT_NE(msg.find("at least 1D, but they are 0D and 1D"), std::string::npos) << msg;
  msg = error_of<ShapeError>([] { matmul(ones({3}), ones({4})); });
  EXPECT_NE(msg.find("[3] and [4]"), std::string::npos) << msg;
  msg = error_of<ShapeError>([] { bmm(ones({2, 3, 4}), ones({3, 4, 5})); });
  EXPECT_NE(msg.find("bmm: batch1 and batch2 must have the same batch size"), std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] { bmm(ones({2, 3, 4}), ones({2, 5, 5})); });
  EXPECT_NE(msg.find("bmm: batch1 and batch2 shapes cannot be multiplied ([2, 3, 4] and "
                     "[2, 5, 5])"),
            std::string::npos)
      << msg;
  EXPECT_THROW(bmm(ones({3, 4}), ones({4, 5})), ShapeError);
  msg = error_of<ShapeError>([] { addmm(ones({3}), ones({2, 4}), ones({4, 5})); });
  EXPECT_NE(msg.find("addmm: input of shape [3] cannot be broadcast to the product's shape "
                     "[2, 5]"),
            std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] { linear(ones({2, 5}), ones({3, 4})); });
  EXPECT_NE(msg.find("linear: input of shape [2, 5] does not fit weight of shape [3, 4]"),
            std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] { linear(ones({2, 4}), ones({3, 4}), ones({5})); });
  EXPECT_NE(msg.find("bias of shape [5]"), std::string::npos) << msg;
  EXPECT_THROW(linear(ones({2, 4}), ones({2, 2, 4})), ShapeError);
}

// A 1-D weight is PyTorch's single-output linear: x @ w (MvBackward0 for a 2-D input).
TEST(Linalg, LinearWithOneDimensionalWeight) {
  Tensor x = ones({2, 4}).requires_grad_(true);
  Tensor y = linear(x, ones({4}));
  EXPECT_EQ(y.sizes(), (Shape{2}));
  EXPECT_EQ(values(y), (std::vector<double>{4, 4}));
  EXPECT_EQ(y.grad_fn()->name(), "MvBackward0");
}

TEST(Linalg, DtypeErrors) {
  std::string msg = error_of<DtypeError>([] { mm(ones({2, 2}), ones({2, 2}, kFloat64)); });
  EXPECT_NE(msg.find("mm: expected mat1 and mat2 to have the same dtype, but got: torch.float32 "
                     "!= torch.float64"),
            std::string::npos)
      << msg;
  EXPECT_THROW(matmul(ones({2, 2}, kInt64), ones({2, 2}, kInt64)), DtypeError);
  EXPECT_THROW(mm(ones({2, 2}, kFloat16), ones({2, 2}, kFloat16)), DtypeError);
  EXPECT_THROW(linear(ones({2, 2}), ones({2, 2}), ones({2}, kFloat64)), DtypeError);
  EXPECT_THROW(mm(Tensor(), ones({2, 2})), ValueError);
}

TEST(Linalg, SavedOperandModifiedInPlaceIsAnError) {
  Tensor w = randn({3, 2}).requires_grad_(true);
  Tensor x = randn({4, 3}).requires_grad_(true);
  Tensor y = mm(x, w).sum();
  {
    NoGradGuard no_grad;
    w.mul_(2.0);
  }
  EXPECT_THROW(y.backward(), AutogradError);
}

}  // namespace
}  // namespace nns
