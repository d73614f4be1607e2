// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The command line of nnstudio-cli: each subcommand declares its positional arguments and its
// options, and gets them parsed and checked here, so every command reports a bad command
// line the same way (one line naming the command and the argument, exit code 2).
#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace nns::cli {

constexpr const char* kProgram = "nnstudio-cli";

// A bad command line: reported with a pointer to the right help and exit code 2.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message, std::string command = "")
      : std::runtime_error(message), command(std::move(command)) {}
  std::string command;  // whose --help to point at; empty for the program's
};

// One option of a subcommand: `--name VALUE` or `--name=VALUE`, or a flag without a value.
// An empty default_value on an option with a value means "not given" (see Options::has).
struct OptionSpec {
  std::string name;
  std::string value_name;  // empty for a flag
  std::string default_value;
  std::string help;
  // May be given several times (import's --input, one per forward argument): Options::list.
  bool repeated = false;
};

// A required positional argument, e.g. {"PROJECT", "the project file (.nns)"}.
struct PositionalSpec {
  std::string name;
  std::string help;
};

// The parsed arguments of one subcommand; typed getters check the values.
class Options {
 public:
  Options(std::string command, std::map<std::string, std::string> values,
          std::vector<std::string> positionals)
      : command_(std::move(command)),
        values_(std::move(values)),
        positionals_(std::move(positionals)) {}

  const std::string& command() const { return command_; }
  // The i-th positional argument (all are required, so it is there).
  const std::string& positional(size_t i) const { return positionals_.at(i); }
  bool flag(const std::string& name) const { return values_.at(name) == "1"; }
  // Whether an option without a default was given.
  bool has(const std::string& name) const { return !values_.at(name).empty(); }
  const std::string& text(const std::string& name) const { return values_.at(name); }
  // Every value of a repeated option, in the order given; none when it was not given.
  std::vector<std::string> list(const std::string& name) const;
  int64_t integer(const std::string& name, int64_t min, int64_t max) const;
  double real(const std::string& name, double min, double max) const;
  // One of the allowed words, or a UsageError listing them.
  const std::string& choice(const std::string& name, const std::vector<std::string>& allowed) const;

  // A UsageError naming this command and the option.
  [[noreturn]] void bad(const std::string& name, const std::string& text,
                        const std::string& expected) const;

 private:
  std::string command_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
};

Options parse_options(const std::string& command, const std::vector<PositionalSpec>& positionals,
                      const std::vector<OptionSpec>& specs, const std::vector<std::string>& args);
std::string options_help(const std::vector<OptionSpec>& specs);

// Prints rows (a header row first) to stdout after `indent`, each column as wide as its widest
// cell and the columns `gap` apart: the first `left` columns aligned left (names), the others
// right (figures). Every command's tables (summary, inspect, diff, profile).
void print_table(const std::vector<std::vector<std::string>>& rows,
                 size_t left = std::numeric_limits<size_t>::max(), const std::string& indent = "  ",
                 const std::string& gap = " ");

}  // namespace nns::cli
