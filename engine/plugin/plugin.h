// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The plugin ABI: what a plugin library exports and how it registers its node types. A plugin
// is a shared library built against the engine's headers (the SDK: find_package(NNStudio) and
// nnstudio_add_plugin, see plugins/README.md) that defines its entry point with NNS_PLUGIN:
//
//   void register_types(nns::plugin::Registrar& registrar) {
//     registrar.add(nns::graph::module_type("RMSNorm", "Normalization", "...", {...},
//                                           make_rms_norm, nns::graph::same_shape));
//   }
//   NNS_PLUGIN("rmsnorm", "1.0.0", "RMSNorm as torch.nn.RMSNorm", register_types)
//
// A node type from a plugin is an nns::nn::Module subclass written with engine ops (or a
// function of tensors), so autograd, hooks, probes and state dicts work for it unchanged.
//
// The entry point is a C function, found by name with dlsym; what it returns starts with the
// ABI version the plugin was built against, read before anything else in it is touched. The
// engine's C++ types cross the boundary (Registrar, NodeType, Module), so a plugin must be
// built against the headers of an engine with the same NNS_PLUGIN_ABI_VERSION, by a compiler
// with the same C++ ABI (GCC or Clang with libstdc++ on Linux); the loader refuses any other
// version with a message naming both.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/graph/node_types.h"

// Raised whenever a change to the engine's headers breaks plugins built against older ones:
// a changed class layout, virtual function or signature that a plugin can reach.
#define NNS_PLUGIN_ABI_VERSION 1

namespace nns::plugin {

// Collects the node types a plugin registers; the loader adds them to the registry, all or
// none, once the plugin's register function has returned.
class Registrar {
 public:
  // A Module or Functional type (NodeType::kind); its name must be new to the registry.
  void add(graph::NodeType type) { types_.push_back(std::move(type)); }
  std::vector<graph::NodeType>& types() { return types_; }

 private:
  std::vector<graph::NodeType> types_;
};

}  // namespace nns::plugin

extern "C" {

// What nns_plugin_v1() returns. The strings and the function live as long as the library.
struct nns_plugin_v1_info {
  uint32_t abi_version;     // NNS_PLUGIN_ABI_VERSION of the headers the plugin was built with
  const char* name;         // "rmsnorm": a short identifier, recorded in projects
  const char* version;      // "1.0.0"
  const char* description;  // one line for the plugin list
  // Registers the plugin's node types; may throw (the loader reports the message).
  void (*register_types)(nns::plugin::Registrar& registrar);
};

// The entry point's name, for dlsym.
#define NNS_PLUGIN_ENTRY_POINT "nns_plugin_v1"
typedef const nns_plugin_v1_info* (*nns_plugin_v1_fn)();
}

// Defines the plugin's entry point. Use it once, in one source file of the plugin.
#define NNS_PLUGIN(NAME, VERSION, DESCRIPTION, REGISTER_FUNCTION)                               \
  extern "C" __attribute__((visibility("default"))) const nns_plugin_v1_info* nns_plugin_v1() { \
    static const nns_plugin_v1_info info{NNS_PLUGIN_ABI_VERSION, NAME, VERSION, DESCRIPTION,    \
                                         REGISTER_FUNCTION};                                    \
    return &info;                                                                               \
  }
