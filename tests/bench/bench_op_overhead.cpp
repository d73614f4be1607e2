// SPDX-License-Identifier: GPL-3.0-or-later
// The fixed cost of one engine operation on tiny tensors (4 elements, a 4x4 mm), with and
// without autograd recording, against a raw C++ loop doing the same arithmetic. Prints
// Google Benchmark's table, then ns per op.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdio>
#include <vector>

#include "collecting_reporter.h"
#include "engine/ops/ops.h"

namespace {

// The operations measured; each takes two tiny operands (the second is ignored by unary ones).
enum Op : int64_t { kAdd, kMul, kRelu, kSum, kMm };
const char* const kOpNames[] = {"add", "mul", "relu", "sum", "mm 4x4"};

nns::Tensor apply(Op op, const nns::Tensor& a, const nns::Tensor& b) {
  switch (op) {
    case kAdd:
      return nns::add(a, b);
    case kMul:
      return nns::mul(a, b);
    case kRelu:
      return nns::relu(a);
    case kSum:
      return nns::sum(a);
    case kMm:
      return nns::mm(a, b);
  }
  return {};
}

// state.range(0): the Op; state.range(1): requires_grad on the inputs.
void BM_Engine(benchmark::State& state) {
  const Op op = static_cast<Op>(state.range(0));
  const nns::Shape shape = op == kMm ? nns::Shape{4, 4} : nns::Shape{4};
  nns::Tensor a = nns::rand(shape);
  nns::Tensor b = nns::rand(shape);
  if (state.range(1) != 0) {
    a.requires_grad_(true);
    b.requires_grad_(true);
  }
  for (auto _ : state) {
    nns::Tensor c = apply(op, a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
}

// The same arithmetic on plain arrays: the floor that dispatch, allocation and autograd add to.
void BM_RawLoop(benchmark::State& state) {
  const Op op = static_cast<Op>(state.range(0));
  std::array<float, 16> a{}, b{}, c{};
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = 0.25f * static_cast<float>(i) - 1.0f;
    b[i] = 0.5f;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(a.data());
    benchmark::DoNotOptimize(b.data());
    switch (op) {
      case kAdd:
        for (int i = 0; i < 4; ++i) c[i] = a[i] + b[i];
        break;
      case kMul:
        for (int i = 0; i < 4; ++i) c[i] = a[i] * b[i];
        break;
      case kRelu:
        for (int i = 0; i < 4; ++i) c[i] = a[i] > 0 ? a[i] : 0;
        break;
      case kSum:
        c[0] = a[0] + a[1] + a[2] + a[3];
        break;
      case kMm:
        for (int i = 0; i < 4; ++i) {
          for (int j = 0; j < 4; ++j) {
            float s = 0;
            for (int k = 0; k < 4; ++k) s += a[i * 4 + k] * b[k * 4 + j];
            c[i * 4 + j] = s;
          }
        }
        break;
    }
    benchmark::DoNotOptimize(c);
  }
}

void ops_and_grad(benchmark::internal::Benchmark* b) {
  for (int64_t op = kAdd; op <= kMm; ++op) {
    b->Args({op, 0});
    b->Args({op, 1});
  }
}

void ops_only(benchmark::internal::Benchmark* b) {
  for (int64_t op = kAdd; op <= kMm; ++op) b->Args({op, 0});
}

BENCHMARK(BM_Engine)->Apply(ops_and_grad);
BENCHMARK(BM_RawLoop)->Apply(ops_only);

// CPU ns per iteration of "<benchmark>/<op>/<grad>", or 0 when it did not run.
double ns(const nns::bench::CollectingReporter& r, const char* benchmark, int64_t op, int grad) {
  char name[64];
  std::snprintf(name, sizeof name, "%s/%lld/%d", benchmark, static_cast<long long>(op), grad);
  const auto* result = r.find(name);
  return result == nullptr ? 0.0 : result->cpu_ns;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  nns::manual_seed(0);
  nns::bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf("\nper-op time on tiny tensors, ns/op (lower is better; target < 1000)\n");
  std::printf("%-8s %10s %16s %10s\n", "op", "nns", "nns (autograd)", "raw loop");
  for (int64_t op = kAdd; op <= kMm; ++op) {
    const double plain = ns(reporter, "BM_Engine", op, 0);
    const double grad = ns(reporter, "BM_Engine", op, 1);
    const double raw = ns(reporter, "BM_RawLoop", op, 0);
    if (plain == 0 && grad == 0 && raw == 0) continue;  // filtered out
    std::printf("%-8s %10.0f %16.0f %10.1f\n", kOpNames[op], plain, grad, raw);
  }
  return 0;
}
