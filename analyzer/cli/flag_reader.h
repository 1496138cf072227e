// FlagReader: walks one subcommand's arguments, so that each command can own its flags
// with the same syntax as `colabtrace report`: `--flag VALUE`, `--flag=VALUE`, a short
// alias (`-o VALUE`), and positional arguments (every argument after a lone `--`).
//
//   FlagReader r(args);
//   while (r.Next()) {
//     if (r.positional()) inputs.push_back(r.arg());
//     else if (r.Is("--output", "-o")) { auto v = r.Value(); ... }
//     else return UsageError(name(), "unknown option '" + r.arg() + "'");
//   }
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colabtrace::analyzer {

class FlagReader {
 public:
  explicit FlagReader(const std::vector<std::string>& args) : args_(args) {}

  // Moves to the next argument; false when none is left. A lone "--" is consumed and
  // makes every later argument positional.
  bool Next() {
    ++i_;
    if (!after_dashes_ && i_ < args_.size() && args_[i_] == "--") {
      after_dashes_ = true;
      ++i_;
    }
    return i_ < args_.size();
  }

  const std::string& arg() const { return args_[i_]; }

  // A trace or directory rather than an option ("-" alone counts as positional).
  bool positional() const {
    return after_dashes_ || !arg().starts_with("-") || arg() == "-";
  }

  // True if the current argument is `long_flag`, `long_flag=...`, or `short_flag`.
  bool Is(std::string_view long_flag, std::string_view short_flag = {}) const {
    if (positional()) return false;
    const std::string& a = arg();
    if (a == long_flag || (!short_flag.empty() && a == short_flag)) return true;
    return a.size() > long_flag.size() && a.starts_with(long_flag) && a[long_flag.size()] == '=';
  }

  // The value of the flag just matched by Is(): the text after '=', or the next argument
  // (consumed). nullopt when the flag ends the command line.
  std::optional<std::string> Value() {
    const std::string& a = arg();
    if (const size_t eq = a.find('='); eq != std::string::npos && a.starts_with("--")) {
      return a.substr(eq + 1);
    }
    if (i_ + 1 >= args_.size()) return std::nullopt;
    return args_[++i_];
  }

 private:
  const std::vector<std::string>& args_;
  size_t i_ = static_cast<size_t>(-1);
  bool after_dashes_ = false;
};

}  // namespace colabtrace::analyzer
