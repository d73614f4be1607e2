// SPDX-License-Identifier: GPL-3.0-or-later
// A shared library that is no plugin: it has code but no nns_plugin_v1 entry point.
extern "C" int nns_test_not_a_plugin() {
  return 42;
}
