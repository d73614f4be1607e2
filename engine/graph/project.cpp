// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/project.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/graph/node_types.h"
#include "engine/serialize/bytes.h"
#include "engine/tensor/device.h"
#include "engine/tensor/error.h"

namespace nns::graph {
namespace {

constexpr const char* kFormatTag = "nnstudio-project";
constexpr uint64_t kMaxInteger = uint64_t{1} << 53;

// Reads one JSON object field by field, naming the path of whatever is wrong, and keeps the
// fields it was not asked for (a newer format's) for `extra`.
class Reader {
 public:
  Reader(const Json& json, std::string path, const std::string& source)
      : json_(json), path_(std::move(path)), source_(source) {
    if (!json.is_object()) fail(path_, "expected an object, got " + type_of(json));
  }

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw ValueError(source_ + ": " + (path.empty() ? std::string("top level") : path) + ": " +
                     what);
  }
  std::string at(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  bool has(const std::string& key) {
    seen_.insert(key);
    return json_.contains(key);
  }
  const Json& field(const std::string& key) {
    if (!has(key)) fail(at(key), "missing (required)");
    return json_.at(key);
  }

  int64_t integer(const std::string& key, int64_t fallback, bool required = false) {
    if (!required && !has(key)) return fallback;
    const Json& v = field(key);
    if (!v.is_number_integer()) fail(at(key), "expected an integer, got " + v.dump());
    // Ids and counts stay far from int64's end, so that next_id + 1 cannot overflow.
    const auto limit = static_cast<int64_t>(kMaxInteger);
    if (v.is_number_unsigned() ? v.get<uint64_t>() > kMaxInteger
                               : v.get<int64_t>() > limit || v.get<int64_t>() < -limit)
      fail(at(key), "the integer " + v.dump() + " is out of range (at most 2^53 in size)");
    return v.get<int64_t>();
  }
  double number(const std::string& key, double fallback) {
    if (!has(key)) return fallback;
    const Json& v = field(key);
    if (!v.is_number()) fail(at(key), "expected a number, got " + v.dump());
    return v.get<double>();
  }
  bool boolean(const std::string& key, bool fallback) {
    if (!has(key)) return fallback;
    const Json& v = field(key);
    if (!v.is_boolean()) fail(at(key), "expected true or false, got " + v.dump());
    return v.get<bool>();
  }
  std::string string(const std::string& key, const std::string& fallback, bool required = false) {
    if (!required && !has(key)) return fallback;
    const Json& v = field(key);
    if (!v.is_string()) fail(at(key), "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
  Json object(const std::string& key) {
    if (!has(key)) return Json::object();
    const Json& v = field(key);
    if (!v.is_object()) fail(at(key), "expected an object, got " + type_of(v));
    return v;
  }
  const Json& array(const std::string& key, bool required = false) {
    static const Json empty = Json::array();
    if (!required && !has(key)) return empty;
    const Json& v = field(key);
    if (!v.is_array()) fail(at(key), "expected a list, got " + type_of(v));
    return v;
  }
  // Every field not read so far.
  Json extra() const {
    Json out = Json::object();
    for (const auto& [key, value] : json_.items()) {
      if (!seen_.contains(key)) out[key] = value;
    }
    return out;
  }
  const std::string& source() const { return source_; }

 private:
  static std::string type_of(const Json& v) {
    if (v.is_object()) return "an object";
    if (v.is_array()) return "a list";
    return v.dump();
  }
  const Json& json_;
  std::string path_;
  const std::string& source_;
  std::set<std::string> seen_;
};

std::string item(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

PortRef read_port(const Json& json, const std::string& path, const std::string& source) {
  Reader r(json, path, source);
  PortRef p;
  p.node = r.integer("node", 0, true);
  p.port = r.string("port", "", true);
  if (!r.extra().empty())
    r.fail(path, "unknown field '" + r.extra().items().begin().key() + "' (a port has node, port)");
  return p;
}

Graph read_graph(const Json& json, const std::string& path, const std::string& source) {
  Reader r(json, path, source);
  Graph g;
  const Json& nodes = r.array("nodes", true);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = item(r.at("nodes"), i);
    Reader n(nodes[i], where, source);
    Node node;
    node.id = n.integer("id", 0, true);
    if (node.id <= 0)
      n.fail(n.at("id"), "node ids are positive integers, got " + std::to_string(node.id));
    if (const Node* other = g.find(node.id))
      n.fail(n.at("id"),
             "id " + std::to_string(node.id) + " is already used by node '" + other->name + "'");
    node.type = n.string("type", "", true);
    node.name = n.string("name", "", true);
    node.options = n.object("options");
    node.x = n.number("x", 0);
    node.y = n.number("y", 0);
    const Json& members = n.array("members");
    for (size_t m = 0; m < members.size(); ++m) {
      if (!members[m].is_number_integer())
        n.fail(item(n.at("members"), m), "expected a node id, got " + members[m].dump());
      node.members.push_back(members[m].get<NodeId>());
    }
    node.collapsed = n.boolean("collapsed", false);
    node.folded = n.boolean("folded", false);
    node.extra = n.extra();
    g.insert_node(std::move(node));
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::vector<NodeId>& members = g.nodes[i].members;
    for (size_t m = 0; m < members.size(); ++m) {
      const std::string where = item(item(r.at("nodes"), i) + ".members", m);
      if (!g.find(members[m]) || members[m] == g.nodes[i].id)
        r.fail(where, "no other node has id " + std::to_string(members[m]));
      const Node* first = nullptr;
      for (const Node& other : g.nodes) {
        if (&other != &g.nodes[i] &&
            std::count(other.members.begin(), other.members.end(), members[m])) {
          first = &other;
        }
      }
      if (first || std::count(members.begin(), members.end(), members[m]) > 1)
        r.fail(where, "node " + std::to_string(members[m]) + " is a member of two groups");
    }
  }
  const Json& edges = r.array("edges");
  for (size_t i = 0; i < edges.size(); ++i) {
    const std::string where = item(r.at("edges"), i);
    Reader e(edges[i], where, source);
    Edge edge{read_port(e.field("from"), e.at("from"), source),
              read_port(e.field("to"), e.at("to"), source)};
    if (!e.extra().empty())
      e.fail(where,
             "unknown field '" + e.extra().items().begin().key() + "' (an edge has from, to)");
    for (const auto& [end, key] : {std::pair{edge.from, "from"}, std::pair{edge.to, "to"}}) {
      if (!g.find(end.node))
        e.fail(e.at(key) + ".node", "no node has id " + std::to_string(end.node));
    }
    if (g.edge_into(edge.to))
      e.fail(where, "input port '" + edge.to.port + "' of node " + std::to_string(edge.to.node) +
                        " is fed by two edges");
    g.edges.push_back(edge);
  }
  g.next_id = std::max(g.next_id, r.integer("next_id", 1));
  if (!r.extra().empty())
    r.fail(r.at(r.extra().items().begin().key()),
           "unknown field (a graph has nodes, edges, next_id)");
  return g;
}

bool is_scalar(const Json& v) {
  return !v.is_structured();
}

// JSON with two-space indents, but short things on one line: lists of plain values
// ("shape": [1, 16, 16]) and objects of at most two plain values (an edge's "from"), so that a
// project file reads well and diffs by line.
void write_pretty(const Json& v, std::string& out, int indent) {
  const bool inline_array = v.is_array() && std::all_of(v.begin(), v.end(), is_scalar);
  const bool inline_object =
      v.is_object() && v.size() <= 2 && std::all_of(v.begin(), v.end(), is_scalar);
  if (!v.is_structured() || v.empty()) {
    out += v.dump();
  } else if (inline_array || inline_object) {
    out += v.is_array() ? "[" : "{";
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      out += first ? "" : ", ";
      first = false;
      if (v.is_object()) out += Json(key).dump() + ": ";
      out += value.dump();
    }
    out += v.is_array() ? "]" : "}";
  } else {
    const std::string pad(static_cast<size_t>(indent + 2), ' ');
    out += v.is_array() ? "[\n" : "{\n";
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      out += first ? "" : ",\n";
      first = false;
      out += pad;
      if (v.is_object()) out += Json(key).dump() + ": ";
      write_pretty(value, out, indent + 2);
    }
    out += "\n" + std::string(static_cast<size_t>(indent), ' ') + (v.is_array() ? "]" : "}");
  }
}

Json port_to_json(const PortRef& p) {
  return Json{{"node", p.node}, {"port", p.port}};
}

void merge_extra(Json& out, const Json& extra) {
  for (const auto& [key, value] : extra.items()) out[key] = value;
}

}  // namespace

const BlockDef* Project::find_block(const std::string& block_name) const {
  auto it = std::find_if(blocks.begin(), blocks.end(),
                         [&block_name](const BlockDef& b) { return b.name == block_name; });
  return it == blocks.end() ? nullptr : &*it;
}

Json graph_to_json(const Graph& graph) {
  Json nodes = Json::array();
  for (const Node& n : graph.nodes) {
    Json j{{"id", n.id},           {"type", n.type}, {"name", n.name},
           {"options", n.options}, {"x", n.x},       {"y", n.y}};
    if (!n.members.empty()) j["members"] = n.members;
    if (n.collapsed) j["collapsed"] = true;
    if (n.folded) j["folded"] = true;
    merge_extra(j, n.extra);
    nodes.push_back(std::move(j));
  }
  Json edges = Json::array();
  for (const Edge& e : graph.edges)
    edges.push_back(Json{{"from", port_to_json(e.from)}, {"to", port_to_json(e.to)}});
  return Json{{"nodes", std::move(nodes)}, {"edges", std::move(edges)}, {"next_id", graph.next_id}};
}

Graph graph_from_json(const Json& json, const std::string& where) {
  return read_graph(json, "", where);
}

Project parse_project(std::string_view json_text, const std::string& source) {
  Json json;
  try {
    json = Json::parse(json_text.begin(), json_text.end());
  } catch (const nlohmann::json::exception& e) {
    // Syntax errors and numbers too large for a double (out_of_range.406) alike. e.what()
    // reads "[json.exception.parse_error.101] parse error at line 3, column 5: ...": the
    // bracketed tag means nothing to a user.
    const std::string what = e.what();
    const size_t tag_end = what.rfind("] ", what.find(' '));
    throw ValueError(source + ": not valid JSON: " +
                     (tag_end == std::string::npos ? what : what.substr(tag_end + 2)));
  }
  Reader r(json, "", source);
  const std::string tag = r.has("format") && r.field("format").is_string()
                              ? r.field("format").get<std::string>()
                              : std::string();
  if (tag != kFormatTag)
    r.fail("format",
           std::string("not an NN Studio project (expected \"format\": \"") + kFormatTag + "\")");
  Project p;
  p.version = static_cast<int>(r.integer("version", 0, true));
  if (p.version < 1) r.fail("version", "expected a version >= 1, got " + std::to_string(p.version));
  if (p.version > kProjectFormatVersion)
    throw ValueError(source + ": project format version " + std::to_string(p.version) +
                     " is newer than this NN Studio reads (up to version " +
                     std::to_string(kProjectFormatVersion) + "); open it with a newer NN Studio");
  p.version = kProjectFormatVersion;
  p.name = r.string("name", "Net");
  p.layout_direction = r.string("layout_direction", "");
  if (!p.layout_direction.empty() && p.layout_direction != "TB" && p.layout_direction != "LR")
    r.fail("layout_direction", "expected \"TB\" (top to bottom) or \"LR\" (left to right), got \"" +
                                   p.layout_direction + "\"");
  p.graph = read_graph(r.has("graph") ? r.field("graph") : Json{{"nodes", Json::array()}}, "graph",
                       source);

  const Json& blocks = r.array("blocks");
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string where = item("blocks", i);
    Reader b(blocks[i], where, source);
    BlockDef block;
    block.name = b.string("name", "", true);
    if (p.find_block(block.name))
      b.fail(b.at("name"), "block '" + block.name + "' is defined twice");
    block.description = b.string("description", "");
    block.arguments = b.object("arguments");
    block.graph = read_graph(b.field("graph"), b.at("graph"), source);
    if (!b.extra().empty())
      b.fail(b.at(b.extra().items().begin().key()),
             "unknown field (a block has name, description, arguments, graph)");
    p.blocks.push_back(std::move(block));
  }

  const Json& probes = r.array("probes");
  for (size_t i = 0; i < probes.size(); ++i) {
    Reader pr(probes[i], item("probes", i), source);
    ProbeSpec probe;
    probe.node = pr.integer("node", 0, true);
    if (!p.graph.find(probe.node))
      pr.fail(pr.at("node"), "no node of the graph has id " + std::to_string(probe.node));
    probe.activations = pr.boolean("activations", true);
    probe.gradients = pr.boolean("gradients", true);
    probe.parameters = pr.boolean("parameters", true);
    probe.every = pr.integer("every", 10);
    if (probe.every < 1)
      pr.fail(pr.at("every"), "expected an integer >= 1, got " + std::to_string(probe.every));
    probe.max_overhead = pr.number("max_overhead", probe.max_overhead);
    if (!(probe.max_overhead >= 0 && probe.max_overhead <= 1)) {
      pr.fail(pr.at("max_overhead"),
              "expected a fraction in [0, 1] (0: sample exactly every N "
              "steps), got " +
                  std::to_string(probe.max_overhead));
    }
    probe.extra = pr.extra();
    p.probes.push_back(std::move(probe));
  }

  if (r.has("dataset")) {
    Reader d(r.field("dataset"), "dataset", source);
    DatasetSettings& ds = p.dataset;
    ds.name = d.string("name", ds.name);
    ds.options = d.object("options");
    ds.test_fraction = d.number("test_fraction", ds.test_fraction);
    if (!(ds.test_fraction >= 0 && ds.test_fraction < 1))
      d.fail(d.at("test_fraction"),
             "expected a number in [0, 1), got " + std::to_string(ds.test_fraction));
    ds.seed = d.integer("seed", ds.seed);
    ds.csv_path = d.string("csv_path", "");
    ds.label_column = d.string("label_column", "");
    ds.path = d.string("path", "");
    ds.transforms = d.string("transforms", "");
    ds.extra = d.extra();
  }
  if (r.has("training")) {
    Reader t(r.field("training"), "training", source);
    TrainingSettings& ts = p.training;
    ts.loss = t.string("loss", ts.loss);
    ts.loss_options = t.object("loss_options");
    ts.optimizer = t.string("optimizer", ts.optimizer);
    ts.optimizer_options = t.object("optimizer_options");
    ts.scheduler = t.string("scheduler", "");
    ts.scheduler_options = t.object("scheduler_options");
    ts.batch_size = t.integer("batch_size", ts.batch_size);
    if (ts.batch_size < 1)
      t.fail(t.at("batch_size"), "expected an integer >= 1, got " + std::to_string(ts.batch_size));
    ts.epochs = t.integer("epochs", ts.epochs);
    if (ts.epochs < 0)
      t.fail(t.at("epochs"), "expected an integer >= 0, got " + std::to_string(ts.epochs));
    ts.seed = t.integer("seed", ts.seed);
    ts.clip_grad_norm = t.number("clip_grad_norm", 0);
    if (ts.clip_grad_norm < 0) t.fail(t.at("clip_grad_norm"), "expected a number >= 0 (0: off)");
    ts.device = t.string("device", "cpu");
    try {
      Device::parse(ts.device);
    } catch (const ValueError&) {
      t.fail(t.at("device"), "expected \"cpu\", \"cuda\" or \"cuda:N\", got \"" + ts.device + "\"");
    }
    ts.cuda_graphs = t.boolean("cuda_graphs", true);
    ts.extra = t.extra();
  }
  const Json& frozen = r.array("frozen_parameters");
  for (size_t i = 0; i < frozen.size(); ++i) {
    if (!frozen[i].is_string())
      r.fail(item("frozen_parameters", i),
             "expected a parameter's qualified name, got " + frozen[i].dump());
    p.frozen_parameters.push_back(frozen[i].get<std::string>());
  }
  if (r.has("plugin_types")) {
    const Json types = r.object("plugin_types");
    for (const auto& [type, ref] : types.items()) {
      Reader t(ref, "plugin_types." + type, source);
      p.plugin_types[type] = PluginRef{t.string("plugin", "", true), t.string("version", "")};
    }
  }
  p.extra = r.extra();
  return p;
}

std::map<std::string, PluginRef> plugin_types_of(const Project& project) {
  std::map<std::string, PluginRef> out;
  auto note = [&](const Graph& graph) {
    for (const Node& n : graph.nodes) {
      if (out.contains(n.type)) continue;
      if (const NodeType* t = find_node_type(n.type)) {
        if (!t->plugin.empty()) out[n.type] = PluginRef{t->plugin, t->plugin_version};
      } else if (auto it = project.plugin_types.find(n.type); it != project.plugin_types.end()) {
        out[n.type] = it->second;
      }
    }
  };
  note(project.graph);
  for (const BlockDef& b : project.blocks) note(b.graph);
  return out;
}

Project load_project(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ValueError("cannot open project file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ValueError("cannot read project file '" + path + "'");
  return parse_project(text.str(), path);
}

std::string project_to_json(const Project& p) {
  Json j{{"format", kFormatTag}, {"version", kProjectFormatVersion}, {"name", p.name}};
  if (!p.layout_direction.empty()) j["layout_direction"] = p.layout_direction;
  j["graph"] = graph_to_json(p.graph);
  Json blocks = Json::array();
  for (const BlockDef& b : p.blocks) {
    blocks.push_back(Json{{"name", b.name},
                          {"description", b.description},
                          {"arguments", b.arguments},
                          {"graph", graph_to_json(b.graph)}});
  }
  j["blocks"] = std::move(blocks);
  Json probes = Json::array();
  for (const ProbeSpec& probe : p.probes) {
    Json pj{{"node", probe.node},           {"activations", probe.activations},
            {"gradients", probe.gradients}, {"parameters", probe.parameters},
            {"every", probe.every},         {"max_overhead", probe.max_overhead}};
    merge_extra(pj, probe.extra);
    probes.push_back(std::move(pj));
  }
  j["probes"] = std::move(probes);
  const DatasetSettings& d = p.dataset;
  Json dj{{"name", d.name},
          {"options", d.options},
          {"test_fraction", d.test_fraction},
          {"seed", d.seed}};
  if (!d.csv_path.empty()) dj["csv_path"] = d.csv_path;
  if (!d.label_column.empty()) dj["label_column"] = d.label_column;
  if (!d.path.empty()) dj["path"] = d.path;
  if (!d.transforms.empty()) dj["transforms"] = d.transforms;
  merge_extra(dj, d.extra);
  j["dataset"] = std::move(dj);
  const TrainingSettings& t = p.training;
  Json tj{{"loss", t.loss},
          {"loss_options", t.loss_options},
          {"optimizer", t.optimizer},
          {"optimizer_options", t.optimizer_options}};
  tj["scheduler"] = t.scheduler;
  tj["scheduler_options"] = t.scheduler_options;
  tj["batch_size"] = t.batch_size;
  tj["epochs"] = t.epochs;
  tj["seed"] = t.seed;
  tj["clip_grad_norm"] = t.clip_grad_norm;
  // Written only for a GPU, so that a CPU project's file reads as before.
  if (t.device != "cpu") tj["device"] = t.device;
  // Likewise only when off.
  if (!t.cuda_graphs) tj["cuda_graphs"] = false;
  merge_extra(tj, t.extra);
  j["training"] = std::move(tj);
  // Written only when set, so that a project without frozen parameters reads as before.
  if (!p.frozen_parameters.empty()) j["frozen_parameters"] = p.frozen_parameters;
  // Written only when a plugin type is used, so that other projects read as before.
  const std::map<std::string, PluginRef> plugin_types = plugin_types_of(p);
  if (!plugin_types.empty()) {
    Json pj = Json::object();
    for (const auto& [type, ref] : plugin_types)
      pj[type] = Json{{"plugin", ref.plugin}, {"version", ref.version}};
    j["plugin_types"] = std::move(pj);
  }
  merge_extra(j, p.extra);
  std::string out;
  write_pretty(j, out, 0);
  return out + "\n";
}

void save_project(const Project& project, const std::string& path) {
  const std::string text = project_to_json(project);
  serialize::write_file_atomically(path, [&text](serialize::ByteSink& sink) { sink.write(text); });
}

}  // namespace nns::graph
