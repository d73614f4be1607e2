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

// Hooks kept in registration order; `prepend` puts a hook before the others. The entries are an
// immutable list that add and remove replace: snapshot() shares it, so that a hook may remove
// hooks (itself included) while the table is walked, and a call of a module with hooks (a
// probe's, on every step) costs a reference count, not a copy of the list.
template <class Fn>
class HookTable : public HookTableBase, public std::enable_shared_from_this<HookTable<Fn>> {
 public:
  using Entries = std::vector<std::pair<uint64_t, Fn>>;

  RemovableHandle add(Fn fn, bool prepend = false) {
    uint64_t id = next_id_++;
    auto entries = std::make_shared<Entries>(*entries_);
    if (prepend) {
      entries->insert(entries->begin(), {id, std::move(fn)});
    } else {
      entries->push_back({id, std::move(fn)});
    }
    entries_ = std::move(entries);
    return RemovableHandle(this->weak_from_this(), id);
  }
  void remove(uint64_t id) override {
    auto entries = std::make_shared<Entries>(*entries_);
    entries->erase(std::remove_if(entries->begin(), entries->end(),
                                  [id](const auto& e) { return e.first == id; }),
                   entries->end());
    entries_ = std::move(entries);
  }
  bool empty() const { return entries_->empty(); }
  size_t size() const { return entries_->size(); }
  std::shared_ptr<const Entries> snapshot() const { return entries_; }

 private:
  std::shared_ptr<const Entries> entries_ = std::make_shared<const Entries>();
  uint64_t next_id_ = 0;
};

}  // namespace nns
