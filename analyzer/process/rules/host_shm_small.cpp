// host.shm-small (warning)
//
// Rule: /dev/shm is too small for the processes that use it: a write there failed with
// ENOSPC or a process died of SIGBUS in a /dev/shm mapping with the tmpfs full (not past
// a truncated file's end); or, without a failure, it is under 256 MiB and at least two
// processes put at least half its size through it (written or mapped, over the run).
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <map>
#include <set>

#include "process/rules/rules.h"

namespace colabtrace::analyzer::rules {

namespace {

void HostShmSmallOf(RuleContext& ctx, const HostMembers& h) {
  const std::string& host = h.host;
  const std::vector<const ProcessTrace*>& members = h.members;
  const bool multi_host = h.multi_host;
  uint64_t shm_size = UINT64_MAX;
  std::set<uint32_t> shm_users;
  std::vector<std::string> failures;
  uint64_t shm_bytes = 0;  // written to or mapped from /dev/shm files
  for (const ProcessTrace* tp : members) {
    const ProcessTrace& t = *tp;
    const ProcessFacts& f = ctx.run().facts(t);
    shm_size = std::min(shm_size, f.shm_size);
    // Descriptors open on /dev/shm files, by the time they were opened.
    std::map<int64_t, uint64_t> shm_fds;
    for (const auto& o : t.records.IoOpen) {
      if (t.Str(o.path).starts_with("/dev/shm/")) {
        shm_users.insert(t.pid());
        if (o.fd >= 0) shm_fds[o.fd] = o.ts;
      }
    }
    for (const auto& s : t.records.Signal) {
      if (s.signo == SIGBUS && !t.Str(s.shm_mapping).empty() &&
          ShmBusCauseOf(s) != ShmBusCause::kPastEnd) {  // a truncated file: not a size problem
        failures.push_back("pid " + std::to_string(t.pid()) + ": SIGBUS in " +
                           std::string(t.Str(s.shm_mapping)));
      }
    }
    bool failed = false;
    for (const auto& w : t.records.IoWrite) {
      auto fd = shm_fds.find(w.fd);
      if (fd == shm_fds.end() || fd->second > w.ts) continue;
      if (w.result > 0) shm_bytes += static_cast<uint64_t>(w.result);
      if (w.result == -ENOSPC && !failed) {
        failures.push_back("pid " + std::to_string(t.pid()) +
                           ": a write to /dev/shm failed with ENOSPC");
        failed = true;
      }
    }
    for (const auto& m : t.records.IoMmap) {
      auto fd = shm_fds.find(m.fd);
      if (m.result == 0 && fd != shm_fds.end() && fd->second <= m.ts) shm_bytes += m.length;
    }
  }
  if (shm_size == UINT64_MAX) return;
  // Without a failure, "too small" needs workers that put at least half its size
  // through it (written or mapped, over the run).
  constexpr uint64_t kSmall = 256ull << 20;
  const bool small_for_workers =
      shm_size < kSmall && shm_users.size() >= 2 && shm_bytes >= shm_size / 2;
  if (failures.empty() && !small_for_workers) return;
  Finding finding = Finding::Of(FindingId::kHostShmSmall, 0);
  finding.evidence["host"] = HostName(host);
  finding.evidence["shm_size_bytes"] = shm_size;
  finding.evidence["processes_using_shm"] = static_cast<uint64_t>(shm_users.size());
  finding.evidence["bytes_written_or_mapped"] = shm_bytes;
  Json fails = Json::MakeArray();
  for (const auto& s : failures) fails.Append(s);
  finding.evidence["failures"] = std::move(fails);
  finding.summary = "/dev/shm is " + FormatBytes(shm_size) + " and " +
                    std::to_string(shm_users.size()) + " process" +
                    (shm_users.size() == 1 ? " uses" : "es use") + " it" +
                    (failures.empty() ? "" : "; shared-memory writes failed");
  if (multi_host) finding.summary += " on " + EscapeForTerminal(HostName(host));
  ctx.Add(std::move(finding));
}

void HostShmSmallRule(RuleContext& ctx) {
  const Hosts& hosts = ctx.run().Get<Hosts>();
  for (const auto& [host, members] : hosts.by_host) HostShmSmallOf(ctx, hosts.Members(host));
}

const RuleRegistration kHostShmSmallRuleRegistration(HostShmSmallRule, {FindingId::kHostShmSmall});

}  // namespace

}  // namespace colabtrace::analyzer::rules
