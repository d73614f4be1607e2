// SPDX-License-Identifier: GPL-3.0-or-later
// A plugin built for another ABI version: the loader must refuse it before calling anything
// but the entry point (its register function would crash if it were called).
#include <cstdlib>

#include "engine/plugin/plugin.h"

namespace {
void must_not_be_called(nns::plugin::Registrar&) {
  std::abort();
}
}  // namespace

extern "C" __attribute__((visibility("default"))) const nns_plugin_v1_info* nns_plugin_v1() {
  static const nns_plugin_v1_info info{NNS_PLUGIN_ABI_VERSION + 998, "future", "9.0.0",
                                       "built for a newer NN Studio", must_not_be_called};
  return &info;
}
