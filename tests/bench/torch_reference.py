#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch's numbers for the same measurements as bench_gemm and bench_op_overhead, to put
the engine's figures next to them. Needs torch (packaging/setup.sh --tests, which also
installs the threaded OpenBLAS torch should use for a fair comparison):

    /usr/bin/python3 tests/bench/torch_reference.py [--quick]

Prints float32 GEMM GFLOP/s for n = 64..1024 and ns/op for tiny tensors (add, mul, relu,
sum of 4 elements, a 4x4 mm; with and without requires_grad), with 1 and with 2 threads.
"""
import argparse
import os
import sys
import timeit

import torch

SIZES = [64, 128, 256, 512, 1024]


def best_per_call(fn, min_time):
    """Seconds per call: the best of 5 repeats of a loop sized to run about min_time."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    number = max(1, int(number * min_time / 0.2))
    return min(timer.repeat(repeat=5, number=number)) / number


def gemm(min_time):
    torch.manual_seed(0)
    row = {}
    for n in SIZES:
        a, b = torch.rand(n, n), torch.rand(n, n)
        row[n] = 2 * n**3 / best_per_call(lambda: torch.mm(a, b), min_time) * 1e-9
    return row


def overhead(min_time):
    torch.manual_seed(0)
    rows = {}
    ops = {
        "add": (lambda a, b: torch.add(a, b), (4,)),
        "mul": (lambda a, b: torch.mul(a, b), (4,)),
        "relu": (lambda a, b: torch.relu(a), (4,)),
        "sum": (lambda a, b: torch.sum(a), (4,)),
        "mm 4x4": (lambda a, b: torch.mm(a, b), (4, 4)),
    }
    for name, (fn, shape) in ops.items():
        times = []
        for requires_grad in (False, True):
            a = torch.rand(shape, requires_grad=requires_grad)
            b = torch.rand(shape, requires_grad=requires_grad)
            times.append(best_per_call(lambda: fn(a, b), min_time) * 1e9)
        rows[name] = times
    return rows


def loaded_blas():
    """The BLAS library this process actually mapped (Debian picks it by alternatives)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line.split()[-1]}
    return ", ".join(sorted(paths)) or "none found"


def main(argv):
    parser = argparse.ArgumentParser(description="PyTorch reference numbers")
    parser.add_argument("--quick", action="store_true", help="shorter timing loops")
    args = parser.parse_args(argv)
    min_time = 0.05 if args.quick else 0.3
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))  # loads the BLAS
    print(f"torch {torch.__version__}, BLAS {loaded_blas()}, "
          f"OPENBLAS_CORETYPE {os.environ.get('OPENBLAS_CORETYPE', 'not set')}")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        print(f"\n== torch.set_num_threads({threads})")
        print("float32 torch.mm, GFLOP/s")
        for n, g in gemm(min_time).items():
            print(f"{n:6d} {g:10.1f}")
        print("per-op time on tiny tensors, ns/op")
        print(f"{'op':8s} {'torch':>10s} {'torch (autograd)':>16s}")
        for name, (plain, grad) in overhead(min_time).items():
            print(f"{name:8s} {plain:10.0f} {grad:16.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
