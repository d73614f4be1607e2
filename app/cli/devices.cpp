// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli devices [--json]: the devices a model can train on: the CPU, and each CUDA GPU
// (name, memory, compute capability), or why there is none: the CUDA backend library is not
// there or cannot be loaded, the NVIDIA driver is missing, or there is no GPU
// (engine/backend/cuda_backend.h). The exit code is 0 either way: no GPU is not an error.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "app/cli/commands.h"
#include "engine/backend/cuda_backend.h"
#include "engine/graph/spec.h"

namespace nns::cli {
namespace {

// The CPU's model name as /proc/cpuinfo gives it; "" where it does not.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    std::string name = line.substr(colon + 1);
    name.erase(0, name.find_first_not_of(" \t"));
    return name;
  }
  return "";
}

std::string gib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

int run_devices(const Options& options) {
  const std::string cpu = cpu_model();
  const unsigned threads = std::thread::hardware_concurrency();
  const std::vector<CudaDeviceProperties> gpus = cuda::devices();
  const std::string reason = cuda::unavailable_reason();
  if (options.flag("json")) {
    graph::Json out = {{"cpu", {{"device", "cpu"}, {"name", cpu}, {"threads", threads}}},
                       {"cuda", graph::Json::array()},
                       {"cuda_backend", cuda::backend_path()}};
    for (const CudaDeviceProperties& p : gpus) {
      out["cuda"].push_back(
          {{"device", "cuda:" + std::to_string(p.index)},
           {"name", p.name},
           {"memory_bytes", p.total_memory},
           {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
           {"multiprocessors", p.multiprocessors}});
    }
    if (gpus.empty()) out["cuda_unavailable"] = reason;
    std::cout << out.dump(1) << "\n";
    return 0;
  }
  std::cout << "cpu     " << (cpu.empty() ? "CPU" : cpu) << ", " << threads << " threads\n";
  for (const CudaDeviceProperties& p : gpus) {
    std::cout << "cuda:" << p.index << "  " << p.name << ", " << gib(p.total_memory)
              << ", compute capability " << p.major << "." << p.minor << ", " << p.multiprocessors
              << " multiprocessors\n";
  }
  if (gpus.empty()) std::cout << "no CUDA device: " << reason << "\n";
  return 0;
}

}  // namespace

Command devices_command() {
  return {"devices",
          "list the CPU and each CUDA GPU a model can train on, or why there is no GPU",
          {},
          {{"json", "", "", "print the list as JSON"}},
          run_devices};
}

}  // namespace nns::cli
