// SPDX-License-Identifier: GPL-3.0-or-later
// The loss and optimizer options as option specs (engine/train/losses.h, optimizers.h): the
// specs name exactly the options the optimizers take, with their defaults, and the one check
// (graph::check_options) refuses bad values naming the optimizer or loss and the option.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <variant>

#include "engine/optim/factory.h"
#include "engine/train/losses.h"
#include "engine/train/optimizers.h"

namespace nns::train {
namespace {

TEST(TrainingOptions, OptimizerSpecsNameTheOptimizersOptionsWithTheirDefaults) {
  for (const std::string& name : optim::optimizer_names()) {
    SCOPED_TRACE(name);
    const auto defaults = optim::make_optimizer_options(name, {{"lr", 0.5}});
    std::set<std::string> spec_names, option_names;
    for (const graph::OptionSpec& s : optimizer_option_specs(name)) spec_names.insert(s.name);
    for (const auto& [key, value] : defaults->items()) option_names.insert(key);
    EXPECT_EQ(spec_names, option_names);
    for (const graph::OptionSpec& s : optimizer_option_specs(name)) {
      if (s.name == "lr" || s.default_value.is_null()) continue;
      for (const auto& [key, value] : defaults->items()) {
        if (key != s.name) continue;
        if (const double* x = std::get_if<double>(&value)) {
          EXPECT_EQ(*x, s.default_value.get<double>()) << key;
        } else if (const bool* b = std::get_if<bool>(&value)) {
          EXPECT_EQ(*b, s.default_value.get<bool>()) << key;
        } else if (const auto* v = std::get_if<std::vector<double>>(&value)) {
          EXPECT_EQ(*v, s.default_value.get<std::vector<double>>()) << key;
        }
      }
    }
  }
}

TEST(TrainingOptions, OptimizerOptionsAreCheckedAgainstTheirSpecs) {
  const optim::OptionList list = optimizer_option_list("adamw", {{"lr", 0.01}});
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list.front().first, "lr");
  EXPECT_EQ(std::get<double>(list.front().second), 0.01);
  try {
    optimizer_option_list("Adam", {{"betas", {0.9}}});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Adam option 'betas': expected a list of 2 numbers >= 0, got [0.9]");
  }
  try {
    optimizer_option_list("sgd", {{"momentum", 0.9}, {"beta", 1}});
    FAIL();
  } catch (const KeyError& e) {
    EXPECT_NE(std::string(e.what()).find("SGD has no option 'beta'; its options are: lr, "
                                         "momentum"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(optimizer_option_list("SGD", {{"momentum", -1}}), ValueError);
  EXPECT_THROW(optimizer_option_specs("Adagrad"), KeyError);
}

TEST(TrainingOptions, LossOptionsAreCheckedAgainstTheirSpecs) {
  EXPECT_EQ(loss_option_specs("huberloss").back().name, "delta");
  try {
    make_loss("CrossEntropyLoss", {{"label_smoothing", 2}});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "CrossEntropyLoss option 'label_smoothing': expected a number between 0.0 and "
                 "1.0, got 2");
  }
  EXPECT_THROW(make_loss("MSELoss", {{"reduction", "none"}}), ValueError);
  EXPECT_THROW(make_loss("L1Loss", {{"delta", 1}}), KeyError);
  EXPECT_NO_THROW(make_loss("mseloss", {{"reduction", "sum"}}));
}

}  // namespace
}  // namespace nns::train
