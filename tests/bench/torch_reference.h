// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// PyTorch's side of a benchmark: runs one of this folder's *_torch.py scripts with the system
// interpreter (which has torch) on one thread, and reads the "<name> <figure>" lines it prints;
// other lines go to stderr. Empty when it cannot run (no torch: the benchmark prints "-").
//
//   auto torch = nns::bench::torch_figures("bench_train_torch.py", "--seconds 1");
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace nns::bench {

inline std::map<std::string, double> torch_figures(const std::string& script,
                                                   const std::string& arguments) {
  std::map<std::string, double> out;
  // NNS_PYTHON and NNS_BENCH_DIR override the interpreter and the scripts' folder: on the GPU
  // machine (tests/gpu/device_check.sh) its own PyTorch and the checkout's scripts.
  const char* python = std::getenv("NNS_PYTHON");
  const char* dir = std::getenv("NNS_BENCH_DIR");
  const std::string command = std::string("OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 ") +
                              (python ? python : "/usr/bin/python3") + " " +
                              (dir ? dir : NNS_BENCH_DIR) + "/" + script + " " + arguments +
                              " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char line[256];
  while (std::fgets(line, sizeof line, pipe)) {
    char name[64];
    double figure = 0;
    if (std::sscanf(line, "%63s %lf", name, &figure) == 2) {
      out[name] = figure;
    } else {
      std::fprintf(stderr, "%s: %s", script.c_str(), line);
    }
  }
  pclose(pipe);
  return out;
}

}  // namespace nns::bench
