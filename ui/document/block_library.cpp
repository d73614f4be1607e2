// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/document/block_library.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>
#include <algorithm>
#include <functional>
#include <map>

#include "engine/graph/node_types.h"
#include "engine/serialize/bytes.h"
#include "engine/tensor/error.h"
#include "ui/document/node_info.h"
#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"

namespace nns::ui {
namespace {

// The custom blocks a graph's nodes are instances of, by the lookup given.
std::vector<std::string> usedBlocks(const graph::BlockDef& block,
                                    const std::function<bool(const std::string&)>& isBlock) {
  std::vector<std::string> out;
  for (const graph::Node& n : block.graph.nodes) {
    if (isBlock(n.type) && std::find(out.begin(), out.end(), n.type) == out.end()) {
      out.push_back(n.type);
    }
  }
  return out;
}

// The block and the blocks it uses (recursively), those it uses first.
std::vector<const graph::BlockDef*> withDependencies(
    const graph::BlockDef& block,
    const std::function<const graph::BlockDef*(const std::string&)>& find) {
  std::vector<const graph::BlockDef*> out;
  std::function<void(const graph::BlockDef&)> visit = [&](const graph::BlockDef& b) {
    if (std::find(out.begin(), out.end(), &b) != out.end()) return;
    for (const std::string& used : usedBlocks(b, [&](const std::string& t) { return find(t); })) {
      visit(*find(used));
    }
    out.push_back(&b);
  };
  visit(block);
  return out;
}

}  // namespace

BlockLibrary& BlockLibrary::user() {
  static BlockLibrary library;
  return library;
}

BlockLibrary::BlockLibrary() {
  folder_ =
      QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath("blocks");
  reload();
}

void BlockLibrary::setFolder(const QString& folder) {
  folder_ = folder;
  reload();
}

const graph::BlockDef* BlockLibrary::find(const std::string& name) const {
  auto it = std::find_if(blocks_.begin(), blocks_.end(),
                         [&](const graph::BlockDef& b) { return b.name == name; });
  return it == blocks_.end() ? nullptr : &*it;
}

QString BlockLibrary::fileOf(const std::string& name) const {
  return QDir(folder_).filePath(qs(name) + ".json");
}

void BlockLibrary::reload() {
  blocks_.clear();
  problems_.clear();
  const QDir dir(folder_);
  for (const QFileInfo& info : dir.entryInfoList({"*.json"}, QDir::Files, QDir::Name)) {
    const std::string path = info.filePath().toStdString();
    try {
      QFile file(info.filePath());
      if (!file.open(QIODevice::ReadOnly)) throw ValueError("cannot open " + path);
      // A library file is one entry of a project's "blocks": read as such, it gets the project
      // reader's checks and messages.
      const graph::Json block = graph::Json::parse(file.readAll().toStdString());
      const graph::Json wrapped{
          {"format", "nnstudio-project"}, {"version", 1}, {"blocks", {block}}};
      graph::Project p = graph::parse_project(wrapped.dump(), path);
      if (find(p.blocks.front().name)) {
        throw ValueError(path + ": a second block named '" + p.blocks.front().name + "'");
      }
      blocks_.push_back(std::move(p.blocks.front()));
    } catch (const std::exception& e) {
      problems_ << tr("Block library: %1 was left out: %2").arg(info.fileName(), e.what());
    }
  }
  emit changed();
}

void BlockLibrary::save(const graph::Project& project, const std::string& name) {
  const graph::BlockDef* block = project.find_block(name);
  if (!block) throw KeyError("the project has no custom block '" + name + "' to save");
  QDir().mkpath(folder_);
  for (const graph::BlockDef* b :
       withDependencies(*block, [&](const std::string& t) { return project.find_block(t); })) {
    const bool fileName = std::all_of(b->name.begin(), b->name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    if (b->name.empty() || !fileName)
      throw ValueError("block '" + b->name +
                       "' cannot be a library file name: rename it to letters, digits and _");
    const std::string text = graph::Json{{"name", b->name},
                                         {"description", b->description},
                                         {"arguments", b->arguments},
                                         {"graph", graph::graph_to_json(b->graph)}}
                                 .dump(2) +
                             "\n";
    serialize::write_file_atomically(fileOf(b->name).toStdString(),
                                     [&text](serialize::ByteSink& sink) { sink.write(text); });
  }
  reload();
}

void BlockLibrary::remove(const std::string& name) {
  if (!find(name)) throw KeyError("the block library has no block '" + name + "'");
  if (!QFile::remove(fileOf(name)))
    throw ValueError("cannot delete " + fileOf(name).toStdString() + " from the block library");
  reload();
}

graph::NodeId BlockLibrary::addInstance(ProjectDocument* document, const std::string& name,
                                        QPointF pos) const {
  QStringList renames;
  graph::NodeId instance = 0;
  const bool held =
      document->edit(tr("Add %1 from the library").arg(qs(name)), [&](graph::Project& p) {
        const graph::BlockDef* block = find(name);
        if (!block) throw KeyError("the block library has no block '" + name + "'");
        auto inLibrary = [this](const std::string& t) { return find(t); };
        std::vector<const graph::BlockDef*> needed;
        std::function<void(const graph::BlockDef&)> visit = [&](const graph::BlockDef& b) {
          if (std::find(needed.begin(), needed.end(), &b) != needed.end()) return;
          for (const graph::Node& n : b.graph.nodes) {
            if (n.type == b.name || graph::find_node_type(n.type) ||
                graph::is_container_type(n.type)) {
              continue;
            }
            const graph::BlockDef* used = inLibrary(n.type);
            if (!used)
              throw KeyError("library block '" + b.name + "' uses the block '" + n.type +
                             "', which is not in the library: save it there again");
            visit(*used);
          }
          needed.push_back(&b);
        };
        visit(*block);
        // Each library block's name in the project: its own, or a free one when the project's
        // block of that name differs.
        std::map<std::string, std::string> nameIn;
        auto taken = [&p](const std::string& n) {
          return p.find_block(n) || graph::find_node_type(n) || graph::is_container_type(n) ||
                 n == p.name;
        };
        for (const graph::BlockDef* b : needed) {
          graph::BlockDef copy = *b;
          for (graph::Node& n : copy.graph.nodes) {
            if (auto it = nameIn.find(n.type); it != nameIn.end()) n.type = it->second;
          }
          // Already in the project: under its own name, or under the name a former drop gave it.
          auto same =
              std::find_if(p.blocks.begin(), p.blocks.end(), [&](const graph::BlockDef& have) {
                graph::BlockDef renamed = copy;
                renamed.name = have.name;
                return have.name.rfind(copy.name, 0) == 0 && renamed == have;
              });
          if (same != p.blocks.end()) {
            nameIn[b->name] = same->name;
            continue;
          }
          if (taken(copy.name)) {
            std::string fresh;
            for (int i = 2; fresh.empty() || taken(fresh); ++i) fresh = b->name + std::to_string(i);
            renames << (p.find_block(b->name)
                            ? tr("the project already has a different %1, so the library's %1 "
                                 "was added as %2")
                            : tr("the name %1 is taken by the model or a node type, so the "
                                 "library's %1 was added as %2"))
                           .arg(qs(b->name), qs(fresh));
            copy.name = fresh;
          }
          nameIn[b->name] = copy.name;
          p.blocks.push_back(std::move(copy));
        }
        const std::string type = nameIn.at(name);
        instance = p.graph.add_node(type, freeNodeName(p.graph, type), graph::Json::object(),
                                    pos.x(), pos.y());
      });
  if (!held) return 0;
  for (const QString& line : renames) emit document->logMessage(line);
  return instance;
}

}  // namespace nns::ui
