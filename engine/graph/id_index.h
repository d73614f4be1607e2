// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Node ids to their places in a graph's node list, for code that walks a whole graph (the
// analysis, the layout) and looks nodes up by id as it goes.
//   nns::graph::IdIndex places;
//   places.build(graph.nodes);
//   const Node& n = graph.nodes[places.at(id)];   // std::out_of_range for an unknown id
#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/graph/spec.h"

namespace nns::graph {

// Node ids to their places in a graph's node list. Ids count up as nodes are added, so a table
// indexed by id serves (a hash map where they are spread out): an analysis of 10,000 nodes looks
// nodes up tens of thousands of times, and a hash map's lookups and the allocations of its
// entries were a fifth of it. A repeated id is found at its last place.
class IdIndex {
 public:
  void build(const std::vector<Node>& nodes) {
    NodeId low = 0, high = -1;
    for (const Node& n : nodes) {
      low = std::min(low, n.id);
      high = std::max(high, n.id);
    }
    dense_ = low >= 0 && static_cast<size_t>(high) <= 4 * nodes.size() + 1024;
    if (dense_) {
      table_.assign(static_cast<size_t>(high) + 1, kNone);
    } else {
      map_.reserve(nodes.size());
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (dense_) {
        table_[static_cast<size_t>(nodes[i].id)] = i;
      } else {
        map_[nodes[i].id] = i;
      }
    }
  }
  std::optional<size_t> find(NodeId id) const {
    if (dense_) {
      if (id < 0 || static_cast<size_t>(id) >= table_.size() ||
          table_[static_cast<size_t>(id)] == kNone)
        return std::nullopt;
      return table_[static_cast<size_t>(id)];
    }
    auto it = map_.find(id);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  size_t at(NodeId id) const {
    if (const std::optional<size_t> i = find(id)) return *i;
    throw std::out_of_range("no node with id " + std::to_string(id));
  }

 private:
  static constexpr size_t kNone = std::numeric_limits<size_t>::max();
  bool dense_ = true;
  std::vector<size_t> table_;
  std::unordered_map<NodeId, size_t> map_;
};

}  // namespace nns::graph
