#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The GPU check of issue 27. The GPU machine (an H100 or H200 with CUDA 13, compute-sanitizer,
# PyTorch 2.11, onnxruntime 1.30, no network, no compiler, nothing of ours) gets one archive
# and one command; its time is minutes, so everything is built and rehearsed here first.
#
#   tests/gpu/device_check.sh pack     on a build machine: builds the release tree (CUDA on,
#                                      portable: no -march=native) and packs cuda_tests,
#                                      bench_train, nnstudio-cli, the engine and backend
#                                      libraries, the example plugins, the examples and every
#                                      library they load (ldd) but glibc's and CUDA's own
#                                      (cudart, cuBLAS, cuBLASLt: the GPU machine has CUDA 13)
#                                      into build/gpu-bundle.tar.xz (xz -T2), under 60 MiB.
#                                      NNS_BUNDLE_BUILD=build/test packs the test build instead
#                                      (a rehearsal without the release build).
#   tests/gpu/device_check.sh run      on the GPU machine, from the repository root (the
#                                      scripts and projects come from the checkout): unpacks
#                                      the archive and writes its logs under $OUT (default
#                                      ./gpu-logs), at most 8 minutes: nvidia-smi, cuda_tests,
#                                      compute-sanitizer memcheck on a short subset, every
#                                      example with --device cuda (and cpu), `profile
#                                      --device cuda` of tests/cli/profile_wide.nns (its timer
#                                      must be CUDA events), `diff` of tests/cli/diff_a.nns and
#                                      diff_b.nns, bench_train --device cuda against PyTorch,
#                                      and the compatibility checks. summary.txt collects the
#                                      key lines.
#   tests/gpu/device_check.sh compat   the compatibility checks alone (no GPU needed): every
#                                      example's ONNX export under onnxruntime, the exported
#                                      model.py under PyTorch (strict load of weights.pt with
#                                      weights_only=True, equal output and gradients), train.py
#                                      under the real torchrun --nproc_per_node 2, and torch
#                                      2.x's own ONNX files (its default, dynamo exporter: small
#                                      models, torchvision's and transformers') imported and
#                                      compared with torch (tests/gpu/torch2_onnx_check.py,
#                                      issue 44: at most about 150 s; its JSON and the refused
#                                      files under $OUT/torch2_onnx.json and torch2_onnx/).
#
# On the device machine (one call):
#   run(command="tests/gpu/device_check.sh run", carry=["build/gpu-bundle.tar.xz"])
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
bundle=${NNS_BUNDLE:-$root/build/gpu-bundle.tar.xz}
limit_mib=60

# ---- pack ------------------------------------------------------------------------------------

# Libraries a file loads, as ldd resolves them, less the C library's own and CUDA's.
libraries_of() {
  ldd "$1" | awk '/=> \// {print $3}' | grep -vE \
    '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libresolv|libutil)\.so|/libcudart\.so|/libcublas(Lt)?\.so|/libcuda\.so'
}

pack() {
  local build=${NNS_BUNDLE_BUILD:-build/release}
  if [[ $build == build/release ]]; then
    # Portable code: the GPU machine's CPU is not this one.
    [[ -f build/release/CMakeCache.txt ]] ||
      cmake --preset release -DNNS_NATIVE_ARCH=OFF -DNNS_WITH_CUDA=ON -DNNS_BUILD_UI=OFF || exit 1
    flock /tmp/nns-build.lock cmake --build build/release --target cuda_tests bench_train \
      nnstudio-cli nnstudio_cuda rmsnorm fourier_features || exit 1
  fi
  local stage=$root/build/gpu-bundle
  rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib" "$stage/plugins" "$stage/examples"
  local programs=("$build/tests/cuda_tests" "$build/app/nnstudio-cli")
  [[ -x $build/tests/bench/bench_train ]] && programs+=("$build/tests/bench/bench_train")
  for p in "${programs[@]}"; do
    [[ -x $p ]] || { echo "device_check pack: $p is not built" >&2; exit 1; }
    cp "$p" "$stage/bin/"
  done
  cp -P "$build"/engine/libnnstudio-engine.so* "$stage/lib/"
  cp "$build/engine/libnnstudio-cuda.so" "$stage/lib/"
  cp "$build"/plugins/*.so "$stage/plugins/" 2>/dev/null
  cp resources/examples/*.nns "$stage/examples/"
  local files=("$stage"/bin/* "$stage/lib/libnnstudio-cuda.so" "$stage"/plugins/*.so)
  files+=("$build/engine/libnnstudio-engine.so")
  local lib
  for f in "${files[@]}"; do
    [[ -e $f ]] || continue
    while read -r lib; do
      [[ -e $stage/lib/$(basename "$lib") ]] || cp -L "$lib" "$stage/lib/"
    done < <(libraries_of "$f")
  done
  # Debug information is no use there and most of the size (the test build's engine is 250 MB
  # with it).
  strip --strip-debug "$stage"/bin/* "$stage"/lib/*.so* "$stage"/plugins/*.so 2>/dev/null
  # The CUDA libraries must not come along (hundreds of MB; the GPU machine has its own).
  if compgen -G "$stage/lib/libcudart*" >/dev/null || compgen -G "$stage/lib/libcublas*" >/dev/null; then
    echo "device_check pack: a CUDA library slipped into the bundle" >&2; exit 1
  fi
  tar -C "$stage" -I 'xz -T2' -cf "$bundle" . || exit 1
  local size
  size=$(stat -c %s "$bundle")
  echo "device_check pack: $bundle, $((size / 1024 / 1024)) MiB ($size bytes), from $build:"
  find "$stage" -type f -printf '  %P %s\n' | sort
  if ((size >= limit_mib * 1024 * 1024)); then
    echo "device_check pack: the bundle is over $limit_mib MiB" >&2; exit 1
  fi
}

# ---- run (on the GPU machine) ------------------------------------------------------------------

out=${OUT:-$root/gpu-logs}
summary() { echo "$*" | tee -a "$out/summary.txt"; }

# One step with its own time limit; its output in $out/<name>.txt; never stops the others.
step() {
  local name=$1 seconds=$2
  shift 2
  local start=$SECONDS
  timeout --kill-after=10 "$seconds" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  summary "$name: exit $rc after $((SECONDS - start)) s"
  return $rc
}

compat() {
  local cli=$1 py=${NNS_PYTHON:-python3}
  mkdir -p "$out"
  step onnxruntime 90 "$py" tests/gpu/onnxruntime_check.py "$cli"
  grep -E '^(ok|FAIL|skip)' "$out/onnxruntime.txt" | tee -a "$out/summary.txt"
  step torch_export 120 "$py" tests/torch/export_roundtrip.py "$cli"
  summary "torch_export: $(grep -c '^ok' "$out/torch_export.txt") ok, $(grep -c '^FAIL' \
    "$out/torch_export.txt") FAIL ($("$py" -c 'import torch; print(torch.__version__)' 2>&1))"
  grep '^FAIL' "$out/torch_export.txt" | head -20 | tee -a "$out/summary.txt"
  local dev=cpu
  "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.device_count() >= 2 else 1)' \
    2>/dev/null && dev=cuda
  step torchrun 120 tests/gpu/torchrun_check.sh "$cli" "$dev"
  grep -E '^(ok|FAIL)' "$out/torchrun.txt" | tee -a "$out/summary.txt"
  # Issue 44: the files of torch 2.x's default ONNX exporter. The script starts no model past
  # 150 s (NNS_TORCH2_SECONDS); refusals and differences are findings (exit 0), 77 is a skip.
  step torch2_onnx 210 env NNS_TORCH2_OUT="$out" "$py" tests/gpu/torch2_onnx_check.py "$cli"
  grep -E '^(skip|REFUSED|DIFFER|EXPORT-FAILED|ERROR|not-run)' "$out/torch2_onnx.txt" |
    cut -c1-300 | head -30 | tee -a "$out/summary.txt"
  grep -E '^torch2 onnx:' "$out/torch2_onnx.txt" | tee -a "$out/summary.txt"
}

run_check() {
  mkdir -p "$out"
  : >"$out/summary.txt"
  local dir=${NNS_BUNDLE_DIR:-/tmp/nns-gpu-bundle}
  rm -rf "$dir" && mkdir -p "$dir"
  tar -C "$dir" -xf "$bundle" || { summary "cannot unpack $bundle"; exit 1; }
  local cuda_lib=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [[ -d $d ]] && cuda_lib=$cuda_lib:$d
  done
  export LD_LIBRARY_PATH=$dir/lib$cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export NNS_PLUGIN_PATH=$dir/plugins
  # cuda_tests reads these in place of its build tree's paths.
  export NNS_CLI=$dir/bin/nnstudio-cli NNS_SOURCE_DIR=$root \
    NNS_ENGINE_LIB=$dir/lib/libnnstudio-engine.so NNS_CUDA_BACKEND_LIB=$dir/lib/libnnstudio-cuda.so
  # bench_train's PyTorch side: this machine's interpreter and the checkout's script.
  export NNS_PYTHON=${NNS_PYTHON:-$(command -v python3)} NNS_BENCH_DIR=$root/tests/bench
  local cli=$dir/bin/nnstudio-cli
  step nvidia-smi 20 nvidia-smi
  head -20 "$out/nvidia-smi.txt" >>"$out/summary.txt"
  step devices 20 "$cli" devices
  cat "$out/devices.txt" >>"$out/summary.txt"
  step cuda_tests 150 "$dir/bin/cuda_tests" --gtest_output="xml:$out/cuda_tests.xml"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/cuda_tests.txt" | tee -a "$out/summary.txt"
  if command -v compute-sanitizer >/dev/null; then
    step memcheck 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$dir/bin/cuda_tests" \
      --gtest_filter='CudaOps.CopiesConvertEveryDtype:CudaOps.ArgmaxAndComparisons:CudaTraining.TheCachingAllocatorReusesFreedBlocks:CudaTraining.EveryOptimizerStepsAsOnTheCpu:CudaGraphs.AReplayedStepEndsWhereTheEagerStepEnds:CudaGraphs.AStepWithANonFiniteGradientChangesNothing:CudaDropout.*:CudaProbes.*:CudaOps.LinearsBiasInTheProductsEpilogueMatchesTheCpu:CudaPinnedCopies.*:CudaDeviceBatches.TheBatchesAreThoseOfTheSynchronousCopyAcrossEpochsAndResets'
    grep -E 'ERROR SUMMARY' "$out/memcheck.txt" | tee -a "$out/summary.txt"
  else
    summary "memcheck: compute-sanitizer is not on the PATH"
  fi
  # Every example on both devices, a few epochs from the same seed: the last epoch's lines.
  for project in resources/examples/*.nns; do
    local name
    name=$(basename "$project" .nns)
    for dev in cuda cpu; do
      step "example_${name}_$dev" 60 "$cli" train "$project" --device "$dev" --epochs 3 \
        --no-record
      summary "  $name $dev: $(grep -E '^test:|error' "$out/example_${name}_$dev.txt" | head -1)" \
        "$(grep -E '^[0-9]+ steps, ' "$out/example_${name}_$dev.txt" | tail -1)" \
        "$(grep -E '^CUDA graphs' "$out/example_${name}_$dev.txt" | tail -1)"
    done
  done
  # The profiler on the GPU: timed with CUDA events, and how much of the step it accounts for.
  step profile_cuda 60 "$cli" profile tests/cli/profile_wide.nns --device cuda --steps 20
  step profile_cuda_json 60 "$cli" profile tests/cli/profile_wide.nns --device cuda --steps 20 \
    --json
  local timer accounted
  timer=$(grep -oE '"timer": *"[^"]*"' "$out/profile_cuda_json.txt" | head -1 |
    sed -E 's/.*: *"([^"]*)"/\1/')
  accounted=$(grep -E '^accounted:' "$out/profile_cuda.txt" | head -1)
  if [[ $timer == "CUDA events" ]]; then timer="ok   timer: CUDA events"
  else timer="FAIL timer: ${timer:-none} (not CUDA events)"; fi
  summary "  profile cuda: $timer, ${accounted:-no accounted line}"
  # A model diff (CPU) on that machine's build.
  step diff 60 "$cli" diff tests/cli/diff_a.nns tests/cli/diff_b.nns
  summary "  diff: $(grep -E '^Differences' "$out/diff.txt" | head -1)" \
    "$(grep -E '^Loss A' "$out/diff.txt" | head -1)" "$(grep -E 'error' "$out/diff.txt" | head -1)"
  if [[ -x $dir/bin/bench_train ]]; then
    step bench_train 120 "$dir/bin/bench_train" --device cuda --seconds 1
    cat "$out/bench_train.txt" >>"$out/summary.txt"
  fi
  compat "$cli"
  summary "device_check: done in $SECONDS s"
}

case ${1:-} in
  pack) pack ;;
  run) run_check ;;
  compat) compat "${2:-$root/build/test/app/nnstudio-cli}" ;;
  *) sed -n '2,39p' "$0"; exit 2 ;;
esac
