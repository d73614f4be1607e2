// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli summary PROJECT: what PyTorch would print for the project's model (its repr),
// then every named_parameters and named_buffers entry, then the totals.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "engine/graph/builder.h"

namespace nns::cli {
namespace {

std::string shape_text(const Tensor& t) {
  std::string out = "[";
  for (size_t i = 0; i < t.sizes().size(); ++i)
    out += (i ? ", " : "") + std::to_string(t.sizes()[i]);
  return out + "]";
}

// "1,234,567": totals read at a glance.
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

int run_summary(const Options& options) {
  const graph::Project project = graph::load_project(options.positional(0));
  const std::shared_ptr<graph::GraphModule> model = graph::build_model(project);
  std::cout << model->repr() << "\n\n";

  int64_t total = 0, trainable = 0, buffer_total = 0;
  const auto params = model->named_parameters();
  std::cout << "Parameters (" << params.size() << "):\n";
  if (params.empty()) {
    std::cout << "  (none)\n";
  } else {
    std::vector<std::vector<std::string>> rows{
        {"name", "shape", "dtype", "requires_grad", "numel"}};
    for (const auto& [name, p] : params) {
      rows.push_back({name, shape_text(p), dtype_name(p.dtype()),
                      p.requires_grad() ? "True" : "False", grouped(p.numel())});
      total += p.numel();
      if (p.requires_grad()) trainable += p.numel();
    }
    print_table(rows);
  }

  const auto buffers = model->named_buffers();
  std::cout << "\nBuffers (" << buffers.size() << "):\n";
  if (buffers.empty()) {
    std::cout << "  (none)\n";
  } else {
    std::vector<std::vector<std::string>> rows{{"name", "shape", "dtype", "persistent"}};
    for (const auto& [name, b] : buffers) {
      // Persistence belongs to the module that registered the buffer.
      const size_t dot = name.rfind('.');
      const bool persistent = dot == std::string::npos
                                  ? model->is_persistent_buffer(name)
                                  : model->get_submodule(name.substr(0, dot))
                                        ->is_persistent_buffer(name.substr(dot + 1));
      rows.push_back({name, shape_text(b), dtype_name(b.dtype()), persistent ? "True" : "False"});
      buffer_total += b.numel();
    }
    print_table(rows);
  }

  std::cout << "\nTotal parameters: " << grouped(total)
            << "\nTrainable parameters: " << grouped(trainable)
            << "\nNon-trainable parameters: " << grouped(total - trainable)
            << "\nBuffer elements: " << grouped(buffer_total) << "\n";
  return 0;
}

}  // namespace

Command summary_command() {
  return {"summary",
          "print a project's model as PyTorch would, with its parameters and buffers",
          {{"PROJECT", "the project file (.nns)"}},
          {},
          run_summary};
}

}  // namespace nns::cli
