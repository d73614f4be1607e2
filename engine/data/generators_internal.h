// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Helpers the generators share (generators.cpp, digits.cpp); not part of the public API.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tensor/generator.h"

namespace nns::data {

// Samples per class: samples / classes each, one more for the first samples % classes.
std::vector<int64_t> class_sizes(int64_t samples, int64_t classes);
// n draws of rand / randn in float64 from the generator, in order.
std::vector<double> uniform_draws(Generator& generator, int64_t n);
std::vector<double> normal_draws(Generator& generator, int64_t n);
// The names of a table of (name, function) pairs, in its order: the choices of a catalog
// option such as the curve's or the wave's.
template <class Table>
std::vector<std::string> names_of(const Table& table) {
  std::vector<std::string> out;
  for (const auto& entry : table) out.push_back(entry.first);
  return out;
}
// prefix + first, prefix + (first + 1), ...: {"x1", "x2"} or {"0", "1", "2"}.
std::vector<std::string> numbered_names(const std::string& prefix, int64_t count, int64_t first);
// ValueError unless value >= min, for limits that depend on another option.
void check_at_least(const std::string& dataset, const char* option, int64_t value, int64_t min,
                    const std::string& why);

}  // namespace nns::data
