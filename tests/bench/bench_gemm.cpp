// SPDX-License-Identifier: GPL-3.0-or-later
// GEMM throughput, float32, square n x n: the engine's nns::mm against OpenBLAS's
// cblas_sgemm called directly and against Eigen's own GEMM, in one run on one machine.
// Prints Google Benchmark's table, then GFLOP/s and the ratios per size.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "collecting_reporter.h"
#include "eigen_gemm.h"
#include "engine/ops/ops.h"

extern "C" char* openblas_get_corename(void);
extern "C" int openblas_get_num_threads(void);

namespace {

const int kSizes[] = {64, 128, 256, 512, 1024};

// Counted in units of 1e9 flops, so the reported rate reads directly as GFLOP/s.
void set_flops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Ours(benchmark::State& state) {
  const int64_t n = state.range(0);
  nns::manual_seed(0);
  const nns::Tensor a = nns::rand({n, n});
  const nns::Tensor b = nns::rand({n, n});
  for (auto _ : state) {
    nns::Tensor c = nns::mm(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  set_flops(state, n);
}

void BM_OpenBLAS(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a), c(a.size());
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, n);
}

// state.range(1): Eigen's thread count. One thread is its steady figure; two (OpenMP)
// matches OpenBLAS's threads but suffers most when other processes share the cores.
void BM_Eigen(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  nns::bench::eigen_set_threads(static_cast<int>(state.range(1)));
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a), c(a.size());
  for (auto _ : state) {
    nns::bench::eigen_sgemm(n, a.data(), b.data(), c.data());
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, n);
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int n : kSizes) b->Arg(n);
  // OpenBLAS and Eigen run on several threads: wall time is what counts.
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void sizes_and_threads(benchmark::internal::Benchmark* b) {
  for (int threads = 1; threads <= std::min(2, nns::bench::eigen_max_threads()); ++threads) {
    for (int n : kSizes) b->Args({n, threads});
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Ours)->Apply(sizes);
BENCHMARK(BM_OpenBLAS)->Apply(sizes);
BENCHMARK(BM_Eigen)->Apply(sizes_and_threads);

// GFLOP/s of "<name>/<n>[/<threads>]/real_time", or 0 when it did not run.
double gflops(const nns::bench::CollectingReporter& r, const char* name, int n, int threads = 0) {
  char key[96];
  if (threads > 0) {
    std::snprintf(key, sizeof key, "%s/%d/%d/real_time", name, n, threads);
  } else {
    std::snprintf(key, sizeof key, "%s/%d/real_time", name, n);
  }
  const auto* result = r.find(key);
  return result == nullptr ? 0.0 : result->counters.at("GFLOP/s");
}

}  // namespace

int main(int argc, char** argv) {
  // Three randomly interleaved repetitions, summarized by their median, unless the command
  // line says otherwise (later flags win): other processes on the cores then bias every
  // contender alike instead of whichever happened to run during a busy moment.
  std::vector<char*> args(argv, argv + argc);
  char repetitions[] = "--benchmark_repetitions=3";
  char interleave[] = "--benchmark_enable_random_interleaving=true";
  char aggregates_only[] = "--benchmark_report_aggregates_only=true";
  args.insert(args.begin() + 1, {repetitions, interleave, aggregates_only});
  int args_count = static_cast<int>(args.size());
  benchmark::Initialize(&args_count, args.data());
  if (benchmark::ReportUnrecognizedArguments(args_count, args.data())) return 1;
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf("OpenBLAS kernel: %s (OPENBLAS_CORETYPE %s), %d threads; Eigen: up to %d threads\n",
              openblas_get_corename(), coretype != nullptr ? coretype : "not set",
              openblas_get_num_threads(), nns::bench::eigen_max_threads());
  nns::bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf("\nfloat32 GEMM, GFLOP/s (higher is better)\n");
  std::printf("%6s %9s %9s %9s %9s %14s %14s\n", "n", "nns::mm", "OpenBLAS", "Eigen x1", "Eigen x2",
              "ours/OpenBLAS", "Eigen/OpenBLAS");
  for (int n : kSizes) {
    const double ours = gflops(reporter, "BM_Ours", n);
    const double blas = gflops(reporter, "BM_OpenBLAS", n);
    const double eigen1 = gflops(reporter, "BM_Eigen", n, 1);
    const double eigen2 = gflops(reporter, "BM_Eigen", n, 2);
    if (ours == 0 && blas == 0 && eigen1 == 0 && eigen2 == 0) continue;  // filtered out
    const double eigen_best = std::max(eigen1, eigen2);
    std::printf("%6d %9.1f %9.1f %9.1f %9.1f %14.2f %14.2f\n", n, ours, blas, eigen1, eigen2,
                blas > 0 ? ours / blas : 0.0, blas > 0 ? eigen_best / blas : 0.0);
  }
  return 0;
}
