// The `colabtrace` command line: one Command per subcommand, each owning its flags.
//
// Exit codes (shared/PRODUCT.md): 0 fine; 1 a regression or findings at/above
// --fail-on; 2 a usage error or input that cannot be read.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/flag_reader.h"
#include "report/report.h"

namespace colabtrace::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitUsage = 2;

class Command {
 public:
  virtual ~Command() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;  // one line for `colabtrace --help`
  virtual std::string usage() const = 0;         // the full --help text
  // args excludes the program and subcommand names. Returns the exit code.
  virtual int Run(const std::vector<std::string>& args) = 0;
};

std::vector<std::unique_ptr<Command>> MakeCommands();

// The shim next to this program: the same directory, ../lib, or lib/ (COLABTRACE_SHIM
// overrides); "" when there is none.
std::string FindShim();

// `colabtrace --version [--verbose]` (version_command.cpp): the version and trace format;
// verbose adds the glibc floor and, for the CLI and the shim next to it, the libraries
// and glibc symbol versions they need. Returns 1 when one breaks the floor.
int PrintVersion(bool verbose);

// Prints "colabtrace <cmd>: <msg>" and a hint to stderr; returns kExitUsage.
int UsageError(std::string_view cmd, std::string_view msg);

// True if the arguments ask for help (-h or --help anywhere before "--").
bool WantsHelp(const std::vector<std::string>& args);

// True for a --gpu-arch value: sm_ and two or three digits, optionally 'a' or 'f'
// (sm_75, sm_90a, sm_100f). Every subcommand that takes --gpu-arch checks it with this
// and reports kGpuArchUsage otherwise.
bool IsGpuArch(std::string_view v);
inline constexpr std::string_view kGpuArchUsage =
    "--gpu-arch takes an architecture like sm_75, sm_80 or sm_90a";

// True for a --sysroot value: an existing directory. Every subcommand that takes
// --sysroot checks it with this and reports kSysrootUsage otherwise.
bool IsSysroot(const std::string& v);
inline constexpr std::string_view kSysrootUsage = "--sysroot takes an existing directory";
// --gpu-arch and --sysroot, taken the same way by every command that reads traces into
// a report (baseline, check, diff): when r is at one of them, reads its value into
// options and returns "" (taken) or the usage message of a bad value; nullopt when r is
// at neither.
std::optional<std::string_view> TakeReportFlag(analyzer::FlagReader& r, analyzer::ReportOptions& options);

// True when stdout/stderr is a terminal and NO_COLOR is unset.
bool UseColor(int fd);

// Writes text to path, or to stdout when path is empty or "-". False on failure (with
// the reason on stderr).
bool WriteOutput(const std::string& path, const std::string& text);

std::unique_ptr<Command> MakeRunCommand();
std::unique_ptr<Command> MakeReportCommand();
std::unique_ptr<Command> MakeDumpCommand();
// Further subcommands (export, baseline, check, diff) register through weak factories.
std::unique_ptr<Command> MakeExportCommand() __attribute__((weak));
std::unique_ptr<Command> MakeBaselineCommand() __attribute__((weak));
std::unique_ptr<Command> MakeCheckCommand() __attribute__((weak));
std::unique_ptr<Command> MakeDiffCommand() __attribute__((weak));
std::unique_ptr<Command> MakeKernelCommand() __attribute__((weak));

}  // namespace colabtrace::cli
