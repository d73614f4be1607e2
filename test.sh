#!/usr/bin/env bash
# Sets up, builds (test preset) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")"
packaging/setup.sh --tests
cmake --preset test >/dev/null
cmake --build --preset test
ctest --preset test --no-tests=error
