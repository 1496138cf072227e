// LauncherIdentity: what a launcher told one process about its place in a multi-rank
// job, read from the start-up environment the shim recorded (EnvVar records).
//
// torchrun's variables first (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// GROUP_RANK, TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT, MASTER_ADDR,
// MASTER_PORT); where RANK is absent, Slurm's (SLURM_PROCID, SLURM_LOCALID,
// SLURM_NTASKS, SLURM_JOB_ID, SLURM_STEP_ID), then Open MPI's (OMPI_COMM_WORLD_RANK,
// _LOCAL_RANK, _SIZE), then PMI's (PMI_RANK, PMI_SIZE). Values are untrusted: a value
// that is no number, or numbers that contradict each other, become `problems` (one
// sentence each), never a rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/process_trace.h"

namespace colabtrace::analyzer::dist {

struct LauncherIdentity {
  // "torchrun" (RANK and its companions, also a hand-made env:// launch), "slurm", "mpi",
  // "pmi", "init_process_group" (IdentityOfGroup); "" when the process carries none.
  std::string launcher;
  std::optional<int64_t> rank, local_rank, world_size, local_world_size, group_rank;
  std::optional<int64_t> restart;  // TORCHELASTIC_RESTART_COUNT
  // The string that ties the ranks of one job: torchrun's "RUN_ID@MASTER_ADDR:MASTER_PORT"
  // (parts it lacks left out), Slurm's "slurm:JOB_ID.STEP_ID", "mpi", "pmi".
  std::string job;
  // The variables as recorded (name=value), the rank variables only: what a problem
  // statement quotes and what makes a worker's identity its rank's.
  std::vector<std::string> variables;
  std::vector<std::string> problems;  // garbage or contradictory values, one sentence each

  bool present() const { return !launcher.empty(); }
  // A rank the job model can place: a rank number and no problem.
  bool usable() const { return present() && rank.has_value() && problems.empty(); }
};

// The identity the variables give (name -> value, the start-up environment).
LauncherIdentity IdentityOf(const std::unordered_map<std::string, std::string>& env);

// Where t carries no launcher's variables: the identity its own init_process_group call
// gave it (the Python start-up hook's dist_group record: rank=..., world_size=...; the
// processes mp.spawn starts), launcher "init_process_group", for a world of 2 or more.
// The job string is "init_process_group@MASTER_ADDR:MASTER_PORT" from env when set, else
// "init_process_group@ppid:PPID" (the ranks one process spawned). Not present otherwise.
LauncherIdentity IdentityOfGroup(const ProcessTrace& t, const std::unordered_map<std::string, std::string>& env,
                                 int64_t ppid);

// The start-up environment of t's last image as recorded (EnvVar records of source
// start-up; a redacted value reads as ""), the launcher variables only.
std::unordered_map<std::string, std::string> LauncherEnvOf(const ProcessTrace& t);

}  // namespace colabtrace::analyzer::dist
