#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Sets up, builds (test preset) and runs the whole test suite; then builds the threaded code's
# tests under ThreadSanitizer (tsan preset) and runs them.
set -euo pipefail
cd "$(dirname "$0")"
packaging/setup.sh --tests
cmake --preset test >/dev/null
cmake --build --preset test
ctest --preset test --no-tests=error
cmake --preset tsan >/dev/null
cmake --build --preset tsan
ctest --preset tsan --no-tests=error
