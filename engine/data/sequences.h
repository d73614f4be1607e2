// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The sequence tasks, for recurrent layers and transformers: token sequences (int64 [N, T],
// one token index per position, for an Embedding) and sequences of values (float32 [N, T, 1],
// for an RNN's input_size 1). Made by the program from a seed, like the other generators.
//
//   nns::data::DigitSequenceOptions options;
//   options.length = 6;
//   nns::data::Dataset reverse = nns::data::make_reverse(options);
//   reverse.inputs;    // int64 [4000, 6]: digits 0-9
//   reverse.targets;   // int64 [4000, 6]: the same digits back to front, one class per position
//
// Per-position targets are int64 [N, T]: a model answers with [N, T, classes] (a Linear head
// on a batch_first sequence), the loss runs over the N * T positions as PyTorch code writes
// it (loss(out.reshape(-1, C), y.reshape(-1))), and a position whose target is -100
// (CrossEntropyLoss's ignore_index) takes no part in the loss or the accuracy. Values out of
// range throw ValueError naming the data set and the option.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace nns::data {

// The target of a position that does not count (PyTorch's default ignore_index).
constexpr int64_t kIgnoredPosition = -100;

// Bit strings of `length` bits (tokens 0 and 1); the class is their parity (odd number of
// ones). A fraction `noise` of the labels is flipped.
struct ParityOptions {
  int64_t samples = 2000;
  int64_t length = 8;
  double noise = 0;
  uint64_t seed = 0;
};
Dataset make_parity(const ParityOptions& options);

// Sequences of `length` digits drawn uniformly from 0..digits-1; the target at each position
// is the input reversed (make_reverse) or sorted ascending (make_sort). A fraction `noise` of
// the target tokens is replaced by a random digit.
struct DigitSequenceOptions {
  int64_t samples = 4000;
  int64_t length = 6;
  int64_t digits = 10;  // the vocabulary's size
  double noise = 0;
  uint64_t seed = 0;
};
Dataset make_reverse(const DigitSequenceOptions& options);
Dataset make_sort(const DigitSequenceOptions& options);

// a + b written as tokens: the `digits` digits of a, "+", the digits of b, "=", then digits + 1
// blanks "_" where the model writes the sum (most significant digit first, zero-padded).
// Inputs [N, 3 * digits + 3]; the targets are the sum's digits at the blanks and -100
// elsewhere. Tokens: 0-9 the digits, 10 "+", 11 "=", 12 "_". A fraction `noise` of the sum's
// digits is replaced by a random digit.
struct AdditionOptions {
  int64_t samples = 4000;
  int64_t digits = 2;
  double noise = 0;
  uint64_t seed = 0;
};
Dataset make_addition(const AdditionOptions& options);

// Windows of a wave with a random frequency and phase: `length` values (inputs float32
// [N, length, 1]) and the next value to forecast (targets float32 [N, 1]), each value with
// Gaussian noise of standard deviation `noise`. Waves: "sine", "sawtooth".
struct ForecastOptions {
  int64_t samples = 1000;
  int64_t length = 24;
  double noise = 0.05;
  std::string wave = "sine";
  uint64_t seed = 0;
};
Dataset make_forecast(const ForecastOptions& options);
// The wave names make_forecast knows, in catalog order.
const std::vector<std::string>& wave_names();

// Character-level language modelling of a text file the user picks: `samples` windows of
// `length` characters at random places in the file (inputs int64 [N, length]) and, at each
// position, the character that follows (targets int64 [N, length]). The vocabulary is the
// file's distinct bytes in byte order, at most 256. A file that cannot be read, is empty or
// binary, or is shorter than length + 1 bytes is a ValueError naming it.
struct TextOptions {
  std::string file;
  int64_t samples = 2000;
  int64_t length = 32;
  uint64_t seed = 0;
};
Dataset make_text(const TextOptions& options);

}  // namespace nns::data
