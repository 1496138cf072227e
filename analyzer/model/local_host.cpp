#include "model/local_host.h"

#include "model/proc_stat.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace colabtrace::analyzer {
namespace {

std::string ReadId(const char* path) {
  std::string s;
  if (std::FILE* f = std::fopen(path, "re")) {
    char buf[128];
    const size_t n = std::fread(buf, 1, sizeof(buf), f);
    std::fclose(f);
    s.assign(buf, n);
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::string HostOrigin::DiskChecksLabel() const {
  return same_host ? std::string() : "skipped: trace from another host (" + why + " differs)";
}

const LocalHost& LocalHost::Get() {
  static const LocalHost kLocal = [] {
    LocalHost h;
    if (const char* id = std::getenv("COLABTRACE_ANALYZER_HOST_ID"); id != nullptr && *id != '\0') {
      h.boot_id = h.machine_id = id;  // test-only: pretend to be another machine
    } else {
      h.boot_id = ReadId("/proc/sys/kernel/random/boot_id");
      h.machine_id = ReadId("/etc/machine-id");
    }
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) == 0) h.hostname = name;
    return h;
  }();
  return kLocal;
}

HostOrigin HostOriginOf(const ProcessTrace& t, const LocalHost& local) {
  std::string boot_id, machine_id, hostname;
  for (const auto& h : t.records.HostInfo) {
    const std::string_view key = t.Str(h.key);
    if (key == "boot_id") boot_id = std::string(t.Str(h.value));
    if (key == "machine_id") machine_id = std::string(t.Str(h.value));
    if (key == "hostname") hostname = std::string(t.Str(h.value));
  }
  HostOrigin o;
  // A different boot of the same machine may have different files too (an upgrade and
  // a reboot), so the boot id decides when both sides have it.
  if (!boot_id.empty() && !local.boot_id.empty()) {
    if (boot_id != local.boot_id) o = {false, "boot_id"};
  } else if (!machine_id.empty() && !local.machine_id.empty()) {
    if (machine_id != local.machine_id) o = {false, "machine_id"};
  } else if (!hostname.empty() && !local.hostname.empty() && hostname != local.hostname) {
    o = {false, "hostname"};
  }
  return o;
}

bool StillRunningHere(const ProcessTrace& t, const LocalHost& local) {
  if (!HostOriginOf(t, local).same_host) return false;
  const std::optional<ProcStat> st = ReadProcStat(static_cast<pid_t>(t.pid()));
  const long hz = sysconf(_SC_CLK_TCK);
  if (!st || st->ended() || hz <= 0) return false;
  // Dying already: a report made just after a kill, before the process got the CPU to
  // exit, would call it running (timeout -s KILL on a loaded machine).
  if (st->exiting() || SigkillPending(static_cast<pid_t>(t.pid()))) return false;
  // starttime is in clock ticks since boot; allow one tick and a little for rounding.
  const uint64_t tick_ns = 1000000000ull / static_cast<uint64_t>(hz);
  return st->start_ticks * tick_ns <= t.start_ns() + 2 * tick_ns;
}

}  // namespace colabtrace::analyzer
