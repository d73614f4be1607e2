// GEMM throughput, float32, square n x n: the engine's nns::mm against OpenBLAS's
// cblas_sgemm called directly and against Eigen's own GEMM, in one run on one machine.
// Prints Google Benchmark's table, then GFLOP/s and the ratios per size.
#include <benchmark/benchmark.h>
#include <cblas.h>

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

void BM_Eigen(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
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

BENCHMARK(BM_Ours)->Apply(sizes);
BENCHMARK(BM_OpenBLAS)->Apply(sizes);
BENCHMARK(BM_Eigen)->Apply(sizes);

double gflops(const nns::bench::CollectingReporter& r, const char* name, int n) {
  const auto* result = r.find(std::string(name) + "/" + std::to_string(n) + "/real_time");
  return result == nullptr ? 0.0 : result->counters.at("GFLOP/s");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf("OpenBLAS kernel: %s (OPENBLAS_CORETYPE %s), %d threads; Eigen: %d threads\n",
              openblas_get_corename(), coretype != nullptr ? coretype : "not set",
              openblas_get_num_threads(), nns::bench::eigen_threads());
  nns::bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf("\nfloat32 GEMM, GFLOP/s (higher is better)\n");
  std::printf("%6s %10s %10s %10s %12s %12s\n", "n", "nns::mm", "OpenBLAS", "Eigen",
              "ours/OpenBLAS", "Eigen/OpenBLAS");
  for (int n : kSizes) {
    const double ours = gflops(reporter, "BM_Ours", n);
    const double blas = gflops(reporter, "BM_OpenBLAS", n);
    const double eigen = gflops(reporter, "BM_Eigen", n);
    if (ours == 0 && blas == 0 && eigen == 0) continue;  // filtered out
    std::printf("%6d %10.1f %10.1f %10.1f %12.2f %12.2f\n", n, ours, blas, eigen,
                blas > 0 ? ours / blas : 0.0, blas > 0 ? eigen / blas : 0.0);
  }
  return 0;
}
