// SPDX-License-Identifier: GPL-3.0-or-later
// Tensor basics: factories, metadata, views sharing storage, layout, dtype conversion, and
// the typed errors for misuse.
#include <gtest/gtest.h>

#include "engine/ops/ops.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace nns {
namespace {

using test::error_of;
using test::values;

TEST(TensorFactories, ShapesDtypesAndValues) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.sizes(), (Shape{2, 3}));
  EXPECT_EQ(z.strides(), (Shape{3, 1}));
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(z.device(), kCPU);
  EXPECT_EQ(z.numel(), 6);
  EXPECT_EQ(values(z), std::vector<double>(6, 0.0));
  EXPECT_EQ(values(ones({2}, kFloat64)), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(full({3}, 2.5)), (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_EQ(values(arange(4)), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(values(arange(1, 2, 0.25)), (std::vector<double>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(arange(5, kInt64).dtype(), kInt64);
  EXPECT_EQ(values(tensor({{1, 2}, {3, 4}})), (std::vector<double>{1, 2, 3, 4}));
  Tensor s = scalar_tensor(3.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item(), 3.5);
  Tensor e = empty({0, 4});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(ones({2}, TensorOptions().requires_grad(true)).requires_grad());
  EXPECT_EQ(from_vector(std::vector<int64_t>{4, 5}, {2}).to_vector<int64_t>(),
            (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(from_vector(std::vector<bool>{true, false}, {2}).to_vector<bool>(),
            (std::vector<bool>{true, false}));
}

TEST(TensorFactories, BadArgumentsAreTypedErrors) {
  EXPECT_THROW(zeros({2, -1}), ValueError);
  EXPECT_THROW(arange(0, 5, 0), ValueError);
  EXPECT_THROW(arange(5, 0, 1), ValueError);
  EXPECT_THROW(from_vector(std::vector<float>{1, 2, 3}, {2, 2}), ShapeError);
  EXPECT_THROW(tensor({{1, 2}, {3}}), ShapeError);
  EXPECT_THROW(ones({2}).item(), ValueError);
  EXPECT_THROW(ones({2}).data_ptr<double>(), DtypeError);
  EXPECT_THROW(Tensor().sizes(), ValueError);
}

TEST(TensorViews, ShareStorageAndSeeWrites) {
  Tensor x = arange(6);
  Tensor v = x.view({2, 3});
  EXPECT_EQ(v.storage(), x.storage());
  v.select(1, 2).fill_(-1);  // x[2] and x[5]
  EXPECT_EQ(values(x), (std::vector<double>{0, 1, -1, 3, 4, -1}));
  Tensor t = v.t();
  EXPECT_EQ(t.sizes(), (Shape{3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(values(t), (std::vector<double>{0, 3, 1, 4, -1, -1}));
}

TEST(TensorViews, ViewReshapeAndInferredSizes) {
  Tensor x = arange(24).view({2, 3, 4});
  EXPECT_EQ(x.view({-1, 4}).sizes(), (Shape{6, 4}));
  EXPECT_EQ(x.reshape({4, -1}).sizes(), (Shape{4, 6}));
  EXPECT_EQ(x.flatten().sizes(), (Shape{24}));
  EXPECT_EQ(x.flatten(1).sizes(), (Shape{2, 12}));
  EXPECT_EQ(x.unflatten(2, {2, -1}).sizes(), (Shape{2, 3, 2, 2}));
  // A transposed tensor cannot be viewed flat; reshape copies instead.
  Tensor t = x.transpose(0, 2);
  EXPECT_THROW(t.view({24}), ShapeError);
  Tensor r = t.reshape({24});
  EXPECT_NE(r.storage(), x.storage());
  EXPECT_EQ(values(r)[1], 12.0);
  EXPECT_THROW(x.view({5, -1}), ShapeError);
  EXPECT_THROW(x.view({-1, -1}), ShapeError);
}

TEST(TensorViews, PermuteSqueezeUnsqueezeExpand) {
  Tensor x = arange(6).view({1, 2, 3});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.sizes(), (Shape{3, 1, 2}));
  EXPECT_EQ(values(p.contiguous()), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(x.squeeze().sizes(), (Shape{2, 3}));
  EXPECT_EQ(x.squeeze(0).sizes(), (Shape{2, 3}));
  EXPECT_EQ(x.squeeze(1).sizes(), (Shape{1, 2, 3}));
  EXPECT_EQ(x.unsqueeze(-1).sizes(), (Shape{1, 2, 3, 1}));
  EXPECT_EQ(x.unsqueeze(1).sizes(), (Shape{1, 1, 2, 3}));
  Tensor e = tensor({1, 2, 3}).expand({2, 3});
  EXPECT_EQ(e.strides(), (Shape{0, 1}));
  EXPECT_EQ(values(e), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_THROW(tensor({1, 2, 3}).expand({2, 4}), ShapeError);
  EXPECT_THROW(x.permute({0, 1}), ShapeError);
  EXPECT_THROW(x.permute({0, 0, 1}), IndexError);
}

TEST(TensorViews, SlicingFollowsPython) {
  Tensor x = arange(10);
  EXPECT_EQ(values(x.slice(0, 2, 5)), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(values(x.slice(0, -3, 100)), (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(values(x.slice(0, 1, 8, 3)), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(x.slice(0, 5, 2).numel(), 0);
  EXPECT_EQ(values(x.narrow(0, 8, 2)), (std::vector<double>{8, 9}));
  EXPECT_EQ(x[-1].item(), 9.0);
  EXPECT_EQ(x.slice(0, 2, 5).storage_offset(), 2);
  EXPECT_THROW(x[10], IndexError);
  EXPECT_THROW(x.narrow(0, 8, 3), IndexError);
  EXPECT_THROW(x.slice(0, 0, 5, 0), ValueError);
  EXPECT_THROW(x.select(1, 0), IndexError);
}

TEST(TensorViews, ContiguousAndClone) {
  Tensor x = arange(6).view({2, 3});
  EXPECT_TRUE(x.contiguous().is_same(x));
  Tensor c = x.t().contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values(c), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor k = x.clone();
  k.fill_(7);
  EXPECT_EQ(x.to_vector<double>()[0], 0.0);
}

TEST(TensorDims, OutOfRangeDimsNameTheRange) {
  Tensor x = zeros({2, 3});
  try {
    x.transpose(0, 2);
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 2 is out of range"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[-2, 1]"), std::string::npos);
  }
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_THROW(x.size(2), IndexError);
}

TEST(TensorDtypes, ConversionsMatchPyTorch) {
  const auto& fx = test::Fixtures::load("dtypes");
  Tensor f32 = fx.tensor("source.float64").to_tensor().to(kFloat32);
  EXPECT_TRUE(test::exactly_equal(f32, fx.tensor("to.float32")));
  EXPECT_TRUE(test::exactly_equal(f32.to(kFloat16), fx.tensor("to.float16")));
  EXPECT_TRUE(test::exactly_equal(f32.to(kBFloat16), fx.tensor("to.bfloat16")));
  EXPECT_TRUE(
      test::exactly_equal(fx.tensor("source.float64").to_tensor().to(kBool), fx.tensor("to.bool")));
  EXPECT_TRUE(test::exactly_equal(fx.tensor("finite.float64").to_tensor().to(kInt64),
                                  fx.tensor("to.int64")));
  EXPECT_TRUE(test::exactly_equal(
      from_vector(std::vector<int64_t>{(1LL << 24) + 1, -3, (1LL << 40) + 1}, {3}).to(kFloat32),
      fx.tensor("int64.to.float32")));
  EXPECT_EQ(f32.to(kFloat16).element_size(), 2u);
}

TEST(TensorDtypes, PromotionFollowsPyTorch) {
  EXPECT_EQ(promote_types(kInt64, kFloat32), kFloat32);
  EXPECT_EQ(promote_types(kFloat32, kFloat64), kFloat64);
  EXPECT_EQ(promote_types(kBool, kInt64), kInt64);
  EXPECT_EQ(promote_types(kFloat16, kBFloat16), kFloat32);
  EXPECT_EQ(promote_types(kFloat16, kFloat32), kFloat32);
  EXPECT_EQ(dtype_name(kBFloat16), "torch.bfloat16");
}

TEST(TensorDevice, ParsesAndRefusesWhatIsNotThere) {
  EXPECT_EQ(Device::parse("cpu"), kCPU);
  EXPECT_EQ(Device::parse("cuda:1"), Device(DeviceType::CUDA, 1));
  EXPECT_EQ(Device::parse("cuda:1").str(), "cuda:1");
  EXPECT_THROW(Device::parse("tpu"), ValueError);
  EXPECT_THROW(Device::parse("cuda:x"), ValueError);
  // This build has no CUDA kernels: a clear DeviceError, not a crash.
  EXPECT_THROW(zeros({2}, TensorOptions().device(Device(DeviceType::CUDA, 0))), DeviceError);
  EXPECT_THROW(zeros({2}).to(Device(DeviceType::CUDA, 0)), DeviceError);
}

}  // namespace
}  // namespace nns
