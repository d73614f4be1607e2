// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Repeated blocks: a run of structurally equal members of a Sequential or ModuleList
// (12 Transformer layers, the 5 equal Bottlenecks of resnet50's layer3) that a folded group
// draws as one box marked xN, its first member standing for the run.
//   for (const RepeatRun& run : repeat_runs(project, group)) run.members.size();   // N >= 2
//   folded_repeats(project).at(hidden_member);   // the run's first member, drawn for it
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/graph/project.h"

namespace nns::graph {

struct RepeatRun {
  std::vector<NodeId> members;  // in order; two or more
};

// The runs of a Sequential's or ModuleList's members that are structurally equal (the same
// types and options, members and wiring inside) and wired only one to the next (a ModuleList's
// members wired from outside, as a transformer's residual Adds are, break a run). None for
// other nodes.
std::vector<RepeatRun> repeat_runs(const Project& project, const Node& group);

// Every member a folded group (Node::folded, open) hides, anywhere in the graph, mapped to the
// first member of its run (what it holds is hidden with it); the run's size by its first member.
struct FoldedRepeats {
  std::unordered_map<NodeId, NodeId> hidden;  // hidden member -> the run's first member
  std::unordered_map<NodeId, int> count;      // a run's first member -> N
  bool empty() const { return hidden.empty(); }
  bool operator==(const FoldedRepeats&) const = default;
};
FoldedRepeats folded_repeats(const Project& project);

// Whether folding the group would hide anything: it holds a run.
bool has_repeats(const Project& project, const Node& group);

// Folds every Sequential and ModuleList that holds a run (an imported model opens so); returns
// how many groups it folded.
int fold_all_repeats(Project& project);

}  // namespace nns::graph
