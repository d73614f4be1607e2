// SPDX-License-Identifier: GPL-3.0-or-later
// Printing matches PyTorch's repr exactly, for every case in tests/fixtures/printing.json.
#include <gtest/gtest.h>

#include "engine/ops/ops.h"
#include "support/fixtures.h"

namespace nns {
namespace {

TEST(TensorPrint, MatchesPyTorchRepr) {
  const auto& fx = test::Fixtures::load("printing");
  const std::vector<std::string> names = fx.tensor_names("print.");
  ASSERT_GE(names.size(), 30u);
  for (const std::string& value_name : names) {
    const std::string name = value_name.substr(0, value_name.size() - std::string(".value").size());
    Tensor t = fx.tensor(value_name).to_tensor();
    if (fx.scalar(name + ".requires_grad") != 0) t.requires_grad_(true);
    EXPECT_EQ(t.str(), fx.string(name + ".repr")) << "case " << name;
  }
}

TEST(TensorPrint, UndefinedTensorSaysSo) {
  EXPECT_EQ(Tensor().str(), "tensor(undefined)");
}

}  // namespace
}  // namespace nns
