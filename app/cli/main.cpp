// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli: NN Studio without a window. Every job the window can run has a subcommand
// here, so that it can be scripted and tested headless.
//
//   nnstudio-cli example --epochs 30     train the example MLP on spirals, print progress
//   nnstudio-cli inspect model.pt         list a weight file's tensors and entries
//   nnstudio-cli convert a.pt a.safetensors   convert a state dict between formats
#include <cctype>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "engine/plugin/loader.h"

namespace nns::cli {
namespace {

std::vector<Command> commands() {
  return {example_command(), train_command(),   inspect_command(), convert_command(),
          summary_command(), forward_command(), layout_command(),  plugins_command(),
          export_command(),  import_command(),  runs_command(),    devices_command(),
          data_command(),    profile_command(), diff_command()};
}

std::string usage() {
  std::ostringstream os;
  os << "Usage: " << kProgram << " <command> [options]\n\n"
     << "NN Studio without a window.\n\nCommands:\n";
  for (const Command& c : commands()) {
    os << "  " << c.name << std::string(c.name.size() < 12 ? 12 - c.name.size() : 1, ' ')
       << c.summary << "\n";
  }
  os << "\nOptions:\n  -h, --help            show this help, or a command's: " << kProgram
     << " <command> --help\n  --version             print the version\n";
  return os.str();
}

std::string command_help(const Command& c) {
  std::string summary = c.summary;
  if (!summary.empty()) summary[0] = static_cast<char>(std::toupper(summary[0]));
  std::string line = "Usage: " + std::string(kProgram) + " " + c.name;
  std::string arguments;
  for (const PositionalSpec& p : c.positionals) {
    line += " " + p.name;
    arguments += "  " + p.name + std::string(p.name.size() < 22 ? 22 - p.name.size() : 1, ' ') +
                 p.help + "\n";
  }
  line += " [options]\n\n" + summary + ".\n\n";
  if (!arguments.empty()) line += "Arguments:\n" + arguments + "\n";
  return line + "Options:\n" + options_help(c.options) + "  -h, --help            show this help\n";
}

int run(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cout << usage();
    return 0;
  }
  const std::string& first = args[0];
  if (first == "-h" || first == "--help" || first == "help") {
    std::cout << usage();
    return 0;
  }
  if (first == "--version") {
    std::cout << kProgram << " " << NNS_VERSION << "\n";
    return 0;
  }
  for (const Command& c : commands()) {
    if (c.name != first) continue;
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const std::string& a : rest) {
      if (a == "-h" || a == "--help") {
        std::cout << command_help(c);
        return 0;
      }
    }
    return c.run(parse_options(c.name, c.positionals, c.options, rest));
  }
  if (first.rfind("-", 0) == 0) throw UsageError("unknown option '" + first + "'");
  throw UsageError("unknown command '" + first + "'");
}

}  // namespace
}  // namespace nns::cli

int main(int argc, char** argv) {
  using namespace nns::cli;
  const std::vector<std::string> args(argv + 1, argv + argc);
  // Before any command, so a project's plugin types are known; a broken plugin is a line in
  // `nnstudio-cli plugins`, never an error here.
  nns::plugin::load_installed_plugins();
  try {
    return run(args);
  } catch (const UsageError& e) {
    const std::string help = e.command.empty() ? "--help" : e.command + " --help";
    std::cerr << kProgram << ": " << e.what() << "\nTry '" << kProgram << " " << help << "'.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << kProgram << ": error: " << e.what() << "\n";
    return 1;
  }
}
