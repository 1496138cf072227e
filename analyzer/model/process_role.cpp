#include "model/process_role.h"

#include <cctype>
#include <vector>

#include "core/format.h"

namespace colabtrace::analyzer {
namespace {

// `s` without a leading run of characters from `chars`.
std::string_view SkipAll(std::string_view s, std::string_view chars) {
  const size_t n = s.find_first_not_of(chars);
  return n == std::string_view::npos ? std::string_view() : s.substr(n);
}

// Programs whose first non-option argument names the real job: python, pypy and the
// others below, with an optional version ("python3.11", "perl5.36"). Hand-written
// matching, not std::regex: argv comes from the trace and may be hostile.
bool IsInterpreter(std::string_view exe) {
  constexpr std::string_view kVersion = "0123456789.";
  auto versioned = [&](std::string_view name, std::string_view base) {
    return name.starts_with(base) && SkipAll(name.substr(base.size()), kVersion).empty();
  };
  for (std::string_view py : {"python", "pypy"}) {
    if (!exe.starts_with(py)) continue;
    std::string_view rest = SkipAll(exe.substr(py.size()), kVersion);
    if (rest.starts_with("m")) rest.remove_prefix(1);
    if (rest.empty() || rest == "-dbg") return true;
  }
  for (std::string_view sh : {"sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "node",
                              "nodejs", "Rscript", "julia"}) {
    if (exe == sh) return true;
  }
  for (std::string_view base : {"perl", "ruby", "lua", "php"}) {
    if (versioned(exe, base)) return true;
  }
  return false;
}

// Options of python and the shells that take a separate argument.
bool OptionTakesValue(std::string_view opt) {
  return opt == "-W" || opt == "-X" || opt == "-Q" || opt == "--check-hash-based-pycs" ||
         opt == "-o" || opt == "-r" || opt == "--require";
}

// "from multiprocessing.spawn import spawn_main; ..." -> "multiprocessing.spawn".
std::string LauncherModule(std::string_view code) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  std::string_view s = SkipAll(code, kSpace);
  if (!s.starts_with("from") || s.size() < 5 || kSpace.find(s[4]) == std::string_view::npos) return {};
  s = SkipAll(s.substr(4), kSpace);
  auto ident_start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  auto ident_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  if (s.empty() || !ident_start(s[0])) return {};
  size_t n = 1;
  while (n < s.size() && ident_char(s[n])) ++n;
  const std::string_view module = s.substr(0, n);
  std::string_view rest = s.substr(n);
  if (rest.empty() || kSpace.find(rest[0]) == std::string_view::npos) return {};
  rest = SkipAll(rest, kSpace);
  if (!rest.starts_with("import") || (rest.size() > 6 && (ident_char(rest[6]) && rest[6] != '.'))) return {};
  return std::string(module);
}

std::string InterpreterJob(const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-m" && i + 1 < argv.size()) return "-m " + argv[i + 1];
    if (a.starts_with("-m") && a.size() > 2) return "-m " + a.substr(2);
    if (a == "-c" || a == "-e") {  // inline code: python and shells -c; node, perl, ruby -e
      const std::string module = i + 1 < argv.size() ? LauncherModule(argv[i + 1]) : "";
      return module.empty() ? a : a + " " + module;
    }
    if (a == "--") return i + 1 < argv.size() ? std::string(Basename(argv[i + 1])) : "";
    if (a.starts_with("-") && a != "-") {
      if (OptionTakesValue(a)) ++i;  // "-W ignore": the value is not the script
      continue;
    }
    return std::string(Basename(a));
  }
  return {};
}

}  // namespace

std::string ProcessRole(const Json& process) {
  std::vector<std::string> argv;
  if (const Json* a = process.Find("argv"); a && a->is_array()) {
    for (const Json& s : a->array()) argv.push_back(s.is_string() ? s.str() : std::string());
  }
  std::string exe;
  if (const Json* e = process.Find("exe"); e && e->is_string()) exe = std::string(Basename(e->str()));
  if (exe.empty() && !argv.empty()) exe = std::string(Basename(argv[0]));
  if (exe.empty()) exe = "unknown";
  std::string role = exe;
  if (IsInterpreter(exe)) {
    const std::string job = InterpreterJob(argv);
    if (!job.empty()) role += " " + job;
  }
  // A fork child that never exec'd runs its parent's program: say so.
  const Json* origin = process.Find("origin");
  const Json* images = process.Find("images");
  const bool execd = images && images->is_array() && images->array().size() > 1;
  if (origin && origin->is_string() && origin->str() == "fork" && !execd) role += " (fork)";
  return role;
}

std::string CommandLineText(const std::vector<std::string_view>& argv) {
  std::string s;
  for (std::string_view a : argv) {
    if (!s.empty()) s += ' ';
    s += EscapeForTerminal(a);  // argv is untrusted: no raw newlines or escapes
  }
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

std::string CommandLineText(const Json& argv) {
  std::vector<std::string_view> args;
  for (const Json& a : argv.array()) args.push_back(a.str());
  return CommandLineText(args);
}

std::string PidSample(const std::vector<int64_t>& pids) {
  std::string s;
  for (size_t k = 0; k < pids.size() && k < 3; ++k) s += (k ? " " : "") + std::to_string(pids[k]);
  if (pids.size() > 3) s += " ...";
  return s;
}

}  // namespace colabtrace::analyzer
