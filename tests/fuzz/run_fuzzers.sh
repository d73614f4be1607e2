#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the libFuzzer targets in their own clang build folder and fuzzes each for a bounded
# time (the ctest test fuzz.run):
#
#   tests/fuzz/run_fuzzers.sh SOURCE_DIR WORK_DIR SECONDS TARGET=SEED_DIR...
#
# WORK_DIR/build is the instrumented build (clang, -fsanitize=fuzzer-no-link,address,
# undefined on every engine file; NNS_BUILD_FUZZERS=ON), WORK_DIR/corpus/<target> the corpus,
# which keeps growing from run to run, seeded from SEED_DIR each time. A finding (crash,
# sanitizer report, leak, timeout, out-of-memory) fails the test and is saved under
# WORK_DIR/findings/<target>/; commit it to tests/fuzz/regressions/<target>/ with the fix,
# and the ordinary test build replays it from then on (fuzz.replay.<target>).
#
# The environment variable NNS_FUZZ_SECONDS overrides SECONDS. Without clang or its libFuzzer
# runtime the test is skipped (exit 77), except in CI (CI set), where that is a failure:
# packaging/setup.sh --tests installs both.
set -euo pipefail
src=$1
work=$2
seconds=${NNS_FUZZ_SECONDS:-$3}
shift 3

missing() {
  echo "fuzz.run: $1; packaging/setup.sh --tests installs it" >&2
  if [[ -n "${CI:-}" ]]; then exit 1; fi
  exit 77
}
command -v clang++ >/dev/null || missing "clang++ is not installed"
mkdir -p "$work"
probe="$work/probe.cpp"
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$probe"
clang++ -fsanitize=fuzzer,address,undefined "$probe" -o "$work/probe" 2>"$work/probe.log" ||
  missing "clang cannot link -fsanitize=fuzzer (libclang-rt-14-dev): $(head -c 300 "$work/probe.log")"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# Line tables are all the sanitizers' reports need (file:line in each frame); full debug
# information made the instrumented build slower to compile and link. -O1, as libFuzzer's and
# AddressSanitizer's documentation build: the instrumented build is most of this test's time,
# and -O1 compiles the engine's kernels a fifth faster than -O2 (clang 14, 2026-11-28).
cmake -S "$src" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DNNS_BUILD_FUZZERS=ON \
  -DNNS_BUILD_TESTS=OFF -DNNS_BUILD_UI=OFF -DNNS_BUILD_BENCHMARKS=OFF -DNNS_WITH_CUDA=OFF \
  >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
targets=()
for run in "$@"; do targets+=("fuzz_${run%%=*}"); done
start=$SECONDS
cmake --build "$work/build" --target "${targets[@]}" -j2
echo "fuzz.run: instrumented build took $((SECONDS - start)) s"

failed=()
for run in "$@"; do
  target=${run%%=*}
  seeds=${run#*=}
  corpus="$work/corpus/$target"
  findings="$work/findings/$target"
  mkdir -p "$corpus" "$findings"
  # Seeds over 64 KiB only slow the mutations down; -max_len cuts them anyway.
  find "$seeds" -maxdepth 1 -type f -size -65k -exec cp -f {} "$corpus/" \;
  echo "fuzz.run: $target for ${seconds} s from $(find "$corpus" -type f | wc -l) inputs"
  # -rss_limit_mb and -malloc_limit_mb turn a huge allocation into a finding; -timeout a
  # hang (10 s for one input). UBSan stops at the first report (-fno-sanitize-recover).
  if ! "$work/build/tests/fuzz/fuzz_$target" "$corpus" -max_total_time="$seconds" \
    -max_len=65536 -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 \
    -artifact_prefix="$findings/" -print_final_stats=1 >"$work/$target.log" 2>&1; then
    failed+=("$target")
    echo "fuzz.run: $target FOUND A PROBLEM:" >&2
    grep -E "ERROR|SUMMARY|runtime error|Test unit written|==[0-9]+==" "$work/$target.log" | head -40 >&2
    echo "fuzz.run: inputs in $findings; full log $work/$target.log" >&2
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$work/$target.log" | tail -3
  fi
done
if ((${#failed[@]})); then
  echo "fuzz.run: findings in ${failed[*]}: commit each input to tests/fuzz/regressions/<target>/ with the fix" >&2
  exit 1
fi
echo "fuzz.run: ${#targets[@]} targets ran ${seconds} s each, no finding"
