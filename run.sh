#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Sets up, builds (release preset) and runs NN Studio with its example project
# (resources/examples/spirals.nns). Without a display it trains the same project headless with
# nnstudio-cli and prints its progress; options after ./run.sh then go to `nnstudio-cli train`.
set -euo pipefail
cd "$(dirname "$0")"
packaging/setup.sh
cmake --preset release >/dev/null
# Only the programs: the release preset would otherwise also build the tests and benchmarks.
targets=(nnstudio-cli)
has_window=0
if ninja -C build/release -t targets all | grep -q '^nnstudio:'; then
  targets+=(nnstudio)
  has_window=1
fi
cmake --build --preset release --target "${targets[@]}"
if [[ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  echo "no display: running the example headless with nnstudio-cli"
elif ((has_window == 0)); then
  echo "the window (nnstudio) is not part of this build: running the example headless with nnstudio-cli"
else
  exec build/release/app/nnstudio "$@"
fi
exec build/release/app/nnstudio-cli train resources/examples/spirals.nns "$@"
