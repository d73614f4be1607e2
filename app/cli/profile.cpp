// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli profile PROJECT: where a training step's time goes, module by module. It trains
// the project's model as `train` would (its session, its data, its settings) for a few steps
// and prints each module's forward and backward time, its calls and the memory of its outputs
// per step, then the rest of the step (the data, the loss, the optimizer), so that the rows add
// up to the measured step (engine/train/profiler.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "engine/graph/project.h"
#include "engine/graph/spec.h"
#include "engine/train/profiler.h"
#include "engine/train/session.h"

namespace nns::cli {
namespace {

// Measured but not recorded (train::ProfilerOptions::warmup): the first steps make the
// allocations, caches and (on a GPU) the kernels' first loads that every later step reuses, and
// would be what the profile shows.
constexpr int64_t kWarmUpSteps = 2;

std::string milliseconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", 1000 * seconds);
  return buf;
}

// "512 B", "64.0 KiB", "2.00 MiB".
std::string memory(double bytes) {
  char buf[32];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  } else if (bytes < 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024 * 1024));
  }
  return buf;
}

// The table: the modules by their self time (forward + backward) per step, most first, then the
// rows outside them and the measured step.
void print_profile(const train::StepProfile& p) {
  const double n = static_cast<double>(p.steps);
  const double step = p.step_seconds / n;
  const auto share = [&](double seconds) { return percent(step > 0 ? seconds / n / step : 0); };
  std::vector<const train::ModuleProfile*> order;
  for (const train::ModuleProfile& m : p.modules) order.push_back(&m);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->self_forward_seconds + a->self_backward_seconds >
           b->self_forward_seconds + b->self_backward_seconds;
  });
  std::vector<std::vector<std::string>> rows{
      {"module", "type", "forward ms", "backward ms", "total ms", "calls", "share", "output"}};
  for (const train::ModuleProfile* m : order) {
    const double total = m->self_forward_seconds + m->self_backward_seconds;
    char calls[32];
    std::snprintf(calls, sizeof calls, "%g", static_cast<double>(m->calls) / n);
    rows.push_back({m->module, m->type, milliseconds(m->self_forward_seconds / n),
                    milliseconds(m->self_backward_seconds / n), milliseconds(total / n), calls,
                    share(total), memory(static_cast<double>(m->output_bytes) / n)});
  }
  const double outside = p.outside_forward_seconds + p.outside_backward_seconds;
  rows.push_back({"outside modules", "", milliseconds(p.outside_forward_seconds / n),
                  milliseconds(p.outside_backward_seconds / n), milliseconds(outside / n), "",
                  share(outside), ""});
  const auto row = [&](const std::string& name, double seconds) {
    rows.push_back({name, "", "", "", milliseconds(seconds / n), "", share(seconds), ""});
  };
  row("loss", p.loss_seconds);
  row("data", p.data_seconds);
  row("optimizer", p.optimizer_seconds);
  row("other (between phases)", p.step_seconds - p.accounted_seconds());
  row("step (measured)", p.step_seconds);
  print_table(rows, /*left=*/2, /*indent=*/"", /*gap=*/"  ");
  std::cout << "accounted: "
            << percent(p.step_seconds > 0 ? p.accounted_seconds() / p.step_seconds : 0)
            << " of the measured step\n";
}

// Every field of the profile; the seconds, calls and bytes are sums over "steps".
graph::Json profile_json(const train::StepProfile& p) {
  graph::Json modules = graph::Json::array();
  for (const train::ModuleProfile& m : p.modules) {
    modules.push_back({{"module", m.module},
                       {"type", m.type},
                       {"forward_seconds", m.forward_seconds},
                       {"backward_seconds", m.backward_seconds},
                       {"self_forward_seconds", m.self_forward_seconds},
                       {"self_backward_seconds", m.self_backward_seconds},
                       {"calls", m.calls},
                       {"output_bytes", m.output_bytes}});
  }
  return {{"device", p.device},
          {"timer", p.timer},
          {"summed_over", "steps"},
          {"steps", p.steps},
          {"skipped", p.skipped},
          {"overhead", p.overhead},
          {"step_seconds", p.step_seconds},
          {"data_seconds", p.data_seconds},
          {"forward_seconds", p.forward_seconds},
          {"loss_seconds", p.loss_seconds},
          {"backward_seconds", p.backward_seconds},
          {"optimizer_seconds", p.optimizer_seconds},
          {"outside_forward_seconds", p.outside_forward_seconds},
          {"outside_backward_seconds", p.outside_backward_seconds},
          {"accounted_seconds", p.accounted_seconds()},
          {"modules", modules}};
}

// Runs `steps` batches and waits; a failed run is an error with the session's reason.
void run_steps(train::TrainingSession& session, int64_t steps) {
  session.step(steps);
  session.wait_idle();
  const train::SessionStatus st = session.status();
  if (st.state == train::RunState::Failed) throw std::runtime_error("training failed: " + st.error);
}

int run_profile(const Options& o) {
  const std::string path = o.positional(0);
  graph::Project project = graph::load_project(path);
  // As train --device: the project's setting, overridden, checked by make_session.
  if (o.has("device")) project.training.device = o.text("device");
  const int64_t steps = o.integer("steps", 1, 1000000);
  // The steps asked for, whatever the project's epochs; and the training alone, without the
  // project's probes watching it.
  project.training.epochs = 0;
  project.probes.clear();
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  std::unique_ptr<train::TrainingSession> session = train::make_session(project, base_dir);
  train::ProfilerOptions options;
  options.every = 1;
  options.max_overhead = 0;
  options.warmup = kWarmUpSteps;
  session->set_profiling(true, options);
  run_steps(*session, kWarmUpSteps + steps);
  const train::StepProfile profile = session->profile().value();
  if (o.flag("json")) {
    std::cout << profile_json(profile).dump(1) << "\n";
    return 0;
  }
  std::printf(
      "%s on %s, timed with the %s: %lld steps after %lld warm-up steps (not recorded: "
      "they make the first allocations)\n",
      project.name.c_str(), profile.device.c_str(), profile.timer.c_str(),
      static_cast<long long>(profile.steps), static_cast<long long>(kWarmUpSteps));
  std::printf(
      "milliseconds per step, each module without its children; output: the bytes of "
      "its outputs per step\n\n");
  print_profile(profile);
  return 0;
}

}  // namespace

Command profile_command() {
  return {"profile",
          "show where a training step's time goes, module by module",
          {{"PROJECT", "the project file (.nns)"}},
          {{"device", "DEVICE", "",
            "profile on cpu, cuda or cuda:N (default: the project's; see nnstudio-cli devices)"},
           {"steps", "N", "20", "steps to profile, after 2 warm-up steps"},
           {"json", "", "",
            "print the profile as JSON (seconds, calls and bytes summed over "
            "its steps)"}},
          run_profile};
}

}  // namespace nns::cli
