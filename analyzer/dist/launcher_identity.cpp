#include "dist/launcher_identity.h"

#include <array>
#include <charconv>

namespace colabtrace::analyzer::dist {
namespace {

// Every variable IdentityOf reads.
constexpr std::array<std::string_view, 20> kLauncherVariables = {
    "RANK",          "LOCAL_RANK",        "WORLD_SIZE",                  "LOCAL_WORLD_SIZE",
    "GROUP_RANK",    "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "MASTER_ADDR",
    "MASTER_PORT",   "SLURM_PROCID",      "SLURM_LOCALID",               "SLURM_NTASKS",
    "SLURM_JOB_ID",  "SLURM_STEP_ID",     "OMPI_COMM_WORLD_RANK",        "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_SIZE", "PMI_RANK",   "PMI_SIZE",                    "SLURM_NODEID"};

// The largest rank or size taken as a number: more than any job has, and far from
// overflowing a sum of them.
constexpr int64_t kMaxNumber = 1 << 24;

class Reader {
 public:
  Reader(const std::unordered_map<std::string, std::string>& env, LauncherIdentity& id) : env_(env), id_(id) {}

  const std::string* Get(std::string_view name) const {
    auto it = env_.find(std::string(name));
    return it == env_.end() ? nullptr : &it->second;
  }

  // The variable as a number 0..kMaxNumber (a size: 1..kMaxNumber); nullopt when it is
  // absent, and a problem when it is something else.
  std::optional<int64_t> Number(std::string_view name, bool size = false) {
    const std::string* v = Get(name);
    if (v == nullptr) return std::nullopt;
    id_.variables.push_back(std::string(name) + "=" + *v);
    int64_t n = -1;
    const char* end = v->data() + v->size();
    const auto [ptr, ec] = std::from_chars(v->data(), end, n);
    if (v->empty() || ec != std::errc() || ptr != end || n < (size ? 1 : 0) || n > kMaxNumber) {
      id_.problems.push_back(std::string(name) + "=\"" + *v + "\" is not " +
                             (size ? "a size (a whole number from 1)" : "a rank (a whole number from 0)"));
      return std::nullopt;
    }
    return n;
  }

  std::string Text(std::string_view name) {
    const std::string* v = Get(name);
    if (v == nullptr) return "";
    id_.variables.push_back(std::string(name) + "=" + *v);
    return *v;
  }

 private:
  const std::unordered_map<std::string, std::string>& env_;
  LauncherIdentity& id_;
};

// "NAME=v is not below NAME2=w" when a rank is not below its size.
void Below(LauncherIdentity& id, const std::optional<int64_t>& rank, std::string_view rank_name,
           const std::optional<int64_t>& size, std::string_view size_name) {
  if (!rank || !size || *rank < *size) return;
  id.problems.push_back(std::string(rank_name) + "=" + std::to_string(*rank) + " is not below " +
                        std::string(size_name) + "=" + std::to_string(*size));
}

}  // namespace

LauncherIdentity IdentityOf(const std::unordered_map<std::string, std::string>& env) {
  LauncherIdentity id;
  Reader r(env, id);
  if (r.Get("RANK") != nullptr) {
    id.launcher = "torchrun";
    id.rank = r.Number("RANK");
    id.local_rank = r.Number("LOCAL_RANK");
    id.world_size = r.Number("WORLD_SIZE", true);
    id.local_world_size = r.Number("LOCAL_WORLD_SIZE", true);
    id.group_rank = r.Number("GROUP_RANK");
    id.restart = r.Number("TORCHELASTIC_RESTART_COUNT");
    const std::string run_id = r.Text("TORCHELASTIC_RUN_ID");
    const std::string addr = r.Text("MASTER_ADDR");
    const std::string port = r.Text("MASTER_PORT");
    id.job = run_id;
    if (!addr.empty() || !port.empty()) id.job += (run_id.empty() ? "" : "@") + addr + ":" + port;
    Below(id, id.rank, "RANK", id.world_size, "WORLD_SIZE");
    Below(id, id.local_rank, "LOCAL_RANK", id.local_world_size, "LOCAL_WORLD_SIZE");
    if (id.local_world_size && id.world_size && *id.local_world_size > *id.world_size) {
      id.problems.push_back("LOCAL_WORLD_SIZE=" + std::to_string(*id.local_world_size) + " is more than WORLD_SIZE=" +
                            std::to_string(*id.world_size));
    }
  } else if (r.Get("SLURM_PROCID") != nullptr) {
    id.launcher = "slurm";
    id.rank = r.Number("SLURM_PROCID");
    id.local_rank = r.Number("SLURM_LOCALID");
    id.world_size = r.Number("SLURM_NTASKS", true);
    id.group_rank = r.Number("SLURM_NODEID");
    id.job = "slurm:" + r.Text("SLURM_JOB_ID");
    if (r.Get("SLURM_STEP_ID") != nullptr) id.job += "." + r.Text("SLURM_STEP_ID");
    Below(id, id.rank, "SLURM_PROCID", id.world_size, "SLURM_NTASKS");
  } else if (r.Get("OMPI_COMM_WORLD_RANK") != nullptr) {
    id.launcher = "mpi";
    id.rank = r.Number("OMPI_COMM_WORLD_RANK");
    id.local_rank = r.Number("OMPI_COMM_WORLD_LOCAL_RANK");
    id.world_size = r.Number("OMPI_COMM_WORLD_SIZE", true);
    id.job = "mpi";
    Below(id, id.rank, "OMPI_COMM_WORLD_RANK", id.world_size, "OMPI_COMM_WORLD_SIZE");
  } else if (r.Get("PMI_RANK") != nullptr) {
    id.launcher = "pmi";
    id.rank = r.Number("PMI_RANK");
    id.world_size = r.Number("PMI_SIZE", true);
    id.job = "pmi";
    Below(id, id.rank, "PMI_RANK", id.world_size, "PMI_SIZE");
  }
  return id;
}

LauncherIdentity IdentityOfGroup(const ProcessTrace& t, const std::unordered_map<std::string, std::string>& env,
                                 int64_t ppid) {
  LauncherIdentity id;
  const format::DistGroup* init = nullptr;
  for (const auto& g : t.records.DistGroup) {
    if (g.how == static_cast<uint64_t>(format::DistGroupHow::kInitProcessGroup)) init = &g;
  }
  if (init == nullptr || init->world_size < 2 || init->rank < 0 ||
      static_cast<uint64_t>(init->rank) >= init->world_size) {
    return id;
  }
  id.launcher = "init_process_group";
  id.rank = init->rank;
  id.world_size = static_cast<int64_t>(init->world_size);
  const auto addr = env.find("MASTER_ADDR"), port = env.find("MASTER_PORT");
  id.job = addr != env.end() && port != env.end() ? "init_process_group@" + addr->second + ":" + port->second
                                                  : "init_process_group@ppid:" + std::to_string(ppid);
  id.variables = {"init_process_group(rank=" + std::to_string(init->rank) +
                  ", world_size=" + std::to_string(init->world_size) + ")"};
  return id;
}

std::unordered_map<std::string, std::string> LauncherEnvOf(const ProcessTrace& t) {
  std::unordered_map<std::string, std::string> env;
  for (const auto& e : t.records.EnvVar) {
    if (e.source != static_cast<uint64_t>(format::EnvSource::kStartup)) continue;
    const std::string_view name = t.Str(e.name);
    for (std::string_view v : kLauncherVariables) {
      if (v == name) {
        env[std::string(name)] = e.redacted ? std::string() : std::string(t.Str(e.value));
        break;
      }
    }
  }
  return env;
}

}  // namespace colabtrace::analyzer::dist
