#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch's side of bench_sequence: forward + backward steps per second of the same sequence
layers on the same sizes, one thread. Prints "<name> <steps per second>" per case.

    /usr/bin/python3 tests/bench/bench_sequence_torch.py [--seconds S]
"""
import argparse
import time

import torch
from torch import nn

torch.set_num_threads(1)
N, T, E = 32, 20, 32


def cases():
    torch.manual_seed(0)
    x = torch.randn(N, T, E)
    lstm = nn.LSTM(E, 64, batch_first=True)
    gru = nn.GRU(E, 64, batch_first=True)
    mha = nn.MultiheadAttention(E, 4, batch_first=True)
    enc = nn.TransformerEncoderLayer(E, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
    return {
        "lstm": lambda: lstm(x)[0].sum(),
        "gru": lambda: gru(x)[0].sum(),
        "mha": lambda: mha(x, x, x)[0].sum(),
        "encoder": lambda: enc(x).sum(),
    }


def rate(step, seconds):
    best = 0
    for _ in range(3):
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            step().backward()
            n += 1
        best = max(best, n / (time.perf_counter() - start))
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.0)
    seconds = parser.parse_args().seconds
    for name, step in cases().items():
        print(name, rate(step, seconds), flush=True)


if __name__ == "__main__":
    main()
