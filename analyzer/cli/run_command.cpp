// colabtrace run: trace a command (sets LD_PRELOAD), sample its process tree from
// outside into colabtrace.run.<pid>.ctrace (see cli/run_sampler.h), record its exact exit
// status, and print a short summary. With --hang-timeout, end a job that stopped making
// progress, after recording what every thread of it was doing (cli/hang_watch.h).
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "cli/hang_watch.h"
#include "cli/job_cap.h"
#include "core/format.h"
#include "model/process_facts.h"
#include "cli/run_sampler.h"
#include "colabtrace/format/wire.h"
#include "render/render.h"
#include "report/report.h"

namespace colabtrace::cli {
namespace {

namespace fs = std::filesystem;

// One diagnostic line, written to stderr with a single write(2) when the statement ends.
// The traced children share our stderr and print their own lines while we run; std::cerr
// is unit-buffered and writes each `<<` separately, so its pieces would interleave.
class ErrLine {
 public:
  ErrLine() = default;
  ErrLine(const ErrLine&) = delete;
  ErrLine& operator=(const ErrLine&) = delete;
  ~ErrLine() {
    const std::string s = os_.str();
    size_t done = 0;
    while (done < s.size()) {
      const ssize_t n = ::write(STDERR_FILENO, s.data() + done, s.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }
  template <typename T>
  ErrLine& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  std::ostringstream os_;
};

// Why the shim would not load in the command's processes, or "" when it loads. A shim
// the dynamic loader cannot load leaves every process of the job untraced (a missing
// library: the loader skips it with one line on stderr, and the user finds an empty
// folder) or unable to start (a symbol version this glibc lacks is fatal to every
// program that preloads it). So run first starts itself with the shim preloaded,
// recording nothing (COLABTRACE_DISABLE=1), and asks whether it is there (main.cpp,
// COLABTRACE_SHIM_PROBE); what the loader printed is the reason.
std::string ShimLoadProblem(const std::string& shim) {
  // By its own path, not /proc/self/exe: a tracer of run (strace, the audits) then sees
  // run's own program, not an unknown one.
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec || self.empty()) return {};
  int err[2];
  if (pipe2(err, O_CLOEXEC) != 0) return {};
  const pid_t pid = fork();
  if (pid < 0) {
    close(err[0]);
    close(err[1]);
    return {};
  }
  if (pid == 0) {
    dup2(err[1], STDERR_FILENO);
    if (const int null = open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0) dup2(null, STDOUT_FILENO);
    setenv("LD_PRELOAD", shim.c_str(), 1);
    setenv("COLABTRACE_DISABLE", "1", 1);
    setenv("COLABTRACE_SHIM_PROBE", "1", 1);
    execl(self.c_str(), "colabtrace", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(err[1]);
  std::string said;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(err[0], buf, sizeof(buf));
    if (n > 0) {
      said.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && said.empty()) return {};  // no probe: run as before
  while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) said.pop_back();
  if (said.empty()) said = "it was not in the process, and the loader said nothing";
  // "version `GLIBC_2.35' not found": the version it needs, against the glibc found.
  std::string needs;
  if (const size_t at = said.find("version `GLIBC_"); at != std::string::npos) {
    const size_t end = said.find('\'', at + 9);
    if (end != std::string::npos) needs = said.substr(at + 9, end - at - 9);
  }
  std::string why;  // the loader's lines, each indented
  for (size_t at = 0; at <= said.size();) {
    const size_t nl = std::min(said.find('\n', at), said.size());
    why += "  " + analyzer::EscapeForTerminal(std::string_view(said).substr(at, nl - at)) + "\n";
    at = nl + 1;
  }
  if (!needs.empty()) {
    why += "the shim needs " + needs + "; this machine's glibc is " + gnu_get_libc_version();
  } else {
    why += "(this machine's glibc is " + std::string(gnu_get_libc_version()) + ")";
  }
  return why;
}

// ---- signals sent to `colabtrace run` itself ------------------------------------------
// A signal that asks the job to stop or to act (SIGTERM, SIGHUP, SIGUSR1, SIGUSR2), sent
// to `colabtrace run` by a process outside the command's process group, is passed on to
// the command, and run stays to record how it ends, as a container's init does (tini):
// `docker stop` and Kubernetes signal PID 1 only, and `kill PID` from another terminal
// meant the job. From inside the command's group (a script or harness that started run,
// `timeout`, which signals run and then the whole group) run cannot tell a signal meant
// for it alone from one the whole group got, so it ends by the signal as before, and the
// command gets what was sent to it; so does one from the kernel (a terminal hang-up goes
// to the whole foreground group). Ctrl-C and Ctrl-\ reach the command
// from the terminal; run ignores them (see Run). A group signal from outside the group
// (a shell's `kill %1`) reaches the command twice: directly and passed on.
constexpr int kForwardedSignals[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
volatile pid_t g_forward_to = 0;

void ForwardSignal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  const pid_t child = g_forward_to;
  const bool from_kernel = info != nullptr && info->si_code == SI_KERNEL;
  // si_pid is 0 for a sender in an ancestor pid namespace (docker stop): outside.
  const bool from_job_group = info != nullptr && info->si_pid > 0 && getpgid(info->si_pid) == getpgid(child);
  if (child > 0 && !from_kernel && !from_job_group) {
    kill(child, sig);
  } else {
    // What run did without a handler: end by the signal (it is delivered again, with the
    // default action, when this handler returns).
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
    kill(getpid(), sig);
  }
  errno = saved_errno;
}

// Installs ForwardSignal for kForwardedSignals (but not for one run was started with
// ignored: the command inherited that too) and restores the old dispositions when it goes.
class SignalForwarding {
 public:
  explicit SignalForwarding(pid_t child) {
    g_forward_to = child;
    for (size_t k = 0; k < std::size(kForwardedSignals); ++k) {
      struct sigaction act = {};
      act.sa_sigaction = ForwardSignal;
      act.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&act.sa_mask);
      sigaction(kForwardedSignals[k], nullptr, &old_[k]);
      if (old_[k].sa_handler != SIG_IGN) sigaction(kForwardedSignals[k], &act, nullptr);
    }
  }
  ~SignalForwarding() {
    for (size_t k = 0; k < std::size(kForwardedSignals); ++k) {
      if (old_[k].sa_handler != SIG_IGN) sigaction(kForwardedSignals[k], &old_[k], nullptr);
    }
    g_forward_to = 0;
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

 private:
  struct sigaction old_[std::size(kForwardedSignals)] = {};
};

// The exit status of a job `colabtrace run --hang-timeout` ended for a hang, as timeout(1)'s.
constexpr int kExitHang = 124;
// While --hang-timeout is on, run wakes at least this often to read the job's progress.
constexpr uint64_t kHangCheckMs = 250;
// How often run checks the job's traces against COLABTRACE_JOB_MAX_MB (cli/job_cap.h): at
// the first sampling round after this much time (every round when rounds are further
// apart), or on its own when sampling is off.
constexpr uint64_t kJobCheckMs = 1000;
// After SIGTERM, how long the job gets to end before SIGKILL; then how long run waits for
// the killed to go (one blocked in an uninterruptible read may never go).
constexpr uint64_t kHangGraceNs = 5'000'000'000ull;
constexpr uint64_t kHangReapNs = 3'000'000'000ull;

// A --hang-timeout value: seconds, decimals allowed, above 0 (at most 30 days). nullopt
// for anything else.
std::optional<double> ParseHangTimeout(const std::string& text) {
  if (text.empty() || text[0] == '-' || text[0] == '+' || std::isspace(static_cast<unsigned char>(text[0]))) {
    return std::nullopt;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0 || v > 30 * 86400.0) {
    return std::nullopt;
  }
  return v;
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
    return "Usage: colabtrace run [-o DIR] [--hang-timeout S] [--cupti] -- COMMAND [ARGS...]\n\n"
           "Runs COMMAND with libcolabtrace.so preloaded (one trace per process, in DIR),\n"
           "then prints a short summary on stderr. Exits with COMMAND's exit code (128+N\n"
           "when it died of signal N), or 124 when --hang-timeout ended it. SIGTERM,\n"
           "SIGHUP, SIGUSR1 and SIGUSR2 sent to run from outside its process group (docker\n"
           "stop, kill PID from another terminal) are passed on to COMMAND, and run waits\n"
           "for it.\n\n"
           "Options:\n"
           "  -o, --output DIR     where traces go (default: ./colabtrace-YYYYMMDD-HHMMSS)\n"
           "      --hang-timeout S when the job has made no progress for S seconds (no step\n"
           "                       of any traced process; before the first step, counted\n"
           "                       from its start), record every thread's state (its\n"
           "                       Python stack, read from outside, its system call) into\n"
           "                       DIR/colabtrace.run.<pid>.ctrace, print one line, and end\n"
           "                       the job: SIGTERM to all its processes, SIGKILL 5 s later;\n"
           "                       exit status 124. A process that no signal ends (blocked\n"
           "                       on a FUSE mount that stopped answering) is named and\n"
           "                       left behind. Decimals allowed (0.5)\n"
           "      --cupti          also subscribe to CUPTI (sets COLABTRACE_CUPTI=1; off by\n"
           "                       default until validated on a GPU)\n"
           "  -h, --help           show this help\n\n"
           "The shim is found next to this program (or in ../lib); COLABTRACE_SHIM overrides.\n"
           "Other COLABTRACE_* variables (STACKS, IO, SAMPLE_MS, VERBOSE) pass through.\n"
           "While COMMAND runs, every process of its tree is sampled from outside every\n"
           "COLABTRACE_SAMPLE_MS (default 100; 0: off) ms: RSS, CPU, swap, cgroup memory and\n"
           "OOM kills, into DIR/colabtrace.run.<pid>.ctrace. PSS and private memory (USS) are\n"
           "read as their cost allows: each read walks the process's pages under its mmap\n"
           "lock, so a process is read at most 2% of its time; the sampling, reads included,\n"
           "takes at most 1% of a core; each process is read at least every 30 s where that\n"
           "fits, and while the tree's summed RSS is over 90% of the limit as often as the\n"
           "lock allows. COLABTRACE_PSS_MS=N reads every process's PSS every N ms instead.\n";
  }

  int Run(const std::vector<std::string>& args) override {
    std::string out_dir;
    bool cupti = false;
    std::optional<double> hang_timeout;
    std::string hang_text;  // as given
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
      } else if (a == "--hang-timeout" || a.starts_with("--hang-timeout=")) {
        if (a == "--hang-timeout") {
          if (i + 1 >= args.size()) return UsageError(name(), "--hang-timeout needs a number of seconds");
          hang_text = args[++i];
        } else {
          hang_text = a.substr(std::strlen("--hang-timeout="));
        }
        hang_timeout = ParseHangTimeout(hang_text);
        if (!hang_timeout) {
          return UsageError(name(), "--hang-timeout takes a number of seconds above 0 (like 600 or 2.5), not '" +
                                        hang_text + "'");
        }
      } else if (a == "--cupti") {
        cupti = true;
      } else if (a.starts_with("-")) {
        return UsageError(name(), "unknown option '" + a + "'");
      } else {
        break;  // the command starts here (no "--")
      }
    }
    if (i >= args.size()) return UsageError(name(), "no command given (colabtrace run -- COMMAND)");
    const std::string shim = FindShim();
    if (shim.empty()) {
      ErrLine() << "colabtrace run: cannot find libcolabtrace.so next to this program; set "
                   "COLABTRACE_SHIM=/path/to/libcolabtrace.so\n";
      return kExitUsage;
    }
    if (const std::string problem = ShimLoadProblem(shim); !problem.empty()) {
      ErrLine() << "colabtrace run: " << shim
                << " does not load here, so no process of the command would be traced; the "
                   "command was not started. The loader said:\n"
                << problem << "\n";
      return kExitUsage;
    }
    if (out_dir.empty()) out_dir = DefaultOutDir();
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (!fs::is_directory(out_dir, ec)) {
      ErrLine() << "colabtrace run: cannot create " << out_dir << "\n";
      return kExitUsage;
    }
    const std::string abs_dir = fs::absolute(out_dir, ec).lexically_normal().string();
    // The job cap: settings, and the traces already there (an earlier job's), before the
    // command can write one.
    const JobCapSettings cap =
        JobCapSettings::From(std::getenv("COLABTRACE_JOB_MAX_MB"), std::getenv("COLABTRACE_MAX_MB"));
    for (const std::string& w : cap.warnings) ErrLine() << w << "\n";
    job_.emplace(abs_dir, cap, RunTraceWriter::PathFor(abs_dir));
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
    // Orphans of the tree become our children, so they stay in the sampled tree and their
    // wait status is known too.
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    // The forwarded signals wait, blocked, until their forwarder knows the child: one sent
    // meanwhile is passed on, not lost with run.
    sigset_t forwarded, old_mask;
    sigemptyset(&forwarded);
    for (int sig : kForwardedSignals) sigaddset(&forwarded, sig);
    sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
    start_ns_ = NowMonotonicNs();  // before the command can write a trace
    const pid_t child = fork();
    if (child < 0) {
      sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      ErrLine() << "colabtrace run: fork failed: " << std::strerror(errno) << "\n";
      return kExitUsage;
    }
    if (child == 0) {
      sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      sigaction(SIGINT, &old_int, nullptr);
      sigaction(SIGQUIT, &old_quit, nullptr);
      setenv("LD_PRELOAD", preload.c_str(), 1);
      setenv("COLABTRACE_OUT", (abs_dir + "/").c_str(), 1);
      setenv("COLABTRACE_PYTHON", "1", 0);  // the Python start-up hook (shim/python)
      setenv("COLABTRACE_MAX_MB", std::to_string(cap.process_max_mb).c_str(), 1);
      if (cupti) setenv("COLABTRACE_CUPTI", "1", 1);
      execvp(argv[0], argv.data());
      ErrLine() << "colabtrace run: cannot run " << argv[0] << ": " << std::strerror(errno) << "\n";
      _exit(127);
    }
    int status = 0;
    if (hang_timeout) {
      hang_ = HangSettings{static_cast<uint64_t>(std::llround(*hang_timeout * 1e9)), hang_text};
    }
    {
      SignalForwarding forwarding(child);
      sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      status = Supervise(child, abs_dir, args);
    }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    const int code = ended_for_hang_                    ? kExitHang
                     : WIFEXITED(status) ? WEXITSTATUS(status)
                                         : 128 + WTERMSIG(status);
    if (WIFSIGNALED(status) && !ended_for_hang_) {
      ErrLine() << "colabtrace: the command was killed by " << analyzer::SignalName(WTERMSIG(status))
                << "\n";
    }
    ReportUnwrittenTraces(abs_dir);
    PrintSummary(abs_dir);
    return code;
  }

 private:
  // A number from the environment variable `name` (lo-hi): unset or empty gives
  // `fallback`; a bad value prints one line saying it is not `what` and that
  // `fallback_text` is used instead, and gives `fallback`.
  static uint64_t NumberFromEnv(const char* name, uint64_t lo, uint64_t hi, uint64_t fallback, const std::string& what,
                                const std::string& fallback_text) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || n < lo || n > hi || *v == '-') {
      ErrLine() << "colabtrace run: " << name << "=" << v << " is not " << what << "; " << fallback_text << "\n";
      return fallback;
    }
    return n;
  }

  // A period in milliseconds from the environment variable `name` (0-3600000).
  static uint64_t PeriodMsFromEnv(const char* name, uint64_t fallback, const std::string& fallback_text) {
    return NumberFromEnv(name, 0, 3600000, fallback, "a period in milliseconds (0-3600000)", fallback_text);
  }

  // The window of run's own samples, as the shim reads it (shim/config.cpp): 600 s or
  // 256 MiB unless COLABTRACE_WINDOW_S or COLABTRACE_WINDOW_MB says otherwise.
  static void SetWindowFromEnv(RunTraceWriter& out) {
    const uint64_t s = NumberFromEnv("COLABTRACE_WINDOW_S", 1, 30 * 86400, 600, "seconds from 1 to 2592000", "using 600");
    const uint64_t mb = NumberFromEnv("COLABTRACE_WINDOW_MB", 1, 4096, 256, "MiB from 1 to 4096", "using 256");
    out.SetWindow(mb << 20, s * 1000000000ull);
  }

  // The sampling period: COLABTRACE_SAMPLE_MS, as the shim reads it. 0 turns sampling
  // off; exit statuses are still recorded.
  static uint64_t SamplePeriodMs() { return PeriodMsFromEnv("COLABTRACE_SAMPLE_MS", 100, "using 100"); }

  // COLABTRACE_PSS_MS: a fixed period for the PSS reads (unset or 0: their cost budget).
  static uint64_t PssPeriodMs() {
    return PeriodMsFromEnv("COLABTRACE_PSS_MS", 0, "PSS is read as its cost budget allows");
  }

  static std::string ReadLine(const char* path) {
    std::string s;
    if (std::FILE* f = std::fopen(path, "r")) {
      char buf[256];
      if (std::fgets(buf, sizeof(buf), f) != nullptr) s = buf;
      std::fclose(f);
    }
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }

  // The wrapper's own identity: which machine (the analyzer keys hosts by hostname and
  // boot_id), what it ran, and the host's memory.
  static void WriteFingerprint(RunTraceWriter& out, pid_t child, uint64_t period_ms, uint64_t pss_ms,
                               const std::vector<std::string>& args) {
    const uint64_t ts = out.last_ts();
    format::RunInfo info;
    info.ts = ts;
    info.child_pid = static_cast<uint64_t>(child);
    info.sample_ms = period_ms;
    info.pss_ms = pss_ms;
    out.Append(info);
    format::ProcessStart ps;
    ps.ts = ts;
    ps.pid = static_cast<uint64_t>(getpid());
    ps.ppid = static_cast<uint64_t>(getppid());
    std::error_code ec;
    ps.exe = out.Intern(fs::read_symlink("/proc/self/exe", ec).string());
    ps.cwd = out.Intern(fs::current_path(ec).string());
    out.Append(ps);
    std::vector<std::string> argv = {"colabtrace", "run"};
    argv.insert(argv.end(), args.begin(), args.end());
    for (size_t k = 0; k < argv.size(); ++k) {
      format::Argv a;
      a.ts = ts;
      a.index = k;
      a.value = out.Intern(argv[k]);
      out.Append(a);
    }
    auto info_rec = [&](const char* key, const std::string& value) {
      if (value.empty()) return;
      format::HostInfo h;
      h.ts = ts;
      h.key = out.Intern(key);
      h.value = out.Intern(value);
      out.Append(h);
    };
    struct utsname u;
    if (uname(&u) == 0) info_rec("hostname", u.nodename);
    info_rec("boot_id", ReadLine("/proc/sys/kernel/random/boot_id"));
    info_rec("machine_id", ReadLine("/etc/machine-id"));
    auto num = [&](const char* key, uint64_t value) {
      format::HostNum h;
      h.ts = ts;
      h.key = out.Intern(key);
      h.value = value;
      out.Append(h);
    };
    std::string meminfo;
    if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
      char line[256];
      while (std::fgets(line, sizeof(line), f) != nullptr) {
        unsigned long long kb = 0;
        if (std::sscanf(line, "MemTotal: %llu kB", &kb) == 1) num("mem_total", kb * 1024);
      }
      std::fclose(f);
    }
    num("page_size", static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
    out.Flush();
  }

  // Waits for the command, sampling its tree every period; records every child it reaps
  // (the command, and orphans of its tree handed to us as subreaper). With --hang-timeout,
  // reads the job's progress (at least every kHangCheckMs) and ends a job that hung
  // (EndForHang). Returns the command's wait status (0 when it could not be reaped: a hung
  // job's command that no signal ended).
  int Supervise(pid_t child, const std::string& dir, const std::vector<std::string>& args) {
    const uint64_t period_ms = SamplePeriodMs();
    RunTraceWriter out(dir);
    if (!out.ok()) {
      ErrLine() << "colabtrace run: cannot write its own trace " << out.path() << ": "
                << out.error() << "; the command runs on without outside samples\n";
    }
    const uint64_t pss_ms = PssPeriodMs();
    SetWindowFromEnv(out);
    WriteFingerprint(out, child, period_ms, pss_ms, args);
    TreeSampler sampler(out, getpid(), pss_ms * 1000000ull);
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
    int status = 0;
    bool done = false;
    // Records one ended child's wait status.
    auto reap_one = [&out](pid_t r, int st) {
      format::WaitStatus w;
      w.ts = NowMonotonicNs();
      w.pid = r;
      w.status = static_cast<uint32_t>(st);
      w.api = static_cast<uint64_t>(format::WaitApi::kRun);
      out.Append(w);
    };
    auto reap = [&](int options) {
      for (;;) {
        int st = 0;
        const pid_t r = waitpid(-1, &st, options);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return;
        if (!WIFEXITED(st) && !WIFSIGNALED(st)) continue;
        reap_one(r, st);
        if (r == child) {
          status = st;
          done = true;
          return;
        }
      }
    };
    std::optional<HangWatch> watch;
    if (hang_) watch.emplace(dir, getpid(), hang_->timeout_ns, start_ns_);
    uint64_t next_sample_ns = 0, next_job_ns = 0;
    bool hung = false;
    while (!done) {
      uint64_t now = NowMonotonicNs();
      // The job's traces are listed before the round learns which processes run.
      const bool job_due = now >= next_job_ns && (period_ms == 0 || now >= next_sample_ns);
      const std::vector<std::string> listed = job_due ? job_->List() : std::vector<std::string>();
      if (period_ms != 0 && now >= next_sample_ns) {
        sampler.SampleRound();
        next_sample_ns = now + period_ms * 1000000ull;
      }
      if (job_due) {
        CheckJob(listed, period_ms != 0 ? sampler.running() : RunningNow(), out, false);
        next_job_ns = now + kJobCheckMs * 1000000ull;
      }
      now = NowMonotonicNs();
      if (watch && watch->Hung(now)) {
        hung = true;
        break;
      }
      // Until the next sample (without sampling: the next job check), or the next progress
      // check.
      uint64_t wait_ms = period_ms == 0 ? (next_job_ns - std::min(now, next_job_ns)) / 1000000
                                        : (next_sample_ns - std::min(now, next_sample_ns)) / 1000000;
      if (watch) wait_ms = std::min(wait_ms, kHangCheckMs);
      wait_ms = std::max<uint64_t>(wait_ms, 1);
      if (pidfd >= 0) {
        pollfd pfd = {pidfd, POLLIN, 0};
        poll(&pfd, 1, static_cast<int>(wait_ms));
      } else {
        timespec ts = {static_cast<time_t>(wait_ms / 1000), static_cast<long>((wait_ms % 1000) * 1000000)};
        nanosleep(&ts, nullptr);
      }
      reap(WNOHANG);
    }
    bool holdouts = false;
    if (hung) {
      holdouts = !EndForHang(*watch, out, [&] { reap(WNOHANG); }).empty();
      ended_for_hang_ = true;
    }
    if (pidfd >= 0) close(pidfd);
    if (!hung) AwaitOrphans(reap_one);
    // One last round after the end: a surviving process's (or the cgroup's) oom_kill
    // count after a death is the evidence proc.killed cites. Not while a process is left
    // blocked in the kernel: reading its memory map could block run with it.
    if (period_ms != 0 && !holdouts) sampler.SampleRound();
    const std::vector<std::string> listed = job_->List();
    CheckJob(listed, RunningNow(), out, true);
    out.Finish();
    if (!out.error().empty()) {
      ErrLine() << "colabtrace run: its own trace " << out.path()
                << " is incomplete: " << out.error() << "\n";
    }
    shim_pids_ = sampler.shim_pids();
    return status;
  }

  // The job hung: records every thread's state (HangWatch::RecordThreads), says so in one
  // line, and ends the job (EndTree), naming the processes that no signal ended. Returns
  // those.
  std::vector<Holdout> EndForHang(HangWatch& watch, RunTraceWriter& out, const std::function<void()>& reap) {
    const uint64_t now = NowMonotonicNs();
    const HangWatch::Recorded rec = watch.RecordThreads(out, now);
    const double idle_s = static_cast<double>(now - std::min(now, watch.progress_ns())) / 1e9;
    char idle[32];
    std::snprintf(idle, sizeof(idle), "%.1f", idle_s);
    std::string since;
    if (watch.steps() > 0) {
      // The last step's wall-clock time, from the monotonic clock's distance to it.
      timespec real;
      clock_gettime(CLOCK_REALTIME, &real);
      const time_t at = real.tv_sec - static_cast<time_t>(std::llround(idle_s));
      struct tm tm;
      localtime_r(&at, &tm);
      char hms[16];
      std::strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
      since = std::to_string(watch.steps()) + (watch.steps() == 1 ? " step" : " steps") + ", the last at " + hms;
    } else {
      since = "no step since the job started";
    }
    ErrLine() << "colabtrace: no progress for " << idle << " s (" << since << "; --hang-timeout "
              << hang_->text << "): recorded the state of " << rec.threads << " thread"
              << (rec.threads == 1 ? "" : "s") << " in " << rec.processes << " process"
              << (rec.processes == 1 ? "" : "es") << ", ending the job\n";
    std::vector<Holdout> left = EndTree(getpid(), kHangGraceNs, kHangReapNs, reap);
    for (const Holdout& h : left) {
      ErrLine line;
      line << "colabtrace: pid " << h.pid << " (" << h.comm << ") did not end: ";
      if (h.state == 'D') {
        line << "blocked in uninterruptible state (D); its FUSE daemon or network filesystem may have "
                "stopped answering";
      } else {
        line << "still there after SIGKILL (state " << h.state << ")";
      }
      line << "; colabtrace run exits without it\n";
    }
    return left;
  }

  // The command has ended, but processes it started may still be finishing: CPython's
  // multiprocessing resource tracker exits only when it sees the command's end, a
  // worker may be flushing its output. They are our children now (subreaper), so wait
  // for them, reaping each (its wait status recorded), for at most kOrphanGraceMs: their
  // traces are then whole when the summary reads them, instead of ending without an exit
  // record (which reads as killed). A process still running after that is named, and
  // left running: run's job is to watch the command, not to end what it started.
  template <class ReapOne> void AwaitOrphans(ReapOne&& reap_one) {
    constexpr uint64_t kOrphanGraceMs = 2000;
    const uint64_t deadline = NowMonotonicNs() + kOrphanGraceMs * 1000000ull;
    for (;;) {
      int st = 0;
      const pid_t r = waitpid(-1, &st, WNOHANG);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return;  // ECHILD: the whole tree has ended
      if (r > 0) {
        if (WIFEXITED(st) || WIFSIGNALED(st)) reap_one(r, st);
        continue;
      }
      if (NowMonotonicNs() >= deadline) break;
      timespec ts = {0, 5 * 1000000};
      nanosleep(&ts, nullptr);
    }
    std::string left;
    for (const TreeProcess& p : DescendantsOf(getpid())) left += " " + std::to_string(p.pid);
    ErrLine() << "colabtrace: processes the command started were still running " << kOrphanGraceMs
              << " ms after it ended (pids" << (left.empty() ? " unknown" : left)
              << "); their traces end where the summary read them (still running)\n";
  }

  // One check of the job cap (cli/job_cap.h); says what it has to say on stderr.
  void CheckJob(const std::vector<std::string>& listed, const std::set<pid_t>& running, RunTraceWriter& out,
                bool last) {
    const JobCap::Outcome o = job_->Check(listed, running, out, last);
    for (const std::string& line : o.say) ErrLine() << line << "\n";
  }

  // The processes of run's tree running now (zombies left out).
  static std::set<pid_t> RunningNow() {
    std::set<pid_t> running;
    for (const TreeProcess& p : DescendantsOf(getpid())) {
      if (!p.ended()) running.insert(p.pid);
    }
    return running;
  }

  static uint64_t NowMonotonicNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  }

  // Says, for each process that had the shim loaded, when it could not write its trace:
  // no trace at all (an unwritable or full directory), or a trace cut short.
  void ReportUnwrittenTraces(const std::string& dir) const {
    std::map<uint32_t, std::string> traces;  // pid -> file
    std::map<uint32_t, uint32_t> truncated;  // pid -> errno
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() != ".ctrace") continue;
      std::FILE* f = std::fopen(e.path().c_str(), "rb");
      if (f == nullptr) continue;
      format::FileHeader h = {};
      const bool whole = std::fread(&h, sizeof(h), 1, f) == 1;
      std::fclose(f);
      if (!whole || !format::HasValidMagic(h)) continue;
      traces[h.pid] = e.path().filename().string();
      if (h.flags & format::kFlagTruncated) truncated[h.pid] = h.truncation_errno;
    }
    struct statvfs sv = {};
    const bool have_space = statvfs(dir.c_str(), &sv) == 0;
    const uint64_t free_bytes = have_space ? static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize : 0;
    for (const auto& [pid, comm] : shim_pids_) {
      if (traces.contains(static_cast<uint32_t>(pid))) continue;
      ErrLine line;
      line << "colabtrace: pid " << pid << " (" << comm
           << ") loaded the shim but could not write its trace to " << dir;
      if (have_space) line << " (" << analyzer::FormatBytes(free_bytes) << " free there)";
      line << "\n";
    }
    for (const auto& [pid, err] : truncated) {
      ErrLine() << "colabtrace: pid " << pid << " could not write all of its trace "
                << traces[pid] << ": tracing stopped early (" << std::strerror(static_cast<int>(err))
                << ")\n";
    }
  }

  std::map<pid_t, std::string> shim_pids_;
  struct HangSettings {
    uint64_t timeout_ns = 0;
    std::string text;  // the value as given
  };
  std::optional<HangSettings> hang_;
  uint64_t start_ns_ = 0;  // CLOCK_MONOTONIC when the command was started
  bool ended_for_hang_ = false;
  std::optional<JobCap> job_;

  static void PrintSummary(const std::string& dir) {
    analyzer::TraceSet set = analyzer::LoadTraces({dir});
    for (const std::string& e : set.errors) ErrLine() << "colabtrace: " << e << "\n";
    size_t jobs = 0;
    for (const auto& t : set.traces) jobs += !analyzer::IsRunWrapper(t);
    if (jobs == 0) {
      ErrLine() << "colabtrace: no process of the command wrote a trace to " << dir << "\n";
      return;
    }
    auto report = analyzer::BuildReport(set.traces, {});
    int errors = 0, warnings = 0;
    for (const auto& f : report->findings()) {
      errors += f.severity == analyzer::Severity::kError;
      warnings += f.severity == analyzer::Severity::kWarning;
    }
    ErrLine() << "colabtrace: " << jobs << " process" << (jobs == 1 ? "" : "es") << " traced; " << errors << " error"
              << (errors == 1 ? "" : "s") << ", " << warnings << " warning"
              << (warnings == 1 ? "" : "s") << "\n";
    int shown = 0;
    for (const auto& f : report->findings()) {
      if (f.severity == analyzer::Severity::kInfo || ++shown > 8) continue;
      ErrLine() << "  " << analyzer::SeverityName(f.severity) << " " << f.id << ": " << f.summary << "\n";
    }
    ErrLine() << "colabtrace: full report: colabtrace report " << dir << "\n";
  }
};

}  // namespace

std::unique_ptr<Command> MakeRunCommand() { return std::make_unique<RunCommand>(); }

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

}  // namespace colabtrace::cli
