#include "cli/run_tiers.h"

#include <algorithm>
#include <cstring>

namespace colabtrace::cli {

using format::kThinUnknown;

RunSampleTiers::~RunSampleTiers() {
  for (auto& s : sets_) {
    if (s->in_file) Drop(*s);
  }
}

format::RunThinIdentity* RunSampleTiers::IdentityOf(const Set& s) const {
  format::ThinRun* run = s.tiers.Run();
  return run == nullptr ? nullptr : reinterpret_cast<format::RunThinIdentity*>(run->reserved);
}

// Tier k's chunk: in memory until the set is in the file, then a fresh chunk of the trace.
// Its header and ThinTier are written before its magic.
uint8_t* RunSampleTiers::NewChunk(Set& s, int k) {
  uint8_t* c = nullptr;
  if (s.in_file) {
    c = chunks_.map();
    if (c == nullptr) {
      ++lost_;
      return nullptr;
    }
  } else {
    s.memory[k].assign(format::kChunkSize, 0);
    c = s.memory[k].data();
  }
  format::ChunkHeader ch = {};
  ch.tid = s.pid;
  ch.base_ticks = s.first_ts;
  ch.seq = static_cast<uint32_t>(k);
  ch.image = s.number;
  std::memcpy(c + sizeof(ch.magic), reinterpret_cast<const uint8_t*>(&ch) + sizeof(ch.magic),
              sizeof(ch) - sizeof(ch.magic));
  format::ThinTiers::InitChunk(c, k);
  __atomic_store_n(reinterpret_cast<uint32_t*>(c), format::kRunThinChunkMagic, __ATOMIC_RELEASE);
  return c;
}

RunSampleTiers::Set& RunSampleTiers::Open(uint32_t pid, uint64_t ts, uint64_t kind, uint64_t path) {
  auto s = std::make_unique<Set>();
  s->number = next_number_++;
  s->pid = pid;
  s->first_ts = ts;
  s->tiers.chunk[0] = NewChunk(*s, 0);
  if (format::RunThinIdentity* id = IdentityOf(*s)) {
    id->kind = kind;
    id->pid = pid;
    id->path = path;
  }
  sets_.push_back(std::move(s));
  return *sets_.back();
}

void RunSampleTiers::Add(Set& s, uint64_t ts, uint64_t rss, uint64_t vm, uint64_t threads, uint64_t cgroup,
                         uint64_t inactive_file, uint64_t oom_kill, uint64_t utime_ns, uint64_t stime_ns) {
  s.tiers.AddSample(ts, ts, s.pid, rss, vm, threads, cgroup, inactive_file, oom_kill, utime_ns, stime_ns,
                    [&](int k) { return NewChunk(s, k); });
  format::ThinRunHalf& r = s.run;
  ++r.samples;
  const uint64_t at = ts == 0 ? 1 : ts;
  format::ThinNotePeak(r.peak_rss, r.peak_rss_ticks, rss, at);
  format::ThinNotePeak(r.peak_vm, r.peak_vm_ticks, vm, at);
  format::ThinNotePeak(r.peak_cgroup, r.peak_cgroup_ticks, cgroup, at);
  format::ThinNotePeak(r.peak_threads, r.peak_threads_ticks, threads, at);
  format::ThinPublishRun(s.tiers.Run(), r);
}

void RunSampleTiers::AddProcess(const format::ProcSample& p) {
  if (p.pid == 0 || p.pid > UINT32_MAX) return;
  const uint32_t pid = static_cast<uint32_t>(p.pid);
  auto it = live_.find(pid);
  Set& s = it != live_.end() ? *it->second : *(live_[pid] = &Open(pid, p.ts, format::kRunThinProcess, p.cgroup));
  if (format::RunThinIdentity* id = IdentityOf(s)) {
    if (id->comm != p.comm) format::ThinStore(id->comm, p.comm);
    if (id->shim != p.shim) format::ThinStore(id->shim, p.shim);
    if (id->path != p.cgroup) format::ThinStore(id->path, p.cgroup);
  }
  // PSS in the vm figures, USS in the cgroup ones, swap as inactive_file, ppid as oom_kill.
  Add(s, p.ts, p.rss_bytes, p.pss_bytes, p.threads, p.uss_bytes, p.swap_bytes, p.ppid, p.utime_ns, p.stime_ns);
}

void RunSampleTiers::AddCgroup(const format::CgroupSample& c) {
  auto it = cgroups_.find(c.path);
  Set& s = it != cgroups_.end() ? *it->second : *(cgroups_[c.path] = &Open(0, c.ts, format::kRunThinCgroup, c.path));
  // memory.current as RSS and cgroup, memory.max as VM.
  Add(s, c.ts, c.current, c.max, kThinUnknown, c.current, c.inactive_file, c.oom_kill, 0, 0);
}

void RunSampleTiers::Retain(const std::set<pid_t>& alive) {
  for (auto it = live_.begin(); it != live_.end();) {
    if (alive.contains(static_cast<pid_t>(it->first))) {
      ++it;
      continue;
    }
    Set& s = *it->second;
    s.ended = true;
    if (!s.in_file) Shrink(s);
    it = live_.erase(it);
  }
  MaterializeUpTo(0);  // forgets the ended sets already in the file
}

// An ended set waiting in memory keeps only the bytes its tiers use (a short process: its
// header and one entry).
void RunSampleTiers::Shrink(Set& s) {
  for (int k = 0; k < format::kThinTiers; ++k) {
    std::vector<uint8_t>& m = s.memory[k];
    if (m.empty()) continue;
    format::ThinTier t;
    std::memcpy(&t, m.data() + format::kThinTierOffset, sizeof(t));
    if (t.written < t.capacity) {
      m.resize(format::kThinEntriesOffset + t.written * sizeof(format::ThinEntry));
      m.shrink_to_fit();
      s.tiers.chunk[k] = m.data();
    }
  }
}

bool RunSampleTiers::Materialize(Set& s) {
  const format::RunThinIdentity* id = IdentityOf(s);
  if (s.ended && id != nullptr && s.memory[1].empty() && s.memory[2].empty() &&
      s.tiers.Tier(0)->written <= kRecordsEntries) {
    const format::ThinEntry* entries = s.tiers.Entries(0);
    for (uint64_t k = 0; k < s.tiers.Tier(0)->written; ++k) {
      if (entries[k].start_ticks != 0) format::RunThinRecords(entries[k], *id, chunks_.proc, chunks_.cgroup);
    }
    s.memory[0] = {};
    s.tiers.chunk[0] = nullptr;
    s.in_file = true;
    ++in_file_, ++as_records_;
    return true;
  }
  uint8_t* to[format::kThinTiers] = {};
  for (int k = 0; k < format::kThinTiers; ++k) {
    if (s.memory[k].empty()) continue;
    to[k] = chunks_.map();
    if (to[k] != nullptr) continue;
    // No room: what was taken stays in the file as unused chunks (no magic).
    for (int j = 0; j < k; ++j) {
      if (to[j] != nullptr) chunks_.unmap(to[j]);
    }
    ++lost_;
    return false;
  }
  for (int k = 0; k < format::kThinTiers; ++k) {
    if (to[k] == nullptr) continue;
    const std::vector<uint8_t>& m = s.memory[k];
    std::memcpy(to[k] + sizeof(uint32_t), m.data() + sizeof(uint32_t), m.size() - sizeof(uint32_t));
    __atomic_store_n(reinterpret_cast<uint32_t*>(to[k]), format::kRunThinChunkMagic, __ATOMIC_RELEASE);
    s.tiers.chunk[k] = to[k];
    s.memory[k] = {};
  }
  s.in_file = true;
  ++in_file_;
  return true;
}

void RunSampleTiers::Drop(Set& s) {
  for (int k = 0; k < format::kThinTiers; ++k) {
    if (s.tiers.chunk[k] != nullptr && s.in_file) chunks_.unmap(s.tiers.chunk[k]);
    s.tiers.chunk[k] = nullptr;
  }
}

void RunSampleTiers::MaterializeUpTo(uint64_t ts) {
  for (auto& s : sets_) {
    if (!s->in_file && s->first_ts <= ts) Materialize(*s);
  }
  // An ended set is forgotten once in the file, or once it could not go there (no room).
  std::erase_if(sets_, [&](const std::unique_ptr<Set>& s) {
    if (!s->ended || (!s->in_file && s->first_ts > ts)) return false;
    Drop(*s);
    return true;
  });
}

}  // namespace colabtrace::cli
