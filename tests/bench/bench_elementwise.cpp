// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU elementwise kernels themselves (the kernel table, no op layer, no allocation):
// every unary and binary formula on float32 at 64 Ki elements (the operands in the L2
// cache), and the loop shapes that take other paths: a broadcast row, a scalar, a transposed
// operand. Prints Google Benchmark's table (bytes_per_second counts the output).
//   build/release/tests/bench/bench_elementwise --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "engine/backend/elementwise_kernels.h"
#include "engine/ops/ops.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"

namespace {

using nns::BinaryOp;
using nns::Tensor;
using nns::UnaryOp;

constexpr int64_t kSize = int64_t{1} << 16;

const nns::ElementwiseKernels& cpu() {
  return *nns::ElementwiseKernels::for_device(nns::DeviceType::CPU);
}

struct UnaryCase {
  const char* name;
  UnaryOp op;
  double alpha, beta;
};

const UnaryCase kUnary[] = {
    {"neg", UnaryOp::Neg, 0, 0},
    {"abs", UnaryOp::Abs, 0, 0},
    {"relu", UnaryOp::Relu, 0, 0},
    {"exp", UnaryOp::Exp, 0, 0},
    {"log", UnaryOp::Log, 0, 0},
    {"sqrt", UnaryOp::Sqrt, 0, 0},
    {"rsqrt", UnaryOp::Rsqrt, 0, 0},
    {"sin", UnaryOp::Sin, 0, 0},
    {"cos", UnaryOp::Cos, 0, 0},
    {"tanh", UnaryOp::Tanh, 0, 0},
    {"sigmoid", UnaryOp::Sigmoid, 0, 0},
    {"reciprocal", UnaryOp::Reciprocal, 0, 0},
    {"leaky_relu", UnaryOp::LeakyRelu, 0.01, 0},
    {"gelu", UnaryOp::Gelu, 0, 0},
    {"gelu_tanh", UnaryOp::GeluTanh, 0, 0},
    {"clamp", UnaryOp::Clamp, -0.5, 0.5},
    {"pow_2", UnaryOp::Pow, 2, 0},
    {"pow_2.5", UnaryOp::Pow, 2.5, 0},
    {"silu", UnaryOp::Silu, 0, 0},
    {"elu", UnaryOp::Elu, 1, 0},
};

struct BinaryCase {
  const char* name;
  BinaryOp op;
  double alpha, beta;
};

const BinaryCase kBinary[] = {
    {"add", BinaryOp::Add, 1, 0},
    {"add_alpha", BinaryOp::Add, 0.5, 0},
    {"mul", BinaryOp::Mul, 1, 0},
    {"div", BinaryOp::Div, 1, 0},
    {"pow", BinaryOp::Pow, 1, 0},
    {"relu_backward", BinaryOp::ReluBackward, 0, 0},
    {"tanh_backward", BinaryOp::TanhBackward, 0, 0},
    {"sigmoid_backward", BinaryOp::SigmoidBackward, 0, 0},
    {"sin_backward", BinaryOp::SinBackward, 0, 0},
    {"abs_backward", BinaryOp::AbsBackward, 0, 0},
    {"leaky_relu_backward", BinaryOp::LeakyReluBackward, 0.01, 0},
    {"gelu_backward", BinaryOp::GeluBackward, 0, 0},
    {"gelu_tanh_backward", BinaryOp::GeluTanhBackward, 0, 0},
    {"clamp_backward", BinaryOp::ClampBackward, -0.5, 0.5},
    {"pow_backward", BinaryOp::PowBackward, 2.5, 0},
    {"silu_backward", BinaryOp::SiluBackward, 0, 0},
    {"elu_backward", BinaryOp::EluBackward, 1, 0},
    {"prelu", BinaryOp::Prelu, 0, 0},
};

void BM_Unary(benchmark::State& state) {
  const UnaryCase& c = kUnary[state.range(0)];
  state.SetLabel(c.name);
  nns::manual_seed(0);
  const Tensor a = nns::add(nns::rand({kSize}), 0.1);  // (0.1, 1.1): log, sqrt, pow defined
  Tensor out = nns::empty({kSize});
  for (auto _ : state) {
    cpu().unary(c.op, nns::view_of(out), nns::view_of(a), c.alpha, c.beta);
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * kSize * 4);
}

void BM_Binary(benchmark::State& state) {
  const BinaryCase& c = kBinary[state.range(0)];
  state.SetLabel(c.name);
  nns::manual_seed(0);
  const Tensor a = nns::randn({kSize});
  const Tensor b = nns::add(nns::rand({kSize}), 0.1);
  Tensor out = nns::empty({kSize});
  for (auto _ : state) {
    cpu().binary(c.op, nns::view_of(out), nns::view_of(a), nns::view_of(b), c.alpha, c.beta);
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * kSize * 4);
}

// add over [256, 256] with b: 0 a row [256] (a bias), 1 a scalar, 2 b transposed.
void BM_AddLayout(benchmark::State& state) {
  const int64_t layout = state.range(0);
  const char* const names[] = {"add_row", "add_scalar", "add_transposed"};
  state.SetLabel(names[layout]);
  nns::manual_seed(0);
  const Tensor a = nns::randn({256, 256});
  const Tensor square = nns::randn({256, 256});
  const Tensor row = nns::randn({256});
  Tensor out = nns::empty({256, 256});
  nns::Shape strides;
  const Tensor transposed = square.t();
  for (auto _ : state) {
    if (layout == 0) {
      cpu().binary(BinaryOp::Add, nns::view_of(out), nns::view_of(a),
                   nns::broadcast_view(row, out.sizes(), strides), 1, 0);
    } else if (layout == 1) {
      cpu().binary_scalar(BinaryOp::Add, nns::view_of(out), nns::view_of(a), 2.0, false);
    } else {
      cpu().binary(BinaryOp::Add, nns::view_of(out), nns::view_of(a), nns::view_of(transposed), 1,
                   0);
    }
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * 256 * 256 * 4);
}

BENCHMARK(BM_Unary)->DenseRange(0, std::size(kUnary) - 1);
BENCHMARK(BM_Binary)->DenseRange(0, std::size(kBinary) - 1);
BENCHMARK(BM_AddLayout)->DenseRange(0, 2);

}  // namespace

BENCHMARK_MAIN();
