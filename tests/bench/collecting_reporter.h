// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A console reporter that also keeps every run's results, so that a benchmark's main() can
// print a summary table (ratios, ns per op) after Google Benchmark's own output.
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

namespace nns::bench {

class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  struct Result {
    double cpu_ns = 0;   // per iteration
    double real_ns = 0;  // per iteration
    std::map<std::string, double> counters;
  };

  // With --benchmark_repetitions the median of the repetitions is kept (it arrives after
  // the single runs and replaces them): on a shared machine it resists other load.
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type != Run::RT_Iteration && !median) continue;
      Result r;
      const double to_ns = 1e9 / benchmark::GetTimeUnitMultiplier(run.time_unit);
      r.cpu_ns = run.GetAdjustedCPUTime() * to_ns;
      r.real_ns = run.GetAdjustedRealTime() * to_ns;
      for (const auto& [name, counter] : run.counters) r.counters[name] = counter.value;
      results_[run.run_name.str()] = r;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  // The result of a benchmark by its name without aggregate suffix
  // ("BM_Ours/256/real_time"), or nullptr.
  const Result* find(const std::string& name) const {
    auto it = results_.find(name);
    return it == results_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, Result> results_;
};

}  // namespace nns::bench
