// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// PyTorch code as a project: `nnstudio-cli import model.py:Net net.nns --input 3,32,32`.
//
// A Python program shipped with NN Studio (resources/python/nns_torch_trace.py, installed as
// share/nnstudio/python/) builds the module SOURCE names, traces each module's forward with
// torch.fx (every module type NN Studio has is a leaf, the list passed from the node registry)
// and writes trace.json, the state dict and the inputs and outputs it ran. read_trace() makes
// the project from them:
//   - the module tree stays: Sequential, ModuleList and ModuleDict become groups of that kind
//     with the same names, a custom class a custom block (one block for every instance of the
//     same structure), nn.Parameter and buffers Parameter and Buffer nodes, a module called
//     twice a Ref;
//   - functional calls (F.relu, +, torch.cat, x.flatten(1), x.view(x.size(0), -1), x.mean(1),
//     x[:, 0], ...) become functional nodes (the op families in ops_*.cpp); sizes read from
//     x.size() are folded, from the two batch sizes the tracer ran;
//   - the weights are the module's state dict, PyTorch's keys, loaded strictly into the built
//     model, whose output on the tracer's inputs must equal PyTorch's (eval mode).
// Whatever cannot be represented is refused (a ValueError naming the op, the module path and
// the source line) and nothing is written.
//
//   nns::torch_import::Request r{"model.py:Net", {"3,32,32"}, ""};
//   nns::graph::ImportedProject m =
//       nns::torch_import::import_pytorch(r, program_dir, print_progress);
//   nns::graph::write_imported(m, "net.nns");   // net.nns + net.safetensors
#include <functional>
#include <string>
#include <vector>

#include "engine/graph/imported_project.h"

namespace nns::torch_import {

struct Request {
  std::string source;               // FILE.py:EXPR or package.module:EXPR
  std::vector<std::string> inputs;  // "3,224,224", "12:int64": one per forward argument
  std::string python;               // empty: $NNSTUDIO_PYTHON, else python3 on the PATH
};

// A SOURCE that names PyTorch code rather than an ONNX file (which ends in .onnx).
bool is_pytorch_source(const std::string& source);

// The interpreter to run: `given`, else $NNSTUDIO_PYTHON, else "python3".
std::string python_for(const std::string& given);

// The tracer script: share/nnstudio/python/ beside the program (`program_dir`/../share/...),
// else the source tree's resources/python. A ValueError when neither has it.
std::string find_tracer(const std::string& program_dir);

// The module types the tracer keeps as leaves: the registry's module node types.
std::vector<std::string> leaf_types();

// The tracer's command line after the interpreter: the script and its arguments.
std::vector<std::string> tracer_arguments(const std::string& tracer, const Request& request,
                                          const std::string& out_dir);

// The message for a tracer that failed with `exit_code` and printed `error_output`: exit 3
// (no torch) says which interpreter and how to point at one that has it.
std::string tracer_failure(const std::string& python, int exit_code,
                           const std::string& error_output);

// The project, weights and notes from a folder the tracer wrote.
graph::ImportedProject read_trace(const std::string& dir);

// The whole import: runs the tracer (its "progress: ..." lines go to `progress`) in a
// temporary folder, reads it and removes the folder. A ValueError for any failure.
graph::ImportedProject import_pytorch(const Request& request, const std::string& program_dir,
                                      const std::function<void(const std::string&)>& progress);

}  // namespace nns::torch_import
