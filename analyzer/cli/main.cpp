// colabtrace: the offline analyzer's command line.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>

#include "cli/command.h"

namespace colabtrace::cli {

std::vector<std::unique_ptr<Command>> MakeCommands() {
  std::vector<std::unique_ptr<Command>> cmds;
  cmds.push_back(MakeRunCommand());
  cmds.push_back(MakeReportCommand());
  cmds.push_back(MakeDumpCommand());
  for (auto factory : {&MakeExportCommand, &MakeBaselineCommand, &MakeCheckCommand, &MakeDiffCommand,
                       &MakeKernelCommand}) {
    if (factory != nullptr) cmds.push_back(factory());
  }
  return cmds;
}

int UsageError(std::string_view cmd, std::string_view msg) {
  std::cerr << "colabtrace " << cmd << ": " << msg << "\n"
            << "Try 'colabtrace " << cmd << " --help'.\n";
  return kExitUsage;
}

bool WantsHelp(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--") return false;
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

bool IsGpuArch(std::string_view v) {
  static const std::regex kArch("sm_[0-9]{2,3}[af]?");
  return std::regex_match(v.begin(), v.end(), kArch);
}

bool IsSysroot(const std::string& v) {
  struct stat st;
  return !v.empty() && ::stat(v.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::optional<std::string_view> TakeReportFlag(analyzer::FlagReader& r, analyzer::ReportOptions& options) {
  if (r.Is("--gpu-arch")) {
    auto v = r.Value();
    if (!v || !IsGpuArch(*v)) return kGpuArchUsage;
    options.gpu_arch = *v;
    return "";
  }
  if (r.Is("--sysroot")) {
    auto v = r.Value();
    if (!v || !IsSysroot(*v)) return kSysrootUsage;
    options.sysroot = *v;
    return "";
  }
  return std::nullopt;
}

bool UseColor(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  return isatty(fd) && (no_color == nullptr || no_color[0] == '\0');
}

bool WriteOutput(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    // A full disk or a closed pipe under stdout: fwrite may fail at once (a large text
    // goes straight to write(2)) while the later fflush has nothing left to fail on, so
    // all three are checked; a report that was not written is an error, never exit 0.
    const bool wrote = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
    const bool flushed = std::fflush(stdout) == 0;
    if (wrote && flushed && !std::ferror(stdout)) return true;
    std::cerr << "colabtrace: cannot write to standard output: " << std::strerror(errno) << "\n";
    return false;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::cerr << "colabtrace: cannot write " << path << "\n";
    return false;
  }
  return true;
}

namespace {

void PrintTopHelp(const std::vector<std::unique_ptr<Command>>& cmds) {
  std::cout << "colabtrace: post-mortem diagnosis of GPU training runs\n\n"
               "Usage: colabtrace <command> [options]\n\nCommands:\n";
  for (const auto& c : cmds) {
    std::printf("  %-10s %s\n", std::string(c->name()).c_str(), std::string(c->summary()).c_str());
  }
  std::cout << "\nRun 'colabtrace <command> --help' for a command's options.\n"
               "Tracing without the CLI: LD_PRELOAD=/path/to/libcolabtrace.so python train.py\n";
}

}  // namespace
}  // namespace colabtrace::cli

int main(int argc, char** argv) {
  using namespace colabtrace::cli;
  // `colabtrace run`'s check that the shim loads (run_command.cpp, ShimLoadProblem): run
  // starts this program with the shim preloaded (recording nothing) and this variable set.
  if (std::getenv("COLABTRACE_SHIM_PROBE") != nullptr) {
    return dlsym(RTLD_DEFAULT, "colabtrace_trace_path") != nullptr ? 0 : 3;
  }
  auto cmds = MakeCommands();
  if (argc < 2) {
    PrintTopHelp(cmds);
    return kExitUsage;
  }
  const std::string sub = argv[1];
  if (sub == "-h" || sub == "--help" || sub == "help") {
    PrintTopHelp(cmds);
    return kExitOk;
  }
  if (sub == "--version") {
    const bool verbose = argc > 2 && (std::strcmp(argv[2], "--verbose") == 0 || std::strcmp(argv[2], "-v") == 0);
    return PrintVersion(verbose);
  }
  for (auto& c : cmds) {
    if (c->name() != sub) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
    if (WantsHelp(args)) {
      std::cout << c->usage();
      return kExitOk;
    }
    return c->Run(args);
  }
  std::cerr << "colabtrace: unknown command '" << sub << "'\n";
  PrintTopHelp(cmds);
  return kExitUsage;
}
