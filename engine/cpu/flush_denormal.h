// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.set_flush_denormal: whether the calling thread's floating-point unit treats denormal
// (subnormal) numbers as zero, on input and on output.
//
// Why it matters for training: a value that decays geometrically (Adam's first moment of a
// weight whose gradient stays zero, say, multiplied by 0.9 every step) becomes denormal after
// a few hundred steps, and arithmetic on denormals costs the CPU about a hundred cycles per
// operation instead of one. On the spirals example with Adam, measured here: 16.9k steps/s
// for the first 40 epochs, then 7.6-8.6k once the moments went denormal; with flushing,
// 16.8-17.8k throughout, and every printed loss and accuracy the same. Values below
// 1.2e-38 (float) carry no information a model uses.
namespace nns {

// Sets (mode true) or clears the flush-to-zero and denormals-are-zero modes of the calling
// thread. Returns false when this CPU has no such mode (then nothing changes), as
// torch.set_flush_denormal does. Threads started afterwards from this thread inherit it.
bool set_flush_denormal(bool mode);

// Whether the calling thread flushes denormals (both modes set).
bool flush_denormal();

}  // namespace nns
