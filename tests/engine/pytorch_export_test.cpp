// SPDX-License-Identifier: GPL-3.0-or-later
// The PyTorch code export (engine/export/pytorch_code.h): what model.py says for the examples,
// and what the export folder refuses. That the code runs in PyTorch and gives our outputs and
// gradients is torch.export's (tests/torch/export_roundtrip.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/export/pytorch_code.h"
#include "engine/graph/builder.h"
#include "engine/plugin/loader.h"
#include "engine/tensor/factories.h"

namespace nns {
namespace {

namespace fs = std::filesystem;

graph::Project example(const std::string& name) {
  return graph::load_project(std::string(NNS_SOURCE_DIR) + "/resources/examples/" + name);
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PyTorchExport, TheCodeIsWhatAPersonWouldWrite) {
  const std::string digits = exporting::pytorch_model_code(example("digits.nns"));
  for (const char* line :
       {"class DigitsCNN(nn.Module):\n    def __init__(self):\n        super().__init__()\n",
        "        self.features = nn.Sequential(\n            nn.Conv2d(1, 8, 3, padding=1),\n",
        "            nn.MaxPool2d(2),\n", "        x = self.features(x)\n", "        return x\n"}) {
    EXPECT_NE(digits.find(line), std::string::npos) << line << "\nin:\n" << digits;
  }
  // A block's arguments are its constructor's, with the project's values as defaults; a
  // switch ModuleDict calls its active member.
  const std::string dynamic = exporting::pytorch_model_code(example("dynamic_net.nns"));
  for (const char* line :
       {"class MyLinear(nn.Module):\n    def __init__(self, in_features=4, out_features=3):\n",
        "torch.empty(in_features, out_features)", "        self.active = \"relu\"\n",
        "        x = self.activations[self.active](x)\n", "        x = self.linears[2](x)\n"}) {
    EXPECT_NE(dynamic.find(line), std::string::npos) << line << "\nin:\n" << dynamic;
  }
  // A residual: the skip keeps its variable while the branch has its own.
  const std::string residual = exporting::pytorch_model_code(example("residual_mlp.nns"));
  EXPECT_NE(residual.find("        h = self.fc1(x)\n"), std::string::npos) << residual;
  EXPECT_NE(residual.find("        x = x + h\n"), std::string::npos) << residual;
}

TEST(PyTorchExport, PluginTypesBringTheirTwinsAndOneWithoutIsRefused) {
  plugin::load_plugins({fs::path(NNS_PLUGIN_BUILD_DIR), fs::path(NNS_TEST_PLUGIN_DIR)});
  const std::string code = exporting::pytorch_model_code(
      graph::load_project(std::string(NNS_SOURCE_DIR) + "/tests/cli/plugins_net.nns"));
  for (const char* line :
       {"import math\n", "# FourierFeatures, from the plugin fourier_features 1.0.0.\n",
        "class RMSNorm(nn.Module):\n",
        "        self.ff = FourierFeatures(in_features=2, out_features=16, sigma=0.5)\n",
        "        self.rms = RMSNorm(normalized_shape=(16,), eps=None, "
        "elementwise_affine=True)\n"}) {
    EXPECT_NE(code.find(line), std::string::npos) << line << "\nin:\n" << code;
  }
  // FaultyLayer's plugin gives no twin.
  const graph::Project faulty =
      graph::load_project(std::string(NNS_SOURCE_DIR) + "/tests/cli/faulty_layer.nns");
  try {
    exporting::pytorch_model_code(faulty);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'bad': its type FaultyLayer comes from the plugin "
                                         "'faulty', which has no PyTorch code"),
              std::string::npos)
        << e.what();
  }
  graph::Project broken = example("spirals.nns");
  broken.graph.edges.pop_back();  // the output is fed by nothing
  EXPECT_THROW(exporting::pytorch_model_code(broken), graph::GraphError);
}

TEST(PyTorchExport, TheFolderIsWrittenWholeOrNotAtAll) {
  const fs::path dir = fs::temp_directory_path() / "nns_export_test";
  fs::remove_all(dir);
  const graph::Project p = example("spirals.nns");
  // Weights that do not fit the model: refused before anything is written.
  nn::StateDict wrong;
  wrong.insert("fc1.weight", zeros({3, 3}));
  EXPECT_THROW(exporting::write_pytorch_export(p, dir.string(), "", &wrong, false), Error);
  EXPECT_FALSE(fs::exists(dir));
  nn::StateDict weights = graph::build_model(p)->state_dict();
  exporting::write_pytorch_export(p, dir.string(), "", &weights, false);
  EXPECT_TRUE(fs::exists(dir / "model.py"));
  EXPECT_TRUE(fs::exists(dir / "weights.pt"));
  EXPECT_TRUE(fs::exists(dir / "train.py"));
  EXPECT_TRUE(fs::exists(dir / "data.pt"));
  EXPECT_NE(read(dir / "README.md").find("model.load_state_dict(torch.load(\"weights.pt\")"),
            std::string::npos);
  // An existing folder stays as it is unless replaced.
  try {
    exporting::write_pytorch_export(p, dir.string(), "", nullptr, false);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("exists"), std::string::npos);
  }
  EXPECT_TRUE(fs::exists(dir / "weights.pt"));
  exporting::write_pytorch_export(p, dir.string(), "", nullptr, true);
  EXPECT_FALSE(fs::exists(dir / "weights.pt"));
  EXPECT_TRUE(fs::exists(dir / "model.py"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nns
