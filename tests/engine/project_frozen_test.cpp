// SPDX-License-Identifier: GPL-3.0-or-later
// Project::frozen_parameters: the parameters that do not train, a field of the project file.
// Files written before it was a field kept the same top-level key among the unknown fields
// (Project::extra), so they load into the field and are written back byte for byte.
#include <gtest/gtest.h>

#include <string>

#include "engine/graph/project.h"
#include "engine/tensor/error.h"

namespace nns::test {
namespace {

using graph::parse_project;
using graph::project_to_json;

// A file as the version before the field wrote it: frozen_parameters after training.
std::string older_file() {
  graph::Project p;
  p.graph.add_node("Input", "x", {{"shape", {2}}});
  p.graph.add_node("Linear", "fc1", {{"in_features", 2}, {"out_features", 3}});
  p.extra["frozen_parameters"] = {"fc1.weight", "fc1.bias"};
  return project_to_json(p);
}

TEST(ProjectFrozenTest, OlderFilesLoadIntoTheFieldAndSaveUnchanged) {
  const std::string text = older_file();
  const graph::Project p = parse_project(text, "old.nns");
  EXPECT_EQ(p.frozen_parameters, (std::vector<std::string>{"fc1.weight", "fc1.bias"}));
  EXPECT_TRUE(p.extra.empty()) << p.extra.dump();
  EXPECT_EQ(project_to_json(p), text);
}

TEST(ProjectFrozenTest, RoundTripsAndIsLeftOutWhenEmpty) {
  graph::Project p;
  p.graph.add_node("Linear", "fc1", {{"in_features", 2}, {"out_features", 3}});
  EXPECT_EQ(project_to_json(p).find("frozen_parameters"), std::string::npos);
  p.frozen_parameters = {"fc1.bias"};
  const std::string text = project_to_json(p);
  EXPECT_NE(text.find("\"frozen_parameters\": [\"fc1.bias\"]"), std::string::npos) << text;
  EXPECT_EQ(parse_project(text, "p.nns"), p);
}

TEST(ProjectFrozenTest, ANameThatIsNoStringIsRefusedWithItsPath) {
  std::string text = project_to_json(graph::Project{});
  text.insert(text.rfind('}'), ", \"frozen_parameters\": [\"fc1.weight\", 3]");
  try {
    parse_project(text, "p.nns");
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("p.nns: frozen_parameters[1]: expected a parameter's "
                                         "qualified name, got 3"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nns::test
