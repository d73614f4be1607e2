// SPDX-License-Identifier: GPL-3.0-or-later
// cat, stack, index_select, gather and embedding: PyTorch's values and gradients
// (tests/fixtures/indexing.json), finite differences with repeated indices, and the errors
// for bad shapes and out-of-range indices (checked before any kernel reads them).
#include <gtest/gtest.h>

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

Tensor rnd(const Shape& shape) {
  return randn(shape, kFloat64);
}
Tensor idx(const std::vector<int64_t>& v) {
  return from_vector(v, {static_cast<int64_t>(v.size())});
}

TEST(Indexing, MatchesPyTorch) {
  using test::check_op_case;
  check_op_case("indexing", "cat_dim0", [](const Inputs& x) { return cat({x[0], x[1]}, 0); });
  check_op_case("indexing", "cat_dim_last", [](const Inputs& x) {
    return cat({x[0], x[1], x[2]}, -1);
  });
  check_op_case("indexing", "cat_transposed", [](const Inputs& x) {
    return cat({x[0].t(), x[1]}, 1);
  });
  check_op_case("indexing", "stack_dim0", [](const Inputs& x) { return stack({x[0], x[1]}, 0); });
  check_op_case("indexing", "stack_dim1", [](const Inputs& x) {
    return stack({x[0], x[1], x[2]}, 1);
  });
  check_op_case("indexing", "stack_dim_last", [](const Inputs& x) {
    return stack({x[0].t(), x[1]}, -1);
  });
  check_op_case("indexing", "index_select_dim0",
                [](const Inputs& x) { return index_select(x[0], 0, x[1]); });
  check_op_case("indexing", "index_select_dim1",
                [](const Inputs& x) { return index_select(x[0], 1, x[1]); });
  check_op_case("indexing", "index_select_transposed",
                [](const Inputs& x) { return index_select(x[0].t(), 0, x[1]); });
  check_op_case("indexing", "gather_dim0", [](const Inputs& x) { return gather(x[0], 0, x[1]); });
  check_op_case("indexing", "gather_dim2", [](const Inputs& x) { return gather(x[0], 2, x[1]); });
  check_op_case("indexing", "embedding", [](const Inputs& x) { return embedding(x[1], x[0]); });
  check_op_case("indexing", "embedding_padding",
                [](const Inputs& x) { return embedding(x[1], x[0], 4); });
}

TEST(Indexing, CatValuesDtypesAndLegacyEmpty) {
  Tensor a = tensor({{1, 2}, {3, 4}});
  Tensor b = tensor({{5, 6}});
  EXPECT_EQ(values(cat({a, b})), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(cat({a, b}).sizes(), (Shape{3, 2}));
  EXPECT_EQ(values(cat({a, a}, 1)), (std::vector<double>{1, 2, 1, 2, 3, 4, 3, 4}));
  // Type promotion across the list, as torch.cat.
  EXPECT_EQ(cat({a, a.to(kFloat64)}).dtype(), kFloat64);
  EXPECT_EQ(cat({ones({2}, kInt64), ones({1})}).dtype(), kFloat32);
  // 1-D empty tensors are skipped whatever the other shapes.
  EXPECT_EQ(cat({a, zeros({0})}).sizes(), (Shape{2, 2}));
  EXPECT_EQ(cat({zeros({0}), zeros({0})}).sizes(), (Shape{0}));
  Tensor l = rnd({2, 2}).requires_grad_(true);
  Tensor e = zeros({0}, kFloat64).requires_grad_(true);
  cat({e, l}).sum().backward();
  EXPECT_EQ(values(l.grad()), std::vector<double>(4, 1.0));
  EXPECT_EQ(e.grad().sizes(), (Shape{0}));
  EXPECT_EQ(cat({l, l}).grad_fn()->name(), "CatBackward0");
  EXPECT_EQ(stack({l, l}).grad_fn()->name(), "StackBackward0");
}

TEST(Indexing, CatGradientInTheInputsDtype) {
  Tensor a = ones({2}).requires_grad_(true);
  Tensor b = ones({2}, kFloat64).requires_grad_(true);
  Tensor y = cat({a, b});
  EXPECT_EQ(y.dtype(), kFloat64);
  y.sum().backward();
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat64);
}

// unbind: views of each slice with one node, whose backward stacks the slices' gradients (a
// slice without one gives zeros).
TEST(Indexing, UnbindGivesViewsWithOneBackward) {
  const Tensor a = arange(24, kFloat64).reshape({2, 3, 4}).requires_grad_(true);
  const std::vector<Tensor> rows = unbind(a, 1);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].sizes(), (Shape{2, 4}));
  EXPECT_EQ(values(rows[1]), values(a.select(1, 1)));
  EXPECT_EQ(rows[0].raw_data(), a.raw_data());  // a view, not a copy
  EXPECT_EQ(rows[2].grad_fn()->name(), "UnbindBackward0");
  EXPECT_EQ(rows[0].grad_fn(), rows[2].grad_fn());
  // Only rows 0 and 2 are used: row 1's gradient is zero.
  (rows[0] * 2 + rows[2]).sum().backward();
  std::vector<double> want(24, 0.0);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t k = 0; k < 4; ++k) {
      want[static_cast<size_t>(i * 12 + k)] = 2;
      want[static_cast<size_t>(i * 12 + 8 + k)] = 1;
    }
  }
  EXPECT_EQ(values(a.grad()), want);
  EXPECT_TRUE(nns::testing::gradcheck(
      [](const std::vector<Tensor>& x) {
        const std::vector<Tensor> parts = unbind(x[0], -1);
        return parts[0] * parts[1] + parts[2];
      },
      {randn({3, 3}, kFloat64)}));
}

TEST(Indexing, IndexSelectAndGatherValues) {
  Tensor a = tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(values(index_select(a, 1, idx({2, 0, 2}))), (std::vector<double>{3, 1, 3, 6, 4, 6}));
  EXPECT_EQ(values(index_select(a, -2, idx({1}))), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(index_select(a, 1, from_vector(std::vector<int64_t>{1}, {})).sizes(), (Shape{2, 1}));
  EXPECT_EQ(index_select(scalar_tensor(5), 0, idx({0})).dim(), 0);
  EXPECT_EQ(index_select(a, 0, idx({})).sizes(), (Shape{0, 3}));
  Tensor g = gather(a, 1, from_vector(std::vector<int64_t>{2, 2, 0, 1}, {2, 2}));
  EXPECT_EQ(values(g), (std::vector<double>{3, 3, 4, 5}));
  // int64 and bool data are gathered too.
  Tensor ints = from_vector(std::vector<int64_t>{7, 8, 9}, {3});
  EXPECT_EQ(index_select(ints, 0, idx({2, 2})).to_vector<int64_t>(), (std::vector<int64_t>{9, 9}));
}

TEST(Indexing, Gradcheck) {
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return cat({x[0], x[1], x[2]}, 1);
      },
      {rnd({2, 3}), rnd({2, 1}), rnd({2, 2})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return cat({x[0].t(), x[1]}, 0);
      },
      {rnd({3, 2}), rnd({1, 3})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return stack({x[0], x[1].t()}, 2);
      },
      {rnd({2, 3}), rnd({3, 2})}));
  // Repeated indices accumulate.
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return index_select(x[0], 0, x[1]); },
                        {rnd({4, 3}), idx({3, 0, 3, 3, 1})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return index_select(x[0].transpose(0, 2), 1, x[1]); },
                        {rnd({2, 3, 4}), idx({2, 2, 0})}));
  EXPECT_TRUE(
      gradcheck([](const Inputs& x) { return gather(x[0], 0, x[1]); },
                {rnd({3, 4}), from_vector(std::vector<int64_t>{0, 0, 1, 2, 0, 0, 2, 2}, {2, 4})}));
  EXPECT_TRUE(
      gradcheck([](const Inputs& x) { return gather(x[0].t(), 1, x[1]); },
                {rnd({4, 3}), from_vector(std::vector<int64_t>{3, 3, 3, 0, 1, 1}, {2, 3})}));
  EXPECT_TRUE(
      gradcheck([](const Inputs& x) { return embedding(x[0], x[1]); },
                {rnd({5, 3}), from_vector(std::vector<int64_t>{1, 4, 1, 0, 1, 2}, {2, 3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return embedding(x[0], x[1], 3); },
                        {rnd({5, 3}), from_vector(std::vector<int64_t>{1, 4, 1, 0}, {4})}));
}

TEST(Indexing, EmbeddingPaddingRowGetsNoGradient) {
  Tensor w = rnd({4, 2}).requires_grad_(true);
  Tensor i = from_vector(std::vector<int64_t>{0, 2, 2, 1, 2}, {5});
  Tensor y = embedding(w, i, 2);
  EXPECT_EQ(y.grad_fn()->name(), "EmbeddingBackward0");
  EXPECT_EQ(values(y[1]), values(w[2].detach()));  // the padding row is still looked up
  y.sum().backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1, 1, 1, 1, 0, 0, 0, 0}));
}

TEST(Indexing, OutOfRangeIndicesNameTheIndexAndSize) {
  Tensor a = zeros({4, 3});
  std::string msg = error_of<IndexError>([&] { index_select(a, 0, idx({1, 0, 5})); });
  EXPECT_NE(msg.find("index_select: index 5 (at position 2 of the index) is out of range for "
                     "dimension 0 of size 4"),
            std::string::npos)
      << msg;
  EXPECT_THROW(index_select(a, 1, idx({-1})), IndexError);
  msg = error_of<IndexError>([&] {
    gather(a, 1, from_vector(std::vector<int64_t>{0, 3}, {1, 2}));
  });
  EXPECT_NE(msg.find("gather: index 3 (at position 1 of the index) is out of range for dimension "
                     "1 of size 3"),
            std::string::npos)
      << msg;
  msg = error_of<IndexError>([&] { embedding(a, idx({0, 4})); });
  EXPECT_NE(msg.find("embedding: index 4 (at position 1 of the index) is out of range for an "
                     "embedding table of 4 rows"),
            std::string::npos)
      << msg;
  EXPECT_THROW(embedding(a, idx({-2})), IndexError);
  EXPECT_THROW(index_select(a, 2, idx({0})), IndexError);  // dim out of range
}

TEST(Indexing, ShapeAndDtypeErrors) {
  std::string msg = error_of<ShapeError>([] { cat({zeros({2, 3}), zeros({3, 4})}); });
  EXPECT_NE(msg.find("cat: sizes of tensors must match except in dimension 0. Expected size 3 but "
                     "got size 4 for tensor number 1 in the list"),
            std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] { cat({zeros({2, 3}), zeros({3})}); });
  EXPECT_NE(msg.find("cat: tensors must have the same number of dimensions"), std::string::npos)
      << msg;
  EXPECT_THROW(cat({scalar_tensor(1), scalar_tensor(2)}), ShapeError);
  EXPECT_THROW(cat({}), ValueError);
  EXPECT_THROW(cat({zeros({2}), zeros({2})}, 1), IndexError);
  msg = error_of<ShapeError>([] { stack({zeros({2, 3}), zeros({3, 4})}); });
  EXPECT_NE(msg.find("stack: expects each tensor to be equal size, but got [2, 3] at entry 0 and "
                     "[3, 4] at entry 1"),
            std::string::npos)
      << msg;
  EXPECT_THROW(stack({}), ValueError);
  msg = error_of<DtypeError>([] { index_select(zeros({2}), 0, zeros({1})); });
  EXPECT_NE(msg.find("index_select: expected an int64 index tensor, but got torch.float32"),
            std::string::npos)
      << msg;
  EXPECT_THROW(index_select(zeros({2}), 0, from_vector(std::vector<int64_t>{0}, {1, 1})),
               ShapeError);
  msg = error_of<ShapeError>([] {
    gather(zeros({2, 3}), 0, from_vector(std::vector<int64_t>{0, 0, 0, 0}, {1, 4}));
  });
  EXPECT_NE(msg.find("gather: index shape [1, 4] must not be larger than input shape [2, 3] apart "
                     "from dimension 0"),
            std::string::npos)
      << msg;
  EXPECT_THROW(gather(zeros({2, 3}), 0, idx({0})), ShapeError);
  EXPECT_THROW(embedding(zeros({4}), idx({0})), ShapeError);
  EXPECT_THROW(embedding(zeros({4, 2}), idx({0}), 4), ValueError);
  EXPECT_THROW(embedding(zeros({4, 2}), zeros({1})), DtypeError);
}

}  // namespace
}  // namespace nns
