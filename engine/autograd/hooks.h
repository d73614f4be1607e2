// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Ordered hook tables and the handles that remove hooks from them. A handle holds only a
// weak reference to its table, so remove() is safe after the owner (tensor, module) is gone,
// and calling it twice does nothing (PyTorch's RemovableHandle).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace nns {

class HookTableBase {
 public:
  virtual ~HookTableBase() = default;
  virtual void remove(uint64_t id) = 0;
};

class RemovableHandle {
 public:
  RemovableHandle() = default;
  RemovableHandle(std::weak_ptr<HookTableBase> table, uint64_t id)
      : table_(std::move(table)), id_(id) {}
  RemovableHandle(const RemovableHandle&) = delete;
  RemovableHandle& operator=(const RemovableHandle&) = delete;
  RemovableHandle(RemovableHandle&& other) noexcept
      : table_(std::move(other.table_)), id_(other.id_) {
    other.table_.reset();
  }
  RemovableHandle& operator=(RemovableHandle&& other) noexcept {
    table_ = std::move(other.table_);
    id_ = other.id_;
    other.table_.reset();
    return *this;
  }

  void remove() {
    if (auto table = table_.lock()) table->remove(id_);
    table_.reset();
  }
  uint64_t id() const { return id_; }

 private:
  std::weak_ptr<HookTableBase> table_;
  uint64_t id_ = 0;
};

// Hooks kept in registration order; `prepend` puts a hook before the others.
template <class Fn>
class HookTable : public HookTableBase, public std::enable_shared_from_this<HookTable<Fn>> {
 public:
  RemovableHandle add(Fn fn, bool prepend = false) {
    uint64_t id = next_id_++;
    if (prepend) {
      entries_.insert(entries_.begin(), {id, std::move(fn)});
    } else {
      entries_.push_back({id, std::move(fn)});
    }
    return RemovableHandle(this->weak_from_this(), id);
  }
  void remove(uint64_t id) override {
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [id](const auto& e) { return e.first == id; }),
                   entries_.end());
  }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  // A copy, so that a hook may remove hooks (itself included) while the table is walked.
  std::vector<std::pair<uint64_t, Fn>> snapshot() const { return entries_; }

 private:
  std::vector<std::pair<uint64_t, Fn>> entries_;
  uint64_t next_id_ = 0;
};

}  // namespace nns
