// SPDX-License-Identifier: GPL-3.0-or-later
// nns_torch_roundtrip: the engine's side of tests/torch/roundtrip.py, which compares it with
// real PyTorch through weight files.
//
//   nns_torch_roundtrip write DIR   builds the models here, saves their state dicts (.pt and
//                                   .safetensors) and SGD and Adam checkpoints, and records
//                                   inputs, outputs and the parameters after one more step
//   nns_torch_roundtrip read DIR    loads the files PyTorch wrote into DIR (strictly: no
//                                   missing or unexpected key), resumes its checkpoints, and
//                                   records outputs and parameters (JSON)
//
// The models (mlp, features_classifier, bignet) are built as roundtrip.py builds them in
// PyTorch. JSON tensors are {"shape", "values"} with values as float64, row-major.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/nn/nn.h"
#include "engine/nn_seed_modules.h"  // tests/engine: the seeds' BigNet
#include "engine/ops/ops.h"
#include "engine/optim/adam.h"
#include "engine/optim/sgd.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"

namespace {

using json = nlohmann::json;
using nns::Tensor;
namespace nn = nns::nn;
namespace ser = nns::serialize;

const std::vector<std::string> kModels = {"mlp", "features_classifier", "bignet"};

json to_json(const Tensor& t) {
  const Tensor c = t.detach().to(nns::kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return {{"shape", t.sizes()}, {"values", std::vector<double>(p, p + c.numel())}};
}

Tensor from_json(const json& j) {
  return nns::from_vector(j.at("values").get<std::vector<double>>(),
                          j.at("shape").get<nns::Shape>())
      .to(nns::kFloat32);
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return json::parse(in);
}

void write_json(const std::string& path, const json& j) {
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::shared_ptr<nn::Module> make_model(const std::string& name) {
  using std::make_shared;
  if (name == "mlp")
    return make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        make_shared<nn::Linear>(4, 8), make_shared<nn::ReLU>(), make_shared<nn::Linear>(8, 3)});
  if (name == "features_classifier") {
    auto features = make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        make_shared<nn::Conv2d>(1, 2, nns::Int2{3, 3}), make_shared<nn::BatchNorm2d>(2),
        make_shared<nn::ReLU>(), make_shared<nn::Flatten>()});
    auto classifier = make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        make_shared<nn::Linear>(8, 4), make_shared<nn::ReLU>(), make_shared<nn::Linear>(4, 2)});
    return make_shared<nn::Sequential>(
        nn::NamedList<nn::ModulePtr>{{"features", features}, {"classifier", classifier}});
  }
  if (name == "bignet") return make_shared<nns::test::BigNet>();
  throw std::runtime_error("unknown model " + name);
}

nns::Shape input_shape(const std::string& name) {
  if (name == "mlp") return {5, 4};
  if (name == "features_classifier") return {4, 1, 4, 4};
  return {3, 5};
}

Tensor forward_eval(nn::Module& model, const Tensor& x) {
  nns::NoGradGuard no_grad;
  model.eval();
  return model(x);
}

// The checkpointed model's optimizer ("sgd": SGD with momentum, "adam": Adam). On resume its
// options deliberately differ from the file's, which must replace them; the first run uses
// the ones roundtrip.py also uses.
std::unique_ptr<nns::optim::Optimizer> make_optimizer(const std::string& kind, nn::Module& model,
                                                      bool resume) {
  if (kind == "sgd") {
    nns::optim::SGDOptions options(resume ? 0.5 : 0.01);
    options.momentum = resume ? 0.0 : 0.9;
    return std::make_unique<nns::optim::SGD>(model.parameters(), options);
  }
  return std::make_unique<nns::optim::Adam>(model.parameters(),
                                            nns::optim::AdamOptions(resume ? 0.5 : 0.01));
}

void train_step(nn::Module& model, nns::optim::Optimizer& optimizer, const Tensor& x) {
  model.train();
  optimizer.zero_grad();
  model(x).pow(2.0).mean().backward();
  optimizer.step();
}

json parameters_json(nn::Module& model) {
  json out = json::object();
  for (const auto& [name, param] : model.named_parameters()) out[name] = to_json(param);
  return out;
}

void write_side(const std::string& dir) {
  for (const auto& name : kModels) {
    nns::manual_seed(10);
    auto model = make_model(name);
    const Tensor x = nns::randn(input_shape(name));
    if (name == "features_classifier") {  // running statistics and num_batches_tracked move
      nns::NoGradGuard no_grad;
      model->train();
      (*model)(x);
      (*model)(x * 2.0);
    }
    const Tensor y = forward_eval(*model, x);
    ser::save_state_dict_file(model->state_dict(), dir + "/" + name + ".pt");
    ser::save_state_dict_file(model->state_dict(), dir + "/" + name + ".safetensors");
    json keys = json::array();
    for (const auto& item : model->state_dict()) keys.push_back(item.key());
    write_json(dir + "/" + name + ".json",
               {{"input", to_json(x)}, {"output", to_json(y)}, {"keys", keys}});
  }

  for (const std::string kind : {"sgd", "adam"}) {
    nns::manual_seed(11);
    auto model = make_model("mlp");
    const Tensor x = nns::randn({6, 4});
    auto optimizer = make_optimizer(kind, *model, false);
    for (int i = 0; i < 3; ++i) train_step(*model, *optimizer, x);
    ser::Checkpoint checkpoint{model->state_dict(), optimizer->state_dict(), {}};
    checkpoint.extra.emplace_back("epoch", ser::PyValue(3));
    checkpoint.extra.emplace_back("loss", ser::PyValue(0.125));
    checkpoint.extra.emplace_back("note", ser::PyValue("written by nns_torch_roundtrip"));
    ser::save_checkpoint(checkpoint, dir + "/ckpt_" + kind + ".pt");
    train_step(*model, *optimizer, x);
    write_json(dir + "/ckpt_" + kind + ".json",
               {{"input", to_json(x)}, {"after_step", parameters_json(*model)}});
  }
}

void read_side(const std::string& dir) {
  for (const auto& name : kModels) {
    const json in = read_json(dir + "/torch_" + name + ".json");
    const Tensor x = from_json(in.at("input"));
    for (const std::string ext : {".pt", ".safetensors"}) {
      auto model = make_model(name);
      const ser::LoadReport report =
          ser::load_into(*model, ser::load_state_dict_file(dir + "/torch_" + name + ext), true);
      write_json(
          dir + "/torch_" + name + ext + ".out.json",
          {{"output", to_json(forward_eval(*model, x))}, {"matched", report.matched.size()}});
    }
  }

  for (const std::string kind : {"adam", "sgd"}) {
    const std::string stem = dir + "/torch_ckpt_" + kind;
    const Tensor x = from_json(read_json(stem + ".json").at("input"));
    auto model = make_model("mlp");
    const ser::Checkpoint checkpoint = ser::load_checkpoint(stem + ".pt");
    ser::load_into(*model, checkpoint.model, true);
    if (!checkpoint.optimizer) throw std::runtime_error(stem + ".pt has no optimizer state");
    auto optimizer = make_optimizer(kind, *model, true);
    optimizer->load_state_dict(*checkpoint.optimizer);
    train_step(*model, *optimizer, x);
    const ser::PyValue* epoch = checkpoint.find("epoch");
    write_json(stem + ".out.json", {{"after_step", parameters_json(*model)},
                                    {"epoch", epoch ? json(epoch->as_int()) : json(nullptr)}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = "usage: nns_torch_roundtrip write|read DIR";
  if (argc != 3) {
    std::cerr << usage << "\n";
    return 2;
  }
  const std::string command = argv[1];
  try {
    if (command == "write") {
      write_side(argv[2]);
    } else if (command == "read") {
      read_side(argv[2]);
    } else {
      std::cerr << usage << "\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "nns_torch_roundtrip " << command << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
