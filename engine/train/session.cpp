// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <limits>
#include <map>
#include <utility>

#include "engine/autograd/grad_mode.h"
#include "engine/cpu/flush_denormal.h"
#include "engine/ops/ops.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/generator.h"
#include "engine/train/accuracy.h"

namespace nns::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// steps_per_second is measured over windows of about this much training time.
constexpr double kRateWindowSeconds = 0.5;

using Clock = std::chrono::steady_clock;

// SessionStatus::graphs_off on a GPU when SessionConfig::cuda_graphs is off.
const char* const kGraphsTurnedOff = "turned off in the training settings";

bool any_bad(const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) {
    if (t.defined() && t.is_floating_point() && any_non_finite(t)) return true;
  }
  return false;
}

// "nan", "inf", "-inf" or the number (std::to_string would print "-nan" for some NaNs).
std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string describe_module(const std::string& name, const nn::Module& module) {
  return (name.empty() ? std::string("the model") : "module '" + name + "'") + " (" +
         module.name() + ")";
}

}  // namespace

std::string run_state_name(RunState state) {
  switch (state) {
    case RunState::Idle:
      return "idle";
    case RunState::Running:
      return "running";
    case RunState::Paused:
      return "paused";
    case RunState::Stopped:
      return "stopped";
    case RunState::Failed:
      return "failed";
  }
  return "?";
}

namespace {

nn::ModulePtr seeded_model(const SessionParts& parts, const SessionConfig& config) {
  if (!parts.make_model) throw ValueError("TrainingSession: no make_model; pass a model factory");
  if (!parts.loss) throw ValueError("TrainingSession: no loss module; pass one (CrossEntropyLoss)");
  if (!parts.make_optimizer) {
    throw ValueError("TrainingSession: no make_optimizer; pass an optimizer factory");
  }
  if (parts.train.size() == 0) {
    throw ValueError("TrainingSession: the training set '" + parts.train.name +
                     "' is empty; give it samples");
  }
  if (config.batch_size < 1) {
    throw ValueError("TrainingSession: batch_size must be at least 1, got " +
                     std::to_string(config.batch_size));
  }
  nn::ModulePtr model = with_seed(config.seed, [&] { return parts.make_model(); });
  if (!model) throw ValueError("TrainingSession: make_model returned no model");
  model->train();
  if (!config.device.is_cpu()) model->to(config.device);
  return model;
}

}  // namespace

TrainingSession::TrainingSession(SessionParts parts, const SessionConfig& config)
    : config_(config),
      parts_(std::move(parts)),
      model_(seeded_model(parts_, config_)),
      probes_(model_) {
  optimizer_ = parts_.make_optimizer(model_->parameters());
  make_train_step();
  if (parts_.make_scheduler) scheduler_ = parts_.make_scheduler(*optimizer_);
  make_loader();
  for (auto& [name, m] : model_->named_modules()) module_names_.push_back(name);
  attention_modules_ = attention_modules(model_);
  status_.batch_size = config_.batch_size;
  status_.batches_per_epoch = loader_->num_batches();
  status_.lr = current_lr();
  worker_ = std::thread(&TrainingSession::worker_loop, this);
}

TrainingSession::~TrainingSession() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

// ---- Commands -----------------------------------------------------------------------------

void TrainingSession::post(Command command) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    commands_.push_back(std::move(command));
  }
  wake_.notify_all();
}

void TrainingSession::start() {
  post([this] {
    // A run that reached its configured end stays stopped (reset starts it over).
    const bool done = (config_.epochs > 0 && epoch_ >= config_.epochs) ||
                      (config_.max_steps > 0 && step_ >= config_.max_steps);
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state == RunState::Failed || done) return;
    status_.state = RunState::Running;
    steps_to_run_ = 0;
  });
}

void TrainingSession::pause() {
  post([this] {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state == RunState::Running) status_.state = RunState::Paused;
    steps_to_run_ = 0;
  });
}

void TrainingSession::stop() {
  post([this] {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state != RunState::Failed) status_.state = RunState::Stopped;
    steps_to_run_ = 0;
  });
}

void TrainingSession::step(int64_t batches) {
  if (batches < 1) return;
  post([this, batches] {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state == RunState::Failed || status_.state == RunState::Running) return;
    status_.state = RunState::Paused;
    steps_to_run_ += batches;
  });
}

void TrainingSession::reset(std::optional<uint64_t> seed) {
  post([this, seed] { apply_reset(seed.value_or(config_.seed)); });
}

void TrainingSession::set_lr(double lr) {
  post([this, lr] {
    for (optim::ParamGroup& group : optimizer_->param_groups()) group.options().set_lr(lr);
    std::lock_guard<std::mutex> lock(mutex_);
    status_.lr = lr;
  });
}

void TrainingSession::set_batch_size(int64_t batch_size) {
  if (batch_size < 1) {
    throw ValueError("set_batch_size: the batch size must be at least 1, got " +
                     std::to_string(batch_size));
  }
  post([this, batch_size] { pending_batch_size_ = batch_size; });
}

void TrainingSession::set_progress(int64_t step, int64_t epoch) {
  if (step < 0 || epoch < 0) {
    throw ValueError("set_progress: step and epoch must not be negative, got step " +
                     std::to_string(step) + ", epoch " + std::to_string(epoch));
  }
  post([this, step, epoch] {
    step_ = step;
    epoch_ = epoch;
    epoch_batches_.reset();
    batch_ = 0;
    std::lock_guard<std::mutex> lock(mutex_);
    status_.step = step;
    status_.epoch = epoch;
    status_.batch = 0;
  });
}

void TrainingSession::restore(TrainingState state) {
  post([this, state = std::move(state)] {
    try {
      apply_restore(state);
    } catch (const std::exception& e) {
      fail(std::string("continuing from the saved state failed: ") + e.what(), "");
    }
  });
}

void TrainingSession::set_observer(std::shared_ptr<SessionObserver> observer) {
  post([this, observer = std::move(observer)] {
    observer_ = observer;
    snapshot_step_ = -1;
  });
}

void TrainingSession::snapshot() {
  post([this] { offer_snapshot(/*forced=*/true); });
}

void TrainingSession::evaluate() {
  post([this] {
    const Evaluation e = run_evaluation();
    std::lock_guard<std::mutex> lock(mutex_);
    if (parts_.test.size() > 0) status_.last_evaluation = e;
  });
}

uint64_t TrainingSession::predict(const Tensor& inputs) {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = next_prediction_++;
  }
  post([this, id, inputs] {
    Prediction p;
    p.id = id;
    p.step = step_;
    try {
      NoGradGuard no_grad;
      model_->eval();
      const AttentionRecording recording(attention_modules_);
      // The window's inputs come from the host and go back there (a GPU run's model is there).
      p.outputs = (*model_)(inputs.to(config_.device)).to(kCPU).clone();
      p.attention = recording.maps(0);
    } catch (const std::exception& e) {
      p.error = e.what();
    }
    model_->train();
    std::lock_guard<std::mutex> lock(mutex_);
    if (predictions_.size() >= kKeptPredictions) predictions_.pop_front();
    predictions_.push_back(std::move(p));
  });
  return id;
}

uint64_t TrainingSession::trace(const Tensor& input, const Tensor& target) {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = next_prediction_++;
  }
  post([this, id, input, target] {
    SampleTrace t;
    t.id = id;
    t.step = step_;
    std::vector<RemovableHandle> hooks;
    std::map<const nn::Module*, size_t> index;  // module -> its entry in t.modules
    for (auto& [name, module] : model_->named_modules()) {
      const nn::Module* m = module.get();
      hooks.push_back(module->register_forward_hook(
          [&t, &index, m, name = name](
              nn::Module&, const std::vector<Tensor>& inputs,
              const std::vector<Tensor>& outputs) -> std::optional<std::vector<Tensor>> {
            ModuleTrace mt;
            mt.module = name;
            // Host copies: the window reads them (on a GPU run the tensors live there).
            if (!inputs.empty() && inputs[0].defined())
              mt.input = inputs[0].detach().to(kCPU).clone();
            if (!outputs.empty() && outputs[0].defined())
              mt.output = outputs[0].detach().to(kCPU).clone();
            index[m] = t.modules.size();
            t.modules.push_back(std::move(mt));
            return std::nullopt;
          }));
      hooks.push_back(module->register_full_backward_hook(
          [&t, &index, m](
              nn::Module&, const std::vector<Tensor>&,
              const std::vector<Tensor>& grad_output) -> std::optional<std::vector<Tensor>> {
            const auto it = index.find(m);
            if (it != index.end() && !grad_output.empty() && grad_output[0].defined()) {
              t.modules[it->second].grad_output = grad_output[0].detach().to(kCPU).clone();
            }
            return std::nullopt;
          }));
    }
    try {
      model_->eval();
      optimizer_->zero_grad();
      const Tensor output = (*model_)(input.to(config_.device));
      const auto [scores, labels] = loss_inputs(output, target.to(config_.device));
      const Tensor loss = (*parts_.loss)({scores, labels}).at(0);
      t.loss = loss.item();
      loss.backward();
    } catch (const std::exception& e) {
      t.modules.clear();
      t.error = e.what();
    }
    for (RemovableHandle& h : hooks) h.remove();
    optimizer_->zero_grad();
    model_->train();
    std::lock_guard<std::mutex> lock(mutex_);
    if (traces_.size() >= kKeptPredictions) traces_.pop_front();
    traces_.push_back(std::move(t));
  });
  return id;
}

std::optional<SampleTrace> TrainingSession::take_trace() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (traces_.empty()) return std::nullopt;
  std::optional<SampleTrace> out = std::move(traces_.front());
  traces_.pop_front();
  return out;
}

ProbeId TrainingSession::add_probe(const std::string& module_name, const ProbeOptions& options) {
  check_probe(module_names_, module_name, options);
  const ProbeId id = next_probe_id_++;
  post([this, module_name, options, id] { probes_.add(module_name, options, id); });
  return id;
}

void TrainingSession::remove_probe(ProbeId id) {
  post([this, id] { probes_.remove(id); });
}

void TrainingSession::set_profiling(bool on, ProfilerOptions options) {
  if (on) check_profiler_options(options);
  post([this, on, options] {
    std::unique_ptr<Profiler> profiler =
        on ? std::make_unique<Profiler>(model_, config_.device, options) : nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::swap(profiler_, profiler);
    }
    // The one replaced goes here, on the worker: its hooks are on the worker's model.
  });
}

// ---- Reading ------------------------------------------------------------------------------

SessionStatus TrainingSession::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

std::optional<StepProfile> TrainingSession::profile() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!profiler_) return std::nullopt;
  return profiler_->profile();
}

std::vector<StepMetrics> TrainingSession::take_step_metrics() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<StepMetrics> out(step_metrics_.begin(), step_metrics_.end());
  step_metrics_.clear();
  return out;
}

std::vector<EpochMetrics> TrainingSession::epoch_history() const {
  return epoch_history(0);
}

std::vector<EpochMetrics> TrainingSession::epoch_history(size_t from) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t kept = std::max(from, history_dropped_) - history_dropped_;
  if (kept >= history_.size()) return {};
  return {history_.begin() + static_cast<std::ptrdiff_t>(kept), history_.end()};
}

size_t TrainingSession::epoch_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return history_dropped_ + history_.size();
}

void TrainingSession::set_epoch_history_limit(size_t limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  history_limit_ = limit;
  trim_history();
}

void TrainingSession::trim_history() {
  while (history_limit_ > 0 && history_.size() > history_limit_) {
    history_.pop_front();
    ++history_dropped_;
  }
}

std::vector<std::string> TrainingSession::attention_module_names() const {
  std::vector<std::string> names;
  for (const auto& [name, mha] : attention_modules_) names.push_back(name);
  return names;
}

std::optional<Prediction> TrainingSession::take_prediction() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (predictions_.empty()) return std::nullopt;
  std::optional<Prediction> out = std::move(predictions_.front());
  predictions_.pop_front();
  return out;
}

bool TrainingSession::sync(std::chrono::milliseconds timeout) {
  auto applied = std::make_shared<std::promise<void>>();
  std::future<void> done = applied->get_future();
  post([applied] { applied->set_value(); });
  return done.wait_for(timeout) == std::future_status::ready;
}

bool TrainingSession::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return settled_.wait_for(lock, timeout, [this] {
    return commands_.empty() && !busy_ && status_.state != RunState::Running && steps_to_run_ == 0;
  });
}

// ---- The worker ---------------------------------------------------------------------------

void TrainingSession::worker_loop() {
  if (config_.flush_denormal) set_flush_denormal(true);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] {
      return quit_ || !commands_.empty() || status_.state == RunState::Running || steps_to_run_ > 0;
    });
    if (quit_) return;
    busy_ = true;
    // Batches asked for by step(n) come before the commands queued after it (so that
    // step(2); set_lr(x); step(2) changes the rate between the two pairs); a continuous run
    // takes commands between any two steps.
    const bool stepping = status_.state != RunState::Running && steps_to_run_ > 0;
    if (!stepping && !commands_.empty()) {
      Command command = std::move(commands_.front());
      commands_.pop_front();
      lock.unlock();
      command();
      lock.lock();
    } else {
      lock.unlock();
      run_step();
      lock.lock();
      if (stepping && steps_to_run_ > 0) --steps_to_run_;
    }
    busy_ = false;
    if (commands_.empty() && status_.state != RunState::Running && steps_to_run_ == 0) {
      settled_.notify_all();
    }
  }
}

double TrainingSession::current_lr() const {
  const auto& groups = optimizer_->param_groups();
  return groups.empty() ? 0 : groups.front().options().get_lr();
}

void TrainingSession::begin_epoch() {
  if (pending_batch_size_ > 0) {
    config_.batch_size = pending_batch_size_;
    pending_batch_size_ = 0;
    make_loader();
  }
  epoch_batches_ = loader_->epoch(epoch_);
  batch_ = 0;
  epoch_loss_sum_ = 0;
  epoch_accuracy_ = Accuracy();
  epoch_samples_ = 0;
  epoch_seconds_ = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  status_.batch = 0;
  status_.batch_size = config_.batch_size;
  status_.batches_per_epoch = epoch_batches_->size();
}

void TrainingSession::run_step() {
  const auto start = Clock::now();
  if (profiler_) {
    // The profiler's step takes in the batch's taking (its data row). Its calls are no-ops on
    // the steps it does not sample.
    try {
      profiler_->begin_step(step_ + 1);
      profiler_->mark(ProfilePhase::Data);
    } catch (const std::exception& e) {
      return fail("profiling step " + std::to_string(step_ + 1) + " failed: " + e.what(), "");
    }
  }
  if (!epoch_batches_) begin_epoch();
  const data::Batch host_batch = device_batches_.host_batch(*epoch_batches_, batch_);
  const int64_t step = step_ + 1;
  double loss_value = 0;
  std::optional<Accuracy> accuracy;
  try {
    probes_.begin_step(step);
    // On a GPU the batch moves there (its copy queued during the last step, see
    // data/device_batches.h); the accuracy is counted from the host's targets.
    const data::Batch batch = device_batches_.on_device();
    const StepResult result = take_step(batch);
    loss_value = result.loss.item();
    if (!std::isfinite(loss_value) || result.found_inf.item() != 0.0) {
      return fail_non_finite(step, loss_value, batch);
    }
    if (step_graph_) step_graph_->warmed_up();
    if (scheduler_ && config_.scheduler_per_step) scheduler_->step();
    probes_.end_step();
    if (profiler_) profiler_->end_step();
    if (parts_.train.task == data::TaskKind::Classification) {
      accuracy = score_predictions(result.output.to(kCPU), host_batch.targets);
    }
  } catch (const std::exception& e) {
    // The step's own error is the one to report.
    end_failed_step();
    fail(std::string("step ") + std::to_string(step) + " failed: " + e.what(), "");
    return;
  }
  if (config_.device.is_cuda()) {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.graph_replays = step_graph_ ? step_graph_->replays() : 0;
    status_.graphs_off = step_graph_ ? step_graph_->disabled_reason() : kGraphsTurnedOff;
  }
  record_step(step, loss_value, accuracy, host_batch.inputs.size(0),
              std::chrono::duration<double>(Clock::now() - start).count());
}

StepResult TrainingSession::take_step(const data::Batch& batch) {
  if (step_graph_ && !probes_.sampling() && !(profiler_ && profiler_->sampling())) {
    if (std::optional<StepResult> replayed = step_graph_->step(batch.inputs, batch.targets)) {
      return *replayed;
    }
  }
  return train_step(*train_step_, batch.inputs, batch.targets);
}

void TrainingSession::fail_non_finite(int64_t step, double loss_value, const data::Batch& batch) {
  end_failed_step();
  if (!std::isfinite(loss_value)) {
    const std::string where = locate_non_finite_activation(batch);
    fail("the loss is " + number_text(loss_value) + " at step " + std::to_string(step) +
             ": the first non-finite value (NaN or Inf) appeared in " +
             (where.empty() ? "the loss (" + parts_.loss->name() + ")"
                            : describe_module(where, *model_->get_submodule(where))) +
             "; lower the learning rate, normalize the inputs or clip gradients",
         where);
    return;
  }
  const std::string where = locate_non_finite_gradient(batch);
  fail("a gradient is not finite (NaN or Inf) at step " + std::to_string(step) +
           ": it first appeared in " + where + "; lower the learning rate or clip gradients",
       failed_module_);
}

void TrainingSession::end_failed_step() {
  // Neither may hide the failure that ends the step.
  try {
    probes_.end_step();
  } catch (const std::exception&) {
  }
  try {
    if (profiler_) profiler_->end_step();
  } catch (const std::exception&) {
  }
}

void TrainingSession::record_step(int64_t step, double loss_value,
                                  const std::optional<Accuracy>& accuracy, int64_t samples,
                                  double seconds) {
  step_ = step;
  ++batch_;
  epoch_loss_sum_ += loss_value * static_cast<double>(samples);
  if (accuracy) epoch_accuracy_.add(*accuracy);
  epoch_samples_ += samples;
  epoch_seconds_ += seconds;
  smoothed_ = kLossSmoothing * smoothed_ + (1 - kLossSmoothing) * loss_value;
  ++smoothed_count_;
  rate_seconds_ += seconds;
  ++rate_steps_;
  if (rate_seconds_ > 0) rate_ = static_cast<double>(rate_steps_) / rate_seconds_;
  if (rate_seconds_ >= kRateWindowSeconds) {
    rate_seconds_ = 0;
    rate_steps_ = 0;
  }

  StepMetrics m;
  m.step = step;
  m.epoch = epoch_ + 1;
  m.loss = loss_value;
  m.smoothed_loss =
      smoothed_ / (1 - std::pow(kLossSmoothing, static_cast<double>(smoothed_count_)));
  m.accuracy = accuracy ? accuracy->rate() : kNaN;
  m.lr = current_lr();
  publish_step(m);
  if (observer_) observer_->on_step(m);
  if (batch_ == epoch_batches_->size()) end_epoch();
  if (config_.max_steps > 0 && step_ >= config_.max_steps) {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.state = RunState::Stopped;
    steps_to_run_ = 0;
  }
  offer_snapshot(/*forced=*/false);
}

void TrainingSession::publish_step(const StepMetrics& m) {
  const ProbeOverhead probe_overhead = probes_.overhead();
  std::lock_guard<std::mutex> lock(mutex_);
  status_.probe_overhead = probe_overhead;
  status_.step = m.step;
  status_.batch = batch_;
  status_.loss = m.loss;
  status_.smoothed_loss = m.smoothed_loss;
  status_.lr = m.lr;
  status_.steps_per_second = rate_;
  if (step_metrics_.size() >= std::max<size_t>(config_.metrics_capacity, 1)) {
    step_metrics_.pop_front();
  }
  step_metrics_.push_back(m);
}

void TrainingSession::end_epoch() {
  EpochMetrics e;
  e.epoch = epoch_ + 1;
  e.step = step_;
  const auto n = static_cast<double>(std::max<int64_t>(epoch_samples_, 1));
  e.train_loss = epoch_loss_sum_ / n;
  e.train_accuracy = epoch_accuracy_.rate();
  const Evaluation test = run_evaluation();
  e.test_loss = test.loss;
  e.test_accuracy = test.accuracy;
  e.test_sequence_accuracy = test.sequence_accuracy;
  e.seconds = epoch_seconds_;
  e.steps_per_second =
      epoch_seconds_ > 0 ? static_cast<double>(epoch_batches_->size()) / epoch_seconds_ : 0;
  ++epoch_;
  epoch_batches_.reset();
  if (scheduler_ && !config_.scheduler_per_step) scheduler_->step();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state == RunState::Failed) return;
  }
  if (observer_) observer_->on_epoch(e);
  std::lock_guard<std::mutex> lock(mutex_);
  history_.push_back(e);
  trim_history();
  status_.epoch = epoch_;
  status_.lr = current_lr();
  status_.last_epoch = e;
  if (parts_.test.size() > 0) status_.last_evaluation = test;
  if (config_.epochs > 0 && epoch_ >= config_.epochs) {
    status_.state = RunState::Stopped;
    steps_to_run_ = 0;
  }
}

Evaluation TrainingSession::run_evaluation() {
  Evaluation e;
  e.step = step_;
  e.loss = e.accuracy = e.sequence_accuracy = kNaN;
  const data::Dataset& test = parts_.test;
  const int64_t n = test.size();
  if (n == 0) return e;
  try {
    NoGradGuard no_grad;
    model_->eval();
    double loss_sum = 0;
    Accuracy accuracy;
    bool counted = test.task == data::TaskKind::Classification;
    const int64_t chunk = std::max<int64_t>(config_.eval_chunk, 1);
    for (int64_t begin = 0; begin < n; begin += chunk) {
      const int64_t len = std::min(chunk, n - begin);
      const Tensor x = test.input_range(begin, len).to(config_.device);
      const Tensor y_host = test.targets.narrow(0, begin, len);
      const Tensor y = y_host.to(config_.device);
      const Tensor output = (*model_)(x);
      const auto [scores, labels] = loss_inputs(output, y);
      loss_sum += (*parts_.loss)({scores, labels}).at(0).item() * static_cast<double>(len);
      if (counted) {
        const std::optional<Accuracy> a = score_predictions(output.to(kCPU), y_host);
        counted = a.has_value();
        if (a) accuracy.add(*a);
      }
    }
    e.loss = loss_sum / static_cast<double>(n);
    if (counted) {
      e.accuracy = accuracy.rate();
      e.sequence_accuracy = accuracy.sequence_rate();
      e.position_accuracy = accuracy.position_rates();
      if (static_cast<int64_t>(accuracy.predicted.size()) == n) {
        e.predicted = std::make_shared<const std::vector<int64_t>>(std::move(accuracy.predicted));
      }
    }
  } catch (const std::exception& ex) {
    model_->train();
    fail(std::string("evaluating on the test set failed: ") + ex.what(), "");
    return e;
  }
  model_->train();
  return e;
}

void TrainingSession::fail(const std::string& message, const std::string& module) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_.state = RunState::Failed;
  status_.error = message;
  status_.failed_module = module;
  steps_to_run_ = 0;
}

// Replays the batch's forward (no grad) with a forward hook on every module; hooks run as
// each module finishes, so the first one that sees a non-finite output is where it began.
std::string TrainingSession::locate_non_finite_activation(const data::Batch& batch) {
  std::string first;
  bool found = false;
  std::vector<RemovableHandle> hooks;
  for (auto& [name, module] : model_->named_modules()) {
    hooks.push_back(module->register_forward_hook(
        [&first, &found, name = name](
            nn::Module&, const std::vector<Tensor>&,
            const std::vector<Tensor>& outputs) -> std::optional<std::vector<Tensor>> {
          if (!found && any_bad(outputs)) {
            found = true;
            first = name;
          }
          return std::nullopt;
        }));
  }
  try {
    NoGradGuard no_grad;
    (*model_)(batch.inputs);
  } catch (const std::exception&) {
    // The replay only looks for the place; the step's failure is reported either way.
  }
  for (RemovableHandle& h : hooks) h.remove();
  return found ? first : std::string();
}

// Replays the batch's forward and backward with a full backward hook on every module. Hooks
// run in backward order: the first module whose input gradients are not finite while its
// output gradients are made them; output gradients that are already bad at the first hook
// came from the loss. A parameter's gradient can go bad alone (the first layer's input needs
// no gradient): then the last such parameter in the model, the first in backward order.
std::string TrainingSession::locate_non_finite_gradient(const data::Batch& batch) {
  failed_module_.clear();
  std::string where;
  bool found = false, first_hook = true;
  std::vector<RemovableHandle> hooks;
  for (auto& [name, module] : model_->named_modules()) {
    nn::Module* m = module.get();
    hooks.push_back(module->register_full_backward_hook(
        [&, name = name, m](
            nn::Module&, const std::vector<Tensor>& grad_input,
            const std::vector<Tensor>& grad_output) -> std::optional<std::vector<Tensor>> {
          const bool was_first = first_hook;
          first_hook = false;
          if (found) return std::nullopt;
          if (any_bad(grad_output)) {
            found = true;
            if (was_first) {
              where = "the gradient of the loss (" + parts_.loss->name() + ")";
            } else {
              where = "the gradient w.r.t. the output of " + describe_module(name, *m);
              failed_module_ = name;
            }
          } else if (any_bad(grad_input)) {
            found = true;
            where = "the gradient w.r.t. the input of " + describe_module(name, *m);
            failed_module_ = name;
          }
          return std::nullopt;
        }));
  }
  try {
    optimizer_->zero_grad();
    const auto [scores, labels] = loss_inputs((*model_)(batch.inputs), batch.targets);
    (*parts_.loss)({scores, labels}).at(0).backward();
  } catch (const std::exception&) {
    // As above: only the place is looked for.
  }
  for (RemovableHandle& h : hooks) h.remove();
  if (!found) {
    const nn::NamedList<Tensor> params = model_->named_parameters();
    for (auto it = params.rbegin(); it != params.rend(); ++it) {
      const Tensor g = it->second.grad();
      if (!g.defined() || !any_non_finite(g)) continue;
      const std::string& pname = it->first;
      const size_t dot = pname.rfind('.');
      failed_module_ = dot == std::string::npos ? "" : pname.substr(0, dot);
      where = "the gradient of parameter '" + pname + "' of " +
              describe_module(failed_module_, *model_->get_submodule(failed_module_));
      found = true;
      break;
    }
  }
  optimizer_->zero_grad();
  return found ? where : "a gradient the module hooks did not see";
}

void TrainingSession::make_loader() {
  loader_ = std::make_unique<data::DataLoader>(
      parts_.train, data::DataLoaderOptions{config_.batch_size, config_.shuffle, config_.seed});
}

void TrainingSession::offer_snapshot(bool forced) {
  if (!observer_ || step_ == snapshot_step_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state == RunState::Failed) return;
  }
  if (!forced && !observer_->wants_snapshot(step_)) return;
  snapshot_step_ = step_;
  observer_->on_snapshot(training_state());
}

TrainingState TrainingSession::training_state() const {
  TrainingState s;
  for (const auto& item : model_->state_dict()) s.model.insert(item.key(), item.value().clone());
  s.optimizer = optimizer_->state_dict();
  // The optimizer's state tensors change in place on the next step: keep copies.
  for (auto& [index, entries] : s.optimizer->state) {
    for (auto& item : entries) item.value() = item.value().clone();
  }
  if (scheduler_) s.scheduler = scheduler_->state_dict();
  s.step = step_;
  s.epoch = epoch_;
  s.batch_size = config_.batch_size;
  s.seed = config_.seed;
  s.has_seed = true;
  {
    Generator& g = default_generator();
    std::lock_guard<std::mutex> lock(g.mutex);
    s.generator = g.get_state();
  }
  s.smoothed = smoothed_;
  s.smoothed_count = smoothed_count_;
  // Between epochs (none begun, or the last one just ended) nothing of an epoch is summed.
  if (epoch_batches_ && batch_ < epoch_batches_->size()) {
    s.batch = batch_;
    s.epoch_loss_sum = epoch_loss_sum_;
    s.epoch_samples = epoch_samples_;
    s.epoch_seconds = epoch_seconds_;
    s.epoch_accuracy = epoch_accuracy_;
  }
  return s;
}

void TrainingSession::check_restorable(const TrainingState& s) const {
  const serialize::LoadReport report = serialize::compare_state_dict(*model_, s.model);
  if (!report.loadable(/*strict=*/true)) {
    throw ValueError("the saved weights do not fit this model: " + report.str());
  }
  if (s.optimizer) parts_.make_optimizer(model_->parameters())->load_state_dict(*s.optimizer);
  if (!s.generator.empty()) {
    Generator probe;
    probe.set_state(s.generator);
  }
}

void TrainingSession::apply_restore(const TrainingState& s) {
  // Everything is checked before anything changes.
  check_restorable(s);
  std::unique_ptr<optim::Optimizer> optimizer = parts_.make_optimizer(model_->parameters());
  if (s.optimizer) optimizer->load_state_dict(*s.optimizer);
  std::unique_ptr<optim::LRScheduler> scheduler;
  if (parts_.make_scheduler) {
    scheduler = parts_.make_scheduler(*optimizer);
    if (s.scheduler) scheduler->load_state_dict(*s.scheduler);
    // Making the scheduler set the rates from its own start: the saved ones go back.
    if (s.optimizer) optimizer->load_state_dict(*s.optimizer);
  }
  {
    NoGradGuard no_grad;
    model_->load_state_dict(s.model);
  }
  model_->train();
  if (profiler_) profiler_->reset();
  scheduler_.reset();
  optimizer_ = std::move(optimizer);
  make_train_step();
  scheduler_ = std::move(scheduler);
  if (!s.generator.empty()) {
    Generator& g = default_generator();
    std::lock_guard<std::mutex> lock(g.mutex);
    g.set_state(s.generator);
  }
  // The saved batch size finishes the saved epoch; the session's own applies from the next.
  const int64_t own_batch_size = pending_batch_size_ > 0 ? pending_batch_size_ : config_.batch_size;
  if (s.batch_size > 0) config_.batch_size = s.batch_size;
  pending_batch_size_ = own_batch_size != config_.batch_size ? own_batch_size : 0;
  make_loader();
  step_ = s.step;
  epoch_ = s.epoch;
  epoch_batches_.reset();
  batch_ = 0;
  epoch_loss_sum_ = 0;
  epoch_accuracy_ = Accuracy();
  epoch_samples_ = 0;
  epoch_seconds_ = 0;
  if (s.batch > 0) {
    epoch_batches_ = loader_->epoch(epoch_);
    if (s.batch >= epoch_batches_->size()) {
      throw ValueError("the saved state is at batch " + std::to_string(s.batch) +
                       " of an epoch of " + std::to_string(epoch_batches_->size()));
    }
    batch_ = s.batch;
    epoch_loss_sum_ = s.epoch_loss_sum;
    epoch_accuracy_ = s.epoch_accuracy;
    epoch_samples_ = s.epoch_samples;
    epoch_seconds_ = s.epoch_seconds;
  }
  smoothed_ = s.smoothed;
  smoothed_count_ = s.smoothed_count;
  rate_seconds_ = 0;
  rate_steps_ = 0;
  rate_ = 0;
  snapshot_step_ = step_;  // the state came from a snapshot: no second one of this step
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t resets = status_.resets;
  status_ = SessionStatus();
  status_.resets = resets;
  status_.state = step_ > 0 ? RunState::Paused : RunState::Idle;
  status_.step = step_;
  status_.epoch = epoch_;
  status_.batch = batch_;
  status_.batch_size = config_.batch_size;
  status_.batches_per_epoch = epoch_batches_ ? epoch_batches_->size() : loader_->num_batches();
  status_.lr = current_lr();
  steps_to_run_ = 0;
  step_metrics_.clear();
  history_.clear();
  history_dropped_ = 0;
}

void TrainingSession::make_train_step() {
  TrainStep step{*model_, *optimizer_,
                 [this](const Tensor& output, const Tensor& targets) {
                   const auto [scores, labels] = loss_inputs(output, targets);
                   return (*parts_.loss)({scores, labels}).at(0);
                 },
                 config_.clip_grad_norm};
  // On a GPU the gradients are zeroed in place: a CUDA graph captured before writes them.
  step.set_to_none = config_.device.is_cpu();
  step.mark = [this](ProfilePhase phase) {
    if (profiler_) profiler_->mark(phase);
  };
  step.before_optimizer_step = [this] { probes_.before_optimizer_step(); };
  train_step_.emplace(std::move(step));
  step_graph_.reset();
  if (!config_.device.is_cuda()) return;
  if (!config_.cuda_graphs) {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.graphs_off = kGraphsTurnedOff;
    return;
  }
  step_graph_ = std::make_unique<StepGraph>(*train_step_, config_.device);
}

void TrainingSession::apply_reset(uint64_t seed) {
  config_.seed = seed;
  nn::ModulePtr fresh = with_seed(seed, [&] { return parts_.make_model(); });
  if (!config_.device.is_cpu()) fresh->to(config_.device);
  {
    NoGradGuard no_grad;
    model_->load_state_dict(fresh->state_dict());
  }
  model_->train();
  if (profiler_) profiler_->reset();
  scheduler_.reset();
  optimizer_ = parts_.make_optimizer(model_->parameters());
  make_train_step();
  if (parts_.make_scheduler) scheduler_ = parts_.make_scheduler(*optimizer_);
  if (pending_batch_size_ > 0) {
    config_.batch_size = pending_batch_size_;
    pending_batch_size_ = 0;
  }
  make_loader();
  epoch_batches_.reset();
  step_ = epoch_ = batch_ = 0;
  snapshot_step_ = -1;
  smoothed_ = 0;
  smoothed_count_ = 0;
  rate_seconds_ = 0;
  rate_steps_ = 0;
  rate_ = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t resets = status_.resets + 1;
  status_ = SessionStatus();
  status_.resets = resets;
  status_.batch_size = config_.batch_size;
  status_.batches_per_epoch = loader_->num_batches();
  status_.lr = current_lr();
  steps_to_run_ = 0;
  step_metrics_.clear();
  history_.clear();
  history_dropped_ = 0;
}

}  // namespace nns::train
