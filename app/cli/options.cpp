// SPDX-License-Identifier: GPL-3.0-or-later
// The command-line parsing shared by every subcommand (see options.h).
#include "app/cli/options.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>

namespace nns::cli {

int64_t Options::integer(const std::string& name, int64_t min, int64_t max) const {
  const std::string& text = values_.at(name);
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty()) bad(name, text, "an integer");
  if (v < min || v > max) {
    bad(name, text, "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

double Options::real(const std::string& name, double min, double max) const {
  const std::string& text = values_.at(name);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(v)) bad(name, text, "a number");
  if (v < min || v > max) {
    std::ostringstream range;
    range << "a number in [" << min << ", " << max << "]";
    bad(name, text, range.str());
  }
  return v;
}

const std::string& Options::choice(const std::string& name,
                                   const std::vector<std::string>& allowed) const {
  const std::string& text = values_.at(name);
  std::string list;
  for (const std::string& a : allowed) {
    if (a == text) return text;
    list += (list.empty() ? "" : ", ") + a;
  }
  bad(name, text, "one of " + list);
}

void Options::bad(const std::string& name, const std::string& text,
                  const std::string& expected) const {
  throw UsageError(command_ + ": --" + name + " expects " + expected + ", got '" + text + "'",
                   command_);
}

std::vector<std::string> Options::list(const std::string& name) const {
  std::vector<std::string> out;
  const std::string& all = values_.at(name);
  for (size_t start = 0; !all.empty() && start <= all.size();) {
    const size_t end = std::min(all.find('\n', start), all.size());
    out.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Options parse_options(const std::string& command, const std::vector<PositionalSpec>& positionals,
                      const std::vector<OptionSpec>& specs, const std::vector<std::string>& args) {
  std::map<std::string, std::string> values;
  std::vector<std::string> given;
  for (const OptionSpec& spec : specs)
    values[spec.name] = spec.value_name.empty() ? "0" : spec.default_value;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      if (given.size() == positionals.size())
        throw UsageError(command + ": unexpected argument '" + arg + "'", command);
      given.push_back(arg);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : specs) {
      if (s.name == name) spec = &s;
    }
    if (spec == nullptr) throw UsageError(command + ": unknown option '--" + name + "'", command);
    if (spec->value_name.empty()) {
      if (eq != std::string::npos)
        throw UsageError(command + ": --" + name + " takes no value", command);
      values[name] = "1";
    } else if (eq != std::string::npos || i + 1 < args.size()) {
      const std::string value = eq != std::string::npos ? arg.substr(eq + 1) : args[++i];
      // A repeated option's values, one per line (Options::list).
      std::string& slot = values[name];
      slot = spec->repeated && !slot.empty() ? slot + "\n" + value : value;
    } else {
      throw UsageError(command + ": --" + name + " needs a value (" + spec->value_name + ")",
                       command);
    }
  }
  if (given.size() < positionals.size()) {
    throw UsageError(command + ": missing " + positionals[given.size()].name, command);
  }
  return Options(command, std::move(values), std::move(given));
}

std::string options_help(const std::vector<OptionSpec>& specs) {
  std::ostringstream os;
  for (const OptionSpec& s : specs) {
    std::string left = "--" + s.name + (s.value_name.empty() ? "" : " " + s.value_name);
    os << "  " << left << std::string(left.size() < 22 ? 22 - left.size() : 1, ' ') << s.help;
    if (!s.value_name.empty() && !s.default_value.empty())
      os << " (default " << s.default_value << ")";
    os << "\n";
  }
  return os.str();
}

void print_table(const std::vector<std::vector<std::string>>& rows, size_t left,
                 const std::string& indent, const std::string& gap) {
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      line += c < left ? row[c] + pad : pad + row[c];
      if (c + 1 < row.size()) line += gap;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  }
}

}  // namespace nns::cli
