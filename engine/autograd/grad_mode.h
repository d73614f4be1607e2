// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Whether operations record a graph on this thread (torch.no_grad / torch.enable_grad).

namespace nns {

class GradMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Scoped torch.no_grad(): nothing done in its scope is recorded for backward.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Scoped torch.enable_grad().
class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace nns
