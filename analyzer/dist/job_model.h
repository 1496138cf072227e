// JobModel: the multi-rank jobs of a run (torchrun, Slurm, MPI), built once from the
// process facts, the lifecycle model and the step model (run.Get<dist::JobModel>()).
//
// A process that carries a launcher's rank variables (LauncherIdentity) is a rank when
// the launcher started it, and a worker of that rank when its parent carries the same
// variables (DataLoader workers and subprocesses inherit RANK); a launch script's shell
// or a command prefix (env, numactl...) that starts such a child is part of the launch,
// no rank. Ranks are grouped into
// jobs by the launcher's job string (run id, master address and port) and restart count;
// each job is judged on its own.
//
// How each rank ended, and when it stopped: its exit or signal; a killed trace (SIGKILL,
// the OOM killer) stopped at its last sign of life (its last record, or `colabtrace
// run`'s last sample of it). Times are on one axis per job: CLOCK_MONOTONIC when all its
// ranks ran on one host (one boot), else wall time from each trace's Clock records,
// refined where every host's ranks left at least kMinClockCollectives collectives with
// another host's (the Python start-up hook's collective records: a blocking collective
// returns on every rank within the network's latency), each host's offset corrected by
// the median difference and the uncertainty the spread that remains.
//
// The first failure is the rank that stopped first among those that failed (a fatal
// signal, a kill, a non-zero exit), never one whose end a traced process sent it (the
// launcher's SIGTERM or SIGKILL). Where the input cannot support a verdict (rank
// variables that are garbage or contradict each other, a rank with no trace, one rank
// twice, a failed job with a rank whose trace stopped early or is damaged, failures on
// two hosts closer than their clocks can order), the job has no verdict and `problems`
// says why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dist/launcher_identity.h"
#include "model/process_facts.h"
#include "model/run_model.h"

namespace colabtrace::analyzer::dist {

enum class Role { kRank, kWorker };
std::string_view RoleName(Role r);  // "rank", "worker"

// How strongly an end points at the rank itself.
enum class Blame {
  kNone,     // it did not fail (exited 0, or exec'd into an untraced program)
  kSent,     // a traced process sent the signal that ended it (the launcher's teardown)
  kExit,     // a non-zero exit, or a termination signal from outside the job
  kOwn,      // a fatal signal of its own, or SIGKILL no traced process sent (OOM killer)
};

// One traced process that carries a launcher's identity.
struct RankProcess {
  size_t trace = 0;          // index into run.traces()
  LauncherIdentity identity;
  Role role = Role::kRank;
  std::string host_key;      // LifecycleModel::HostOf: hostname/boot_id
  std::string host;          // the host name
  size_t rank_trace = 0;     // a worker's rank (its nearest ancestor that is a rank)
};

// A collective a rank was in when it stopped waiting for good (the Python start-up hook's
// notes and records, format::Collective): one in flight when the rank stopped, or its
// last one when that one raised (a timeout, a lost peer) and no step followed.
struct RankWait {
  uint64_t op_code = 0;    // format::CollectiveOp
  std::string op;          // its name: "all_reduce", "ddp_all_reduce"...
  uint64_t group = 0;      // the hook's id of the process group (1 the default one), or the
                           // NCCL communicator's id (nccl)
  bool nccl = false;       // an NCCL collective (the shim's NCCL hooks), not the Python hook's
  uint64_t seq = 0;        // its sequence number in the group (0: unknown)
  uint64_t count = 0;
  std::string dtype, where;
  uint32_t tid = 0;
  uint64_t since_ns = 0;   // when it entered, on the rank's host's CLOCK_MONOTONIC
  uint64_t waited_ns = 0;  // how long it waited (until it raised, or the rank stopped)
  bool raised = false;
};

// How a report names a collective's group: "group 1" (the Python hook's process group),
// "nccl comm 0x1234abcd5678ef90" (an NCCL communicator's id, NCCL's commHash).
std::string CommName(uint64_t group, bool nccl);

// A rank's collectives on one process group, over the whole run.
struct GroupCollectives {
  uint64_t collectives = 0;  // ended (returned, raised, or returned their Work)
  uint64_t raised = 0;
  uint64_t entered = 0;      // the highest sequence number they issued (0: none known)
  uint64_t time_ns = 0;      // their total duration
};

// One rank of a job and how it ended.
struct JobRank {
  size_t trace = 0;
  int64_t rank = 0;
  int64_t pid = 0;
  std::string host, host_key;
  size_t steps = 0;                 // perf::StepModels' count (0: it did not step)
  EndKind end_kind = EndKind::kKilled;
  std::optional<int64_t> code, signal;
  Blame blame = Blame::kNone;
  int64_t sender_pid = 0;           // kSent: who sent it (0: none)
  std::string exception;            // its uncaught Python exception ("ValueError: bad
                                    // sample"), "" none
  uint64_t stop_ns = 0;             // when it stopped, on its own host's CLOCK_MONOTONIC
  int64_t at_ns = 0;                // the same on the job's axis, from the job's start
  std::vector<size_t> workers;      // traces of its workers
  uint64_t axis_base = 0;           // host CLOCK_MONOTONIC + this = the job's axis (wraps)
  std::optional<RankWait> waiting;  // the collective it waited in at its end
  // Per process group (the hook's id) or NCCL communicator (its id): the highest sequence
  // number it entered (0: none known), from its Collective records and the one in flight,
  // and from the NCCL chunk's communicator table and call ring.
  std::map<uint64_t, uint64_t> entered;
  // Per process group (the hook's id): the collectives that ended on it, over the whole run
  // (the collective chunk's counters, 1.5; from the Collective records in older traces and
  // for a group past the chunks').
  std::map<uint64_t, GroupCollectives> groups;

  bool failed() const { return blame != Blame::kNone; }
};

struct Job {
  std::string job;                  // LauncherIdentity::job
  std::string launcher;             // "torchrun", "slurm", "mpi", "pmi"
  std::optional<int64_t> restart;
  std::optional<int64_t> world_size;
  std::vector<JobRank> ranks;       // by rank
  std::vector<int64_t> missing;     // ranks below world_size with no trace
  std::vector<std::string> hosts;   // host names, sorted
  bool wall_clock = false;          // ranks on several hosts: aligned by wall time
  // How the ranks' times were put on one axis: "monotonic" (one host), "wall" (each
  // host's wall clock), "collectives" (wall time, then refined by the collectives every
  // host's ranks left together); and how far two hosts' times may still disagree.
  std::string clock = "monotonic";
  uint64_t clock_uncertainty_ns = 0;
  // The processes that started its ranks and carry no rank themselves (torchrun's
  // agents), traces; their own failure follows the ranks'.
  std::vector<size_t> launchers;
  // Why no verdict can be given (each one sentence); empty when the input supports one.
  std::vector<std::string> problems;
  // The verdict: index into ranks of the first failure, and the others' failures that
  // followed it (indexes into ranks), in the order they stopped.
  std::optional<size_t> first_failure;
  std::vector<size_t> consequences;
  // Ranks that failed but whose end a traced process sent, when no rank failed on its own:
  // the job was stopped from outside (no first failure to name).
  bool stopped_from_outside = false;
  // Collectives: the ranks that ended waiting in one (indexes into ranks, by rank).
  std::vector<size_t> waiters;
  // dist.hang's verdict: the ranks that never entered the collective the waiters waited
  // in, and were alive, stopped or blocked elsewhere while they waited (indexes into
  // ranks; the missing ranks are named in `missing`); `waited_in` indexes the waiter whose
  // collective it is (the lowest sequence number, else the first to enter). The waiters'
  // failures are its consequences, and there is then no first failure.
  std::vector<size_t> hung;
  std::optional<size_t> waited_in;
  // Every rank ended waiting in a collective: none stopped first (dist.collective-mismatch
  // says why where it can), and there is no first failure to name.
  bool all_waiting = false;

  bool failed() const;
};

struct JobModel {
  std::vector<RankProcess> processes;  // every process with a launcher identity, trace order
  std::vector<Job> jobs;               // by job string, then restart
  // Statements about the run as a whole (several jobs in one report).
  std::vector<std::string> notes;

  std::vector<int64_t> by_trace;       // per trace: its index in processes, -1 none

  // The entry of trace index i, or nullptr.
  const RankProcess* Of(size_t trace) const;
  static JobModel Build(const RunModel& run);
};

// Two hosts' wall clocks are trusted to agree to within this: failures on two hosts
// closer than this are not ordered by their clocks (unless collectives refined them).
inline constexpr uint64_t kCrossHostClockUncertaintyNs = 100'000'000;
// Refining two hosts' clocks by collectives needs at least this many that ranks of both
// left; the uncertainty that remains is never taken below kMinCollectiveUncertaintyNs.
inline constexpr size_t kMinClockCollectives = 3;
inline constexpr uint64_t kMinCollectiveUncertaintyNs = 1'000'000;

}  // namespace colabtrace::analyzer::dist
