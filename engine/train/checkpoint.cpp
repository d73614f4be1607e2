// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/checkpoint.h"

#include <utility>
#include <variant>

#include "engine/serialize/serialize.h"

namespace nns::train {
namespace {

using serialize::FileError;
using serialize::PyValue;

constexpr const char* kOwnKey = "nnstudio";

PyValue scheduler_to_py(const optim::SchedulerValues& values) {
  PyValue::Pairs pairs;
  for (const auto& [key, value] : values) {
    PyValue v = std::visit(
        [](const auto& x) -> PyValue {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<double>>) {
            PyValue::Items items(x.begin(), x.end());
            return PyValue::list(std::move(items));
          } else {
            return PyValue(x);
          }
        },
        value);
    pairs.emplace_back(key, std::move(v));
  }
  return PyValue::dict(std::move(pairs));
}

optim::SchedulerValues scheduler_from_py(const PyValue& value, const std::string& where) {
  if (!value.is_mapping()) throw FileError(where + ": the scheduler state is not a dict");
  optim::SchedulerValues out;
  for (const auto& [key, v] : value.pairs()) {
    const std::string& k = key.as_string();
    if (v.is(PyValue::Kind::Bool)) {
      out.emplace_back(k, v.as_bool());
    } else if (v.is(PyValue::Kind::Int)) {
      out.emplace_back(k, v.as_int());
    } else if (v.is(PyValue::Kind::Float)) {
      out.emplace_back(k, v.as_float());
    } else if (v.is(PyValue::Kind::String)) {
      out.emplace_back(k, v.as_string());
    } else if (v.is_sequence()) {
      std::vector<double> numbers;
      for (const PyValue& x : v.items()) numbers.push_back(x.as_float());
      out.emplace_back(k, std::move(numbers));
    } else {
      throw FileError(where + ": the scheduler's '" + k + "' is " + v.repr());
    }
  }
  return out;
}

PyValue int_list(const std::vector<int64_t>& values) {
  PyValue::Items items(values.begin(), values.end());
  return PyValue::list(std::move(items));
}

std::vector<int64_t> int_list_from(const PyValue* value) {
  std::vector<int64_t> out;
  if (value) {
    for (const PyValue& x : value->items()) out.push_back(x.as_int());
  }
  return out;
}

int64_t int_or(const PyValue* value, int64_t fallback) {
  return value ? value->as_int() : fallback;
}
double float_or(const PyValue* value, double fallback) {
  return value ? value->as_float() : fallback;
}

serialize::Checkpoint to_checkpoint(const TrainingState& s, nn::StateDict model) {
  serialize::Checkpoint ckpt{std::move(model), s.optimizer, {}};
  ckpt.extra.emplace_back("epoch", PyValue(s.epoch));
  ckpt.extra.emplace_back("step", PyValue(s.step));
  PyValue::Pairs own;
  own.emplace_back("batch", PyValue(s.batch));
  own.emplace_back("batch_size", PyValue(s.batch_size));
  if (s.has_seed) own.emplace_back("seed", PyValue(static_cast<int64_t>(s.seed)));
  if (!s.generator.empty()) own.emplace_back("generator", PyValue::bytes(s.generator));
  if (s.scheduler) own.emplace_back("scheduler", scheduler_to_py(*s.scheduler));
  const Accuracy& a = s.epoch_accuracy;
  PyValue::Pairs sums;
  sums.emplace_back("loss_sum", PyValue(s.epoch_loss_sum));
  sums.emplace_back("samples", PyValue(s.epoch_samples));
  sums.emplace_back("seconds", PyValue(s.epoch_seconds));
  sums.emplace_back("correct", PyValue(a.correct));
  sums.emplace_back("counted", PyValue(a.counted));
  sums.emplace_back("sequences", PyValue(a.sequences));
  sums.emplace_back("sequences_correct", PyValue(a.sequences_correct));
  sums.emplace_back("position_counted", int_list(a.position_counted));
  sums.emplace_back("position_correct", int_list(a.position_correct));
  sums.emplace_back("smoothed", PyValue(s.smoothed));
  sums.emplace_back("smoothed_count", PyValue(s.smoothed_count));
  own.emplace_back("epoch_sums", PyValue::dict(std::move(sums)));
  ckpt.extra.emplace_back(kOwnKey, PyValue::dict(std::move(own)));
  return ckpt;
}

TrainingState from_checkpoint(serialize::Checkpoint ckpt, const std::string& where) {
  TrainingState s;
  s.model = std::move(ckpt.model);
  s.optimizer = std::move(ckpt.optimizer);
  try {
    s.step = int_or(ckpt.find("step"), 0);
    s.epoch = int_or(ckpt.find("epoch"), 0);
    if (s.step < 0 || s.epoch < 0) throw FileError("a negative step or epoch");
    const PyValue* own = ckpt.find(kOwnKey);
    if (!own) return s;
    if (!own->is_mapping()) throw FileError("'nnstudio' is not a dict");
    s.batch = int_or(own->find("batch"), 0);
    s.batch_size = int_or(own->find("batch_size"), 0);
    if (s.batch < 0 || s.batch_size < 0) throw FileError("a negative batch or batch size");
    if (const PyValue* seed = own->find("seed")) {
      s.seed = static_cast<uint64_t>(seed->as_int());
      s.has_seed = true;
    }
    if (const PyValue* g = own->find("generator")) s.generator = g->as_bytes();
    if (const PyValue* sched = own->find("scheduler"))
      s.scheduler = scheduler_from_py(*sched, where);
    if (const PyValue* sums = own->find("epoch_sums")) {
      s.epoch_loss_sum = float_or(sums->find("loss_sum"), 0);
      s.epoch_samples = int_or(sums->find("samples"), 0);
      s.epoch_seconds = float_or(sums->find("seconds"), 0);
      Accuracy& a = s.epoch_accuracy;
      a.correct = int_or(sums->find("correct"), 0);
      a.counted = int_or(sums->find("counted"), 0);
      a.sequences = int_or(sums->find("sequences"), 0);
      a.sequences_correct = int_or(sums->find("sequences_correct"), 0);
      a.position_counted = int_list_from(sums->find("position_counted"));
      a.position_correct = int_list_from(sums->find("position_correct"));
      s.smoothed = float_or(sums->find("smoothed"), 0);
      s.smoothed_count = int_or(sums->find("smoothed_count"), 0);
    }
  } catch (const Error& e) {
    throw FileError(where + ": not a training state this program wrote: " + e.what());
  }
  return s;
}

}  // namespace

void save_checkpoint(const TrainingState& state, const std::string& path) {
  serialize::save_checkpoint(to_checkpoint(state, state.model), path);
}

TrainingState load_checkpoint(const std::string& path) {
  return from_checkpoint(serialize::load_checkpoint(path), path);
}

void save_snapshot(const TrainingState& state, const std::string& weights_path,
                   const std::string& state_path) {
  serialize::save_state_dict_file(state.model, weights_path);
  serialize::save_checkpoint(to_checkpoint(state, nn::StateDict()), state_path);
}

TrainingState load_snapshot(const std::string& weights_path, const std::string& state_path) {
  TrainingState s = from_checkpoint(serialize::load_checkpoint(state_path), state_path);
  s.model = serialize::load_state_dict_file(weights_path);
  return s;
}

}  // namespace nns::train
