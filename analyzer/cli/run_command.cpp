// colabtrace run: trace a command (sets LD_PRELOAD) and print a short summary.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "report/report.h"

namespace colabtrace::cli {
namespace {

namespace fs = std::filesystem;

// The shim next to this program: the same directory, ../lib, or lib/. COLABTRACE_SHIM
// overrides.
std::string FindShim() {
  if (const char* env = std::getenv("COLABTRACE_SHIM"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path dir = self.parent_path();
  for (const fs::path& p : {dir / "libcolabtrace.so", dir / ".." / "lib" / "libcolabtrace.so",
                            dir / "lib" / "libcolabtrace.so"}) {
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return {};
}

std::string DefaultOutDir() {
  const time_t now = time(nullptr);
  struct tm tm;
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "colabtrace-%Y%m%d-%H%M%S", &tm);
  return buf;
}

class RunCommand final : public Command {
 public:
  std::string_view name() const override { return "run"; }
  std::string_view summary() const override { return "trace a command and summarize what went wrong"; }
  std::string usage() const override {
    return "Usage: colabtrace run [-o DIR] -- COMMAND [ARGS...]\n\n"
           "Runs COMMAND with libcolabtrace.so preloaded (one trace per process, in DIR),\n"
           "then prints a short summary on stderr. Exits with COMMAND's exit code (128+N\n"
           "when it died of signal N).\n\n"
           "Options:\n"
           "  -o, --output DIR   where traces go (default: ./colabtrace-YYYYMMDD-HHMMSS)\n"
           "  -h, --help         show this help\n\n"
           "The shim is found next to this program (or in ../lib); COLABTRACE_SHIM overrides.\n"
           "Other COLABTRACE_* variables (STACKS, IO, SAMPLE_MS, VERBOSE) pass through.\n";
  }

  int Run(const std::vector<std::string>& args) override {
    std::string out_dir;
    size_t i = 0;
    for (; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--") {
        ++i;
        break;
      }
      if (a == "-o" || a == "--output") {
        if (i + 1 >= args.size()) return UsageError(name(), "-o needs a directory");
        out_dir = args[++i];
      } else if (a.starts_with("--output=")) {
        out_dir = a.substr(9);
      } else if (a.starts_with("-")) {
        return UsageError(name(), "unknown option '" + a + "'");
      } else {
        break;  // the command starts here (no "--")
      }
    }
    if (i >= args.size()) return UsageError(name(), "no command given (colabtrace run -- COMMAND)");
    const std::string shim = FindShim();
    if (shim.empty()) {
      std::cerr << "colabtrace run: cannot find libcolabtrace.so next to this program; set "
                   "COLABTRACE_SHIM=/path/to/libcolabtrace.so\n";
      return kExitUsage;
    }
    if (out_dir.empty()) out_dir = DefaultOutDir();
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (!fs::is_directory(out_dir, ec)) {
      std::cerr << "colabtrace run: cannot create " << out_dir << "\n";
      return kExitUsage;
    }
    const std::string abs_dir = fs::absolute(out_dir, ec).lexically_normal().string();
    std::string preload = shim;
    if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
      preload += ":" + std::string(old);
    }

    std::vector<char*> argv;
    for (size_t k = i; k < args.size(); ++k) argv.push_back(const_cast<char*>(args[k].c_str()));
    argv.push_back(nullptr);

    // Like a shell, let the terminal's Ctrl-C go to the command, and stay to summarize.
    struct sigaction ignore = {}, old_int = {}, old_quit = {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    const pid_t child = fork();
    if (child < 0) {
      std::cerr << "colabtrace run: fork failed: " << std::strerror(errno) << "\n";
      return kExitUsage;
    }
    if (child == 0) {
      sigaction(SIGINT, &old_int, nullptr);
      sigaction(SIGQUIT, &old_quit, nullptr);
      setenv("LD_PRELOAD", preload.c_str(), 1);
      setenv("COLABTRACE_OUT", (abs_dir + "/").c_str(), 1);
      setenv("COLABTRACE_PYTHON", "1", 0);  // the Python start-up hook (shim/python)
      execvp(argv[0], argv.data());
      std::cerr << "colabtrace run: cannot run " << argv[0] << ": " << std::strerror(errno) << "\n";
      _exit(127);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    PrintSummary(abs_dir);
    return code;
  }

 private:
  static void PrintSummary(const std::string& dir) {
    analyzer::TraceSet set = analyzer::LoadTraces({dir});
    if (set.traces.empty()) {
      std::cerr << "colabtrace: no traces were written to " << dir << "\n";
      return;
    }
    auto report = analyzer::BuildReport(set.traces, {});
    int errors = 0, warnings = 0;
    for (const auto& f : report->findings()) {
      errors += f.severity == analyzer::Severity::kError;
      warnings += f.severity == analyzer::Severity::kWarning;
    }
    std::cerr << "colabtrace: " << set.traces.size() << " process"
              << (set.traces.size() == 1 ? "" : "es") << " traced; " << errors << " error"
              << (errors == 1 ? "" : "s") << ", " << warnings << " warning"
              << (warnings == 1 ? "" : "s") << "\n";
    int shown = 0;
    for (const auto& f : report->findings()) {
      if (f.severity == analyzer::Severity::kInfo || ++shown > 8) continue;
      std::cerr << "  " << analyzer::SeverityName(f.severity) << " " << f.id << ": " << f.summary << "\n";
    }
    std::cerr << "colabtrace: full report: colabtrace report " << dir << "\n";
  }
};

}  // namespace

std::unique_ptr<Command> MakeRunCommand() { return std::make_unique<RunCommand>(); }

}  // namespace colabtrace::cli
