#include "cli/hang_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>

#include "cli/python_remote.h"
#include "colabtrace/format/records.h"
#include "trace/live_state.h"

namespace colabtrace::cli {
namespace {

static_assert(RemotePython::kMaxText <= RunTraceWriter::kMaxStringBytes);

// How often Hung reads the job's progress at most.
constexpr uint64_t kCheckPeriodNs = 200'000'000;

// How far a trace's wall-clock start may lie before the job's (clock adjustments).
constexpr uint64_t kClockSlackNs = 5'000'000'000;

// Chunks at the end of the last scan are read again at the next: one allocated but not
// yet stamped with its magic then is found once it is.
constexpr uint64_t kRescanChunks = 16;

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

using analyzer::PreadAll;

// A trace's tick count as CLOCK_MONOTONIC nanoseconds (its header's clock anchor).
uint64_t TicksToMonoNs(const format::FileHeader& h, uint64_t ticks) {
  if ((h.features & format::kFeatureTicksAreTsc) == 0 || h.ticks_per_sec_hint == 0) return ticks;
  const __int128 delta = static_cast<__int128>(ticks) - static_cast<__int128>(h.start_ticks);
  const __int128 ns = delta * 1000000000 / static_cast<__int128>(h.ticks_per_sec_hint);
  const __int128 at = static_cast<__int128>(h.start_mono_ns) + ns;
  return at < 0 ? 0 : static_cast<uint64_t>(at);
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

bool Ended(char state) { return state == 'Z' || state == 'X' || state == 'x'; }

// The thread's state letter from its stat line ('?' when unreadable).
char StateLetter(const std::string& stat) {
  const size_t close_paren = stat.rfind(')');
  return close_paren == std::string::npos || close_paren + 2 >= stat.size() ? '?' : stat[close_paren + 2];
}

// /proc/PID/task/TID/syscall: "NR arg0 ... sp pc" while blocked in a system call, "-1 sp
// pc" while blocked outside one, "running" while running.
void ParseSyscall(const std::string& text, int64_t* nr, uint64_t* arg0) {
  *nr = -1;
  *arg0 = 0;
  if (text.empty() || text[0] == 'r') return;
  char* end = nullptr;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || n < 0) return;
  *nr = n;
  *arg0 = std::strtoull(end, nullptr, 16);  // "0x..." (strtoull skips the blank and the 0x)
}

// The tids of a process, ascending.
std::vector<pid_t> TasksOf(pid_t pid);

// p's state, but 'D' when any of its threads is in uninterruptible sleep.
char ProcessState(const TreeProcess& p) {
  for (const pid_t tid : TasksOf(p.pid)) {
    if (StateLetter(ReadSmall("/proc/" + std::to_string(p.pid) + "/task/" + std::to_string(tid) + "/stat")) == 'D') {
      return 'D';
    }
  }
  return p.state;
}

// The tids of a process, ascending.
std::vector<pid_t> TasksOf(pid_t pid) {
  std::vector<pid_t> tids;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return tids;
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long tid = std::strtol(e->d_name, &end, 10);
    if (tid > 0 && *end == '\0') tids.push_back(static_cast<pid_t>(tid));
  }
  closedir(d);
  std::sort(tids.begin(), tids.end());
  return tids;
}

}  // namespace

HangWatch::HangWatch(std::string dir, pid_t root, uint64_t timeout_ns, uint64_t start_ns)
    : dir_(std::move(dir)), root_(root), timeout_ns_(timeout_ns), start_ns_(start_ns), progress_ns_(start_ns) {
  const uint64_t mono = NowNs(CLOCK_MONOTONIC), real = NowNs(CLOCK_REALTIME);
  start_realtime_ns_ = real - std::min(real, mono - std::min(mono, start_ns));
}

uint64_t HangWatch::steps() const {
  uint64_t n = 0;
  for (const auto& [name, t] : traces_) n += t.steps_before + t.steps;
  return n;
}

void HangWatch::FindNewTraces() {
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) return;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!name.ends_with(".ctrace") || looked_at_.contains(name)) continue;
    const std::string path = dir_ + "/" + name;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    format::FileHeader h = {};
    const bool whole = PreadAll(fd, &h, sizeof(h), 0);
    close(fd);
    if (!whole || !format::HasValidMagic(h)) continue;  // looked at again next time
    looked_at_.insert(name);
    if (h.pid == static_cast<uint32_t>(root_) || h.chunk_size != format::kChunkSize) continue;
    // Only this job's: a folder used before holds other runs' traces (their monotonic
    // clock may be another boot's, so the wall clock must agree too).
    if (h.start_mono_ns < start_ns_ || h.start_realtime_ns + kClockSlackNs < start_realtime_ns_) continue;
    Traced t;
    t.pid = static_cast<pid_t>(h.pid);
    t.path = path;
    t.start_mono_ns = h.start_mono_ns;
    traces_.emplace(name, std::move(t));
  }
  closedir(d);
}

HangWatch::Traced* HangWatch::TraceOf(pid_t pid) {
  Traced* best = nullptr;
  for (auto& [name, t] : traces_) {
    if (t.pid == pid && (best == nullptr || t.start_mono_ns > best->start_mono_ns)) best = &t;
  }
  return best;
}

bool HangWatch::Refresh(Traced& t, format::FileHeader* h) {
  const int fd = open(t.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct stat st = {};
  const bool ok = PreadAll(fd, h, sizeof(*h), 0) && format::HasValidMagic(*h) && fstat(fd, &st) == 0;
  if (!ok) {
    close(fd);
    return false;
  }
  const uint32_t image = h->image_count > 0 ? h->image_count - 1 : 0;
  if (image > t.image) {
    t.image = image;
    t.state_chunks.clear();
    t.steps_before += t.steps;
    t.steps = 0;
  }
  const uint64_t chunk = format::kChunkSize;
  const uint64_t end = std::min<uint64_t>(h->next_chunk_offset, static_cast<uint64_t>(st.st_size));
  uint64_t from = t.scanned_to > kRescanChunks * chunk ? t.scanned_to - kRescanChunks * chunk : chunk;
  from = std::max(from, chunk);
  from -= from % chunk;
  for (uint64_t off = from; off + sizeof(format::ChunkHeader) <= end; off += chunk) {
    format::ChunkHeader ch = {};
    if (!PreadAll(fd, &ch, sizeof(ch), off)) break;
    if (ch.magic != format::kStateChunkMagic) continue;
    // The shim stores the magic after the other fields, but a copy made while it stored
    // them may hold the magic and not yet its seq or image; once the magic was seen, a
    // second copy holds them all (nothing in a chunk header changes after the magic).
    if (!PreadAll(fd, &ch, sizeof(ch), off)) break;
    if (ch.image < t.image) continue;
    if (ch.image > t.image) {  // an exec the header did not show yet when it was read
      t.image = ch.image;
      t.state_chunks.clear();
      t.steps_before += t.steps;
      t.steps = 0;
    }
    t.state_chunks[ch.seq] = off;
  }
  t.scanned_to = std::max(t.scanned_to, end);
  close(fd);
  return true;
}

void HangWatch::ReadProgress(Traced& t, uint64_t now_ns) {
  format::FileHeader h;
  if (!Refresh(t, &h)) return;
  const auto first = t.state_chunks.find(0);
  if (first == t.state_chunks.end()) {
    t.read_ns = now_ns;
    return;
  }
  const int fd = open(t.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;
  const analyzer::LiveProgress live = analyzer::ReadLiveProgress(analyzer::PreadStateChunk(fd, first->second));
  close(fd);
  if (!live.read) return;
  if (!live.settled) {
    // It changed under every copy: the process is counting a step right now.
    progress_ns_ = std::max(progress_ns_, now_ns);
    t.read_ns = now_ns;
    return;
  }
  const format::ProgressBlock& p = live.block;
  if (p.steps > t.steps && p.last_step_ticks != 0) {
    // The step came after the last read that did not see it (else after the job began):
    // a tick count that converts outside that window (a rough ticks-per-second estimate
    // over a long run) is held to it.
    const uint64_t lo = t.read_ns != 0 ? t.read_ns : start_ns_;
    const uint64_t at = std::clamp(TicksToMonoNs(h, p.last_step_ticks), std::min(lo, now_ns), now_ns);
    progress_ns_ = std::max(progress_ns_, at);
  }
  t.steps = std::max(t.steps, p.steps);
  t.read_ns = now_ns;
}

bool HangWatch::Hung(uint64_t now_ns) {
  // No decision without a fresh read; reads at most every kCheckPeriodNs.
  if (checked_ns_ != 0 && now_ns < checked_ns_ + kCheckPeriodNs) return false;
  checked_ns_ = now_ns;
  FindNewTraces();
  std::set<Traced*> alive;
  for (const TreeProcess& p : DescendantsOf(root_)) {
    if (Ended(p.state)) continue;
    if (Traced* t = TraceOf(p.pid)) alive.insert(t);
  }
  for (auto& [name, t] : traces_) {
    const bool is_alive = alive.contains(&t);
    // A process that ended is read once more: its last steps count too.
    if (is_alive || t.watching) ReadProgress(t, now_ns);
    t.watching = is_alive;
  }
  return now_ns >= progress_ns_ + timeout_ns_;
}

HangWatch::Recorded HangWatch::RecordThreads(RunTraceWriter& out, uint64_t now_ns) {
  Recorded done;
  FindNewTraces();
  for (const TreeProcess& p : DescendantsOf(root_)) {
    if (Ended(p.state)) continue;
    Traced* t = TraceOf(p.pid);
    format::FileHeader h;
    if (t == nullptr || !Refresh(*t, &h)) continue;
    // Each thread's PyThreadState, from its notes (the last claim of a tid wins: a thread
    // that reuses a dead one's tid claims an entry of its own), and the Python layout.
    std::map<uint32_t, uint64_t> python_thread;
    format::PythonLayoutBlock layout = {};
    if (const int fd = open(t->path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW); fd >= 0) {
      for (const auto& [seq, off] : t->state_chunks) {
        // The layout is written once, before the chunk's magic; the notes change as the
        // process runs.
        if (seq == 0 && (!PreadAll(fd, &layout, sizeof(layout), off + format::kPythonLayoutOffset) ||
                         layout.version == 0)) {
          layout = {};
        }
        for (const format::ThreadNotes& n : analyzer::ReadLiveNotes(analyzer::PreadStateChunk(fd, off)).notes) {
          if (n.tid != 0) python_thread[n.tid] = n.python_thread;
        }
      }
      close(fd);
    }
    const RemotePython python(p.pid, layout);
    // Threads that never made a noted call: from the interpreter's own list of threads.
    if (python.usable()) {
      uint64_t known = 0;
      for (const auto& [tid, ts] : python_thread) known = known != 0 ? known : ts;
      for (const auto& [tid, ts] : python.ThreadStatesByTid(known)) {
        uint64_t& slot = python_thread[tid];
        if (slot == 0) slot = ts;
      }
    }
    const std::string proc = "/proc/" + std::to_string(p.pid) + "/task/";
    size_t threads = 0;
    for (const pid_t tid : TasksOf(p.pid)) {
      const std::string task = proc + std::to_string(tid);
      const std::string stat = ReadSmall(task + "/stat");
      if (stat.empty()) continue;  // the thread ended meanwhile
      format::ThreadState r;
      r.ts = now_ns;
      r.pid = static_cast<uint64_t>(p.pid);
      r.tid = static_cast<uint64_t>(tid);
      r.comm = out.Intern(Trimmed(ReadSmall(task + "/comm")));
      r.kernel_state = static_cast<uint64_t>(static_cast<unsigned char>(StateLetter(stat)));
      ParseSyscall(ReadSmall(task + "/syscall"), &r.syscall, &r.syscall_arg0);
      const auto ts = python_thread.find(static_cast<uint32_t>(tid));
      if (ts != python_thread.end() && ts->second != 0 && python.usable()) {
        const std::string stack = python.StackText(ts->second);
        if (!stack.empty()) {
          r.python_stack = out.Intern(stack);
          ++done.python_stacks;
        }
      }
      out.Append(r);
      ++threads;
    }
    if (threads > 0) ++done.processes;
    done.threads += threads;
  }
  format::HangStop stop;
  stop.ts = now_ns;
  stop.timeout = timeout_ns_;
  stop.idle = now_ns > progress_ns_ ? now_ns - progress_ns_ : 0;
  stop.steps = steps();
  out.Append(stop);
  out.Flush();
  return done;
}

std::vector<Holdout> EndTree(pid_t root, uint64_t grace_ns, uint64_t reap_ns, const std::function<void()>& reap) {
  // Those not ended, and run's own children until reaped: a process whose leader thread
  // has exited shows as a zombie while its other threads still end (or one of them stays
  // blocked in the kernel), and cannot be reaped before they have.
  auto living = [root] {
    std::vector<Holdout> left;
    for (const TreeProcess& p : DescendantsOf(root)) {
      if (!Ended(p.state) || p.ppid == root) left.push_back(Holdout{p.pid, p.comm, ProcessState(p)});
    }
    return left;
  };
  auto wait_until = [&](uint64_t deadline, std::set<pid_t>* killed) {
    for (;;) {
      reap();
      std::vector<Holdout> left = living();
      if (killed != nullptr) {
        // Started since the first SIGKILL (a fork that was under way): killed too.
        for (const Holdout& h : left) {
          if (killed->insert(h.pid).second) kill(h.pid, SIGKILL);
        }
      }
      if (left.empty() || NowNs(CLOCK_MONOTONIC) >= deadline) {
        reap();  // those that became zombies since the reap above
        return left;
      }
      timespec pause = {0, 10 * 1000000};
      nanosleep(&pause, nullptr);
    }
  };
  for (const Holdout& h : living()) kill(h.pid, SIGTERM);
  if (wait_until(NowNs(CLOCK_MONOTONIC) + grace_ns, nullptr).empty()) return {};
  std::set<pid_t> killed;
  for (const Holdout& h : living()) {
    killed.insert(h.pid);
    kill(h.pid, SIGKILL);
  }
  return wait_until(NowNs(CLOCK_MONOTONIC) + reap_ns, &killed);
}

}  // namespace colabtrace::cli
