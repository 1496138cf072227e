// colabtrace kernel install: a Jupyter kernelspec whose kernel runs under `colabtrace run`,
// so a kernel the OOM killer SIGKILLs mid-cell still leaves complete traces, and `run`'s
// own wait status and outside samples say what killed it.
//
// The kernelspec (kernels/NAME/kernel.json under the chosen Jupyter data folder) holds
// absolute paths: this colabtrace program and the Python the kernel runs, so it works
// from any environment Jupyter starts it in:
//   [colabtrace, run, -o, DIR, --, PYTHON, -m, ipykernel_launcher, -f, {connection_file}]
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/command.h"
#include "core/json.h"
#include "cli/flag_reader.h"

namespace colabtrace::cli {
namespace {

namespace fs = std::filesystem;
using analyzer::FlagReader;

constexpr const char* kDefaultName = "colabtrace";
constexpr const char* kDisplayName = "Python 3 (colabtrace)";
constexpr const char* kDefaultTraceDir = "colabtrace-traces";

// Jupyter's kernel names: ASCII letters, digits, '.', '_' and '-'.
bool ValidKernelName(std::string_view name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// The Python the kernel runs: --python, else the one that ran `python -m colabtrace` or
// the console script (it sets COLABTRACE_INVOKING_PYTHON), else /usr/bin/python3.
std::string DefaultPython() {
  if (const char* py = std::getenv("COLABTRACE_INVOKING_PYTHON"); py != nullptr && *py != '\0') return py;
  return "/usr/bin/python3";
}

// sys.prefix of python (for --sys-prefix), asked from the interpreter itself.
std::optional<std::string> SysPrefix(const std::string& python) {
  const std::string cmd = "'" + python + "' -c 'import sys; print(sys.prefix)' 2>/dev/null";
  if (python.find('\'') != std::string::npos) return std::nullopt;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  char buf[4096];
  std::string out;
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  if (pclose(p) != 0) return std::nullopt;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (out.empty()) return std::nullopt;
  return out;
}

// Jupyter's per-user data folder: $JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter, else
// ~/.local/share/jupyter.
std::optional<fs::path> UserDataDir() {
  if (const char* d = std::getenv("JUPYTER_DATA_DIR"); d != nullptr && *d != '\0') return fs::path(d);
  if (const char* x = std::getenv("XDG_DATA_HOME"); x != nullptr && *x != '\0') return fs::path(x) / "jupyter";
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return std::nullopt;
  return fs::path(home) / ".local" / "share" / "jupyter";
}

std::string KernelJson(const std::vector<std::string>& argv) {
  std::string out = "{\n  \"argv\": [";
  for (size_t i = 0; i < argv.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    analyzer::AppendJsonString(out, argv[i]);
  }
  out += "\n  ],\n  \"display_name\": ";
  analyzer::AppendJsonString(out, kDisplayName);
  out += ",\n  \"language\": \"python\",\n  \"interrupt_mode\": \"signal\",\n"
         "  \"metadata\": {\"debugger\": false, \"colabtrace\": {\"trace_dir\": ";
  analyzer::AppendJsonString(out, argv[3]);
  out += "}}\n}\n";
  return out;
}

class KernelCommand final : public Command {
 public:
  std::string_view name() const override { return "kernel"; }
  std::string_view summary() const override {
    return "install a Jupyter kernel that runs under colabtrace run";
  }
  std::string usage() const override {
    return "Usage: colabtrace kernel install [--user|--prefix P|--sys-prefix] [-o DIR] [--name N]\n"
           "                                [--python PY]\n\n"
           "Writes the Jupyter kernelspec NAME (\"Python 3 (colabtrace)\"): its kernel is\n"
           "  colabtrace run -o DIR -- PY -m ipykernel_launcher -f {connection_file}\n"
           "so a kernel killed mid-cell (the OOM killer, a crash) leaves complete traces in DIR,\n"
           "and `colabtrace report DIR` (or `%colabtrace report --last` in the restarted\n"
           "kernel) says what happened. Restart the notebook on the new kernel once.\n\n"
           "Options:\n"
           "  --user          into the per-user Jupyter folder ($JUPYTER_DATA_DIR, else\n"
           "                  ~/.local/share/jupyter) (the default)\n"
           "  --prefix P      into P/share/jupyter (what `jupyter kernelspec` calls --prefix)\n"
           "  --sys-prefix    into PY's sys.prefix/share/jupyter (a venv or conda env)\n"
           "  -o, --output DIR  where the kernel's traces go (default colabtrace-traces: a\n"
           "                  relative DIR is relative to the notebook's folder)\n"
           "  --name N        the kernelspec name (default colabtrace)\n"
           "  --python PY     the kernel's Python (default: the Python running `python -m\n"
           "                  colabtrace`/the colabtrace script, else /usr/bin/python3); it\n"
           "                  needs ipykernel\n"
           "  -h, --help      show this help\n\n"
           "Prints the kernelspec folder. Exit codes: 0 installed, 2 usage error or a folder\n"
           "that cannot be written.\n";
  }

  int Run(const std::vector<std::string>& args) override {
    if (args.empty() || args[0] != "install") {
      return UsageError(name(), args.empty() ? "missing action (install)"
                                             : "unknown action '" + args[0] + "' (only install)");
    }
    enum class Where { kUser, kPrefix, kSysPrefix } where = Where::kUser;
    int where_flags = 0;
    std::string prefix, trace_dir = kDefaultTraceDir, kernel_name = kDefaultName;
    std::string python = DefaultPython();
    const std::vector<std::string> flags(args.begin() + 1, args.end());  // FlagReader keeps a reference
    FlagReader r(flags);
    while (r.Next()) {
      if (r.positional()) return UsageError(name(), "unexpected argument '" + r.arg() + "'");
      if (r.Is("--user")) {
        where = Where::kUser;
        ++where_flags;
      } else if (r.Is("--sys-prefix")) {
        where = Where::kSysPrefix;
        ++where_flags;
      } else if (r.Is("--prefix")) {
        auto v = r.Value();
        if (!v || v->empty()) return UsageError(name(), "--prefix needs a folder");
        where = Where::kPrefix;
        prefix = *v;
        ++where_flags;
      } else if (r.Is("--output", "-o")) {
        auto v = r.Value();
        if (!v || v->empty()) return UsageError(name(), "-o needs a folder for the traces");
        trace_dir = *v;
      } else if (r.Is("--name")) {
        auto v = r.Value();
        if (!v || !ValidKernelName(*v)) {
          return UsageError(name(), "--name takes letters, digits, '.', '_' and '-'");
        }
        kernel_name = *v;
      } else if (r.Is("--python")) {
        auto v = r.Value();
        if (!v || v->empty()) return UsageError(name(), "--python needs an interpreter");
        python = *v;
      } else {
        return UsageError(name(), "unknown option '" + r.arg() + "'");
      }
    }
    if (where_flags > 1) return UsageError(name(), "give one of --user, --prefix and --sys-prefix");

    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
      std::cerr << "colabtrace kernel: cannot find this program's path: " << ec.message() << "\n";
      return kExitUsage;
    }
    if (python.find('/') != std::string::npos) python = fs::absolute(python, ec).string();

    fs::path data_dir;
    if (where == Where::kPrefix) {
      data_dir = fs::absolute(prefix, ec) / "share" / "jupyter";
    } else if (where == Where::kSysPrefix) {
      auto p = SysPrefix(python);
      if (!p) {
        std::cerr << "colabtrace kernel: cannot ask " << python << " for its sys.prefix\n";
        return kExitUsage;
      }
      data_dir = fs::path(*p) / "share" / "jupyter";
    } else {
      auto d = UserDataDir();
      if (!d) {
        std::cerr << "colabtrace kernel: no HOME or JUPYTER_DATA_DIR for --user\n";
        return kExitUsage;
      }
      data_dir = *d;
    }
    const fs::path spec_dir = data_dir / "kernels" / kernel_name;
    fs::create_directories(spec_dir, ec);
    if (ec) {
      std::cerr << "colabtrace kernel: cannot create " << spec_dir.string() << ": " << ec.message() << "\n";
      return kExitUsage;
    }
    const std::vector<std::string> argv = {self.string(), "run", "-o", trace_dir, "--", python, "-m",
                                           "ipykernel_launcher", "-f", "{connection_file}"};
    const fs::path json = spec_dir / "kernel.json";
    std::ofstream out(json, std::ios::binary | std::ios::trunc);
    out << KernelJson(argv);
    out.close();
    if (!out) {
      std::cerr << "colabtrace kernel: cannot write " << json.string() << ": " << std::strerror(errno) << "\n";
      return kExitUsage;
    }
    std::cout << spec_dir.string() << "\n";
    return kExitOk;
  }
};

}  // namespace

std::unique_ptr<Command> MakeKernelCommand() { return std::make_unique<KernelCommand>(); }

}  // namespace colabtrace::cli
