#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs, from Debian 12's archive, what building and testing NN Studio needs. Idempotent:
# when everything is installed it only asks dpkg and returns in well under a second.
#
#   packaging/setup.sh          build dependencies (what ./run.sh needs)
#   packaging/setup.sh --tests  also what the whole test suite runs (./test.sh): PyTorch +
#                               threaded OpenBLAS for the round trips through real PyTorch
#                               (tests/torch/), clang's libFuzzer runtime for the fuzz run
#                               (tests/fuzz/); the same PyTorch regenerates the fixtures and
#                               runs tests/bench/torch_reference.py; the Debian package's
#                               checks (tests/packaging/): lintian, desktop-file-validate,
#                               appstreamcli, man, bash-completion
#
# Runs as root, or through sudo when that is available. Never prompts.
set -euo pipefail

packages=(
  cmake ninja-build g++                    # toolchain
  qt6-base-dev libqcustomplot-dev          # the window (Qt 6 Widgets/Test, QCustomPlot for Qt 6)
  qt6-svg-dev                              # File → Export Image as SVG (QSvgGenerator)
  libgraphviz-dev                          # the canvas layout (cgraph + gvc, the dot engine)
  libeigen3-dev libopenblas-dev            # the engine's CPU kernels and BLAS
  libdnnl-dev                              # oneDNN: float32 products and convolutions
  libmimalloc-dev                          # the programs' allocator
  nlohmann-json3-dev                       # project files, fixtures
  libonnx-dev libprotobuf-dev              # ONNX import/export (the onnx protobuf schema, checker)
  libsqlite3-dev                           # the run store beside a project (engine/train/run_store)
  zlib1g-dev libjpeg62-turbo-dev libstb-dev  # your own data: .gz/.npz, JPEG (as Pillow), PNG/BMP
  libgtest-dev libgmock-dev libbenchmark-dev  # tests and benchmarks
  xvfb xauth fonts-dejavu-core             # window tests without a screen
  clang-format                             # the formatting check
  help2man                                 # the man pages, from the programs' --help
)

for arg in "$@"; do
  case "$arg" in
    --tests)
      packages+=(python3-torch python3-torchvision python3-pil python3-onnx libopenblas0-pthread clang libclang-rt-14-dev
        lintian desktop-file-utils appstream man-db bash-completion)
      ;;
    -h | --help)
      sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "setup.sh: unknown option '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

as_root=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    as_root=(sudo -n)
  else
    echo "setup: missing ${missing[*]}; run this script as root to install them" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
echo "setup: done"
