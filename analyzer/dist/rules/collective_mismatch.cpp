// dist.collective-mismatch (error)
//
// Rule: at one sequence number of one process group, ranks called different collectives,
// counts or dtypes (the Python start-up hook's Collective records and the collective each
// rank was in when it stopped; likewise per NCCL communicator, from the calls the shim's
// NCCL hooks left in the trace's call ring). gloo and NCCL match collectives by their order, so a
// rank's extra metric all_reduce pairs with the others' gradient all-reduce: the job
// then mixes data or hangs with every rank waiting. The odd ranks are the minority (on a
// tie, the side that is not DDP's gradient all-reduce, else the side without the lowest
// rank). Only the first such sequence number is reported: what follows is its
// consequence. Groups with point-to-point calls (send, recv) are not compared, since
// those advance one rank's count and not another's; nor are calls without a sequence
// number.
//
// Evidence: {rank (the lowest odd one), ranks, seq, comm, calls: [{host, rank, pid, op,
// count, dtype, where, python_stack}] (one per rank at that number, by rank),
// consequences: [...] (when every rank ended waiting in a collective: the others' ends,
// whose proc.* errors fold into this finding), job}.
#include <algorithm>
#include <map>
#include <tuple>

#include "dist/rules/rules.h"
#include "process/rules/rules.h"

namespace colabtrace::analyzer::dist {
namespace {

struct Call {
  size_t rank_index = 0;
  uint64_t op = 0, count = 0;
  std::string op_name, dtype, where;
  bool nccl = false;

  std::tuple<uint64_t, uint64_t, std::string> Signature() const { return {op, count, dtype}; }
};

bool PointToPoint(uint64_t op) {
  using format::CollectiveOp;
  return op == static_cast<uint64_t>(CollectiveOp::kSend) || op == static_cast<uint64_t>(CollectiveOp::kRecv) ||
         op == static_cast<uint64_t>(CollectiveOp::kWorkWait);
}

// Per group, per sequence number, each rank's call there.
using Calls = std::map<uint64_t, std::map<uint64_t, std::vector<Call>>>;

// A call of rank index i: op and count, its name from the op.
Call CallOf(size_t i, uint64_t op, uint64_t count) {
  Call call;
  call.rank_index = i;
  call.op = op;
  call.count = count;
  const char* n = format::CollectiveOpName(op);
  call.op_name = n != nullptr ? n : "collective";
  return call;
}

Calls CollectCalls(const RunModel& run, const Job& job, std::map<uint64_t, bool>& p2p) {
  Calls calls;
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const JobRank& r = job.ranks[i];
    const ProcessTrace& t = run.traces()[r.trace];
    for (const auto& c : t.records.Collective) {
      if (PointToPoint(c.op)) p2p[c.group] = true;
      if (c.seq == 0 || c.group == 0) continue;
      Call call = CallOf(i, c.op, c.count);
      if (c.dtype != 0) call.dtype = std::string(t.Str(c.dtype));
      if (c.where != 0) call.where = std::string(t.Str(c.where));
      calls[c.group][c.seq].push_back(std::move(call));
    }
    // NCCL's calls left in the ring (the shim's NCCL hooks), by communicator.
    for (const auto& c : t.records.NcclCall) {
      if (PointToPoint(c.op)) p2p[c.comm] = true;
      if (c.seq == 0 || c.comm == 0) continue;
      Call call = CallOf(i, c.op, c.count);
      const char* d = format::NcclDataTypeName(c.dtype);
      if (d != nullptr) call.dtype = d;
      if (c.py_stack != 0) call.where = std::string(t.Str(c.py_stack));
      call.nccl = true;
      calls[c.comm][c.seq].push_back(std::move(call));
    }
    if (r.waiting && r.waiting->seq != 0 && r.waiting->group != 0 && !r.waiting->raised && !r.waiting->nccl) {
      Call call;
      call.rank_index = i;
      call.op = r.waiting->op_code;
      call.count = r.waiting->count;
      call.op_name = r.waiting->op;
      call.dtype = r.waiting->dtype;
      call.where = r.waiting->where;
      calls[r.waiting->group][r.waiting->seq].push_back(std::move(call));
    }
  }
  return calls;
}

void CollectiveMismatchRule(RuleContext& ctx) {
  const RunModel& run = ctx.run();
  const JobModel& jobs = run.Get<JobModel>();
  for (const Job& job : jobs.jobs) {
    std::map<uint64_t, bool> p2p;
    const Calls calls = CollectCalls(run, job, p2p);
    for (const auto& [group, by_seq] : calls) {
      if (p2p[group]) continue;
      for (const auto& [seq, at] : by_seq) {
        // Each rank's call at seq (a rank that called twice there is damaged input: its
        // first call counts).
        std::map<size_t, const Call*> per_rank;
        for (const Call& c : at) per_rank.emplace(c.rank_index, &c);
        if (per_rank.size() < 2) continue;
        std::map<std::tuple<uint64_t, uint64_t, std::string>, std::vector<size_t>> sides;
        for (const auto& [i, c] : per_rank) sides[c->Signature()].push_back(i);
        if (sides.size() < 2) continue;
        // The majority side; the rest are odd.
        const auto ddp = static_cast<uint64_t>(format::CollectiveOp::kDdpAllReduce);
        const std::vector<size_t>* majority = nullptr;
        for (const auto& [sig, ranks] : sides) {
          if (majority == nullptr) {
            majority = &ranks;
            continue;
          }
          const bool more = ranks.size() > majority->size();
          const bool tie = ranks.size() == majority->size();
          const bool is_ddp = std::get<0>(sig) == ddp;
          const bool majority_ddp = per_rank.at(majority->front())->op == ddp;
          if (more || (tie && is_ddp && !majority_ddp) ||
              (tie && is_ddp == majority_ddp && job.ranks[ranks.front()].rank < job.ranks[majority->front()].rank)) {
            majority = &ranks;
          }
        }
        std::vector<int64_t> odd;
        for (const auto& [i, c] : per_rank) {
          if (std::find(majority->begin(), majority->end(), i) == majority->end()) odd.push_back(job.ranks[i].rank);
        }
        std::sort(odd.begin(), odd.end());
        const JobRank* first_odd = nullptr;
        for (const auto& [i, c] : per_rank) {
          if (job.ranks[i].rank == odd.front()) first_odd = &job.ranks[i];
        }
        Finding f = Finding::Of(FindingId::kDistCollectiveMismatch, first_odd->pid);
        Json& ev = f.evidence;
        ev["rank"] = odd.front();
        Json odd_json = Json::MakeArray();
        for (int64_t r : odd) odd_json.Append(r);
        ev["ranks"] = std::move(odd_json);
        ev["seq"] = seq;
        const bool nccl = per_rank.begin()->second->nccl;
        ev["comm"] = CommName(group, nccl);
        ev["job"] = job.job;
        Json call_list = Json::MakeArray();
        const Call* odd_call = per_rank.at(static_cast<size_t>(first_odd - job.ranks.data()));
        const Call* usual = per_rank.at(majority->front());
        for (const auto& [i, c] : per_rank) {
          Json one = Json::MakeObject();
          one["host"] = job.ranks[i].host;
          one["rank"] = job.ranks[i].rank;
          one["pid"] = job.ranks[i].pid;
          one["op"] = c->op_name;
          one["count"] = c->count;
          one["dtype"] = c->dtype.empty() ? Json() : Json(c->dtype);
          one["where"] = c->where.empty() ? Json() : Json(c->where);
          Json stack = Json::MakeArray();
          if (!c->where.empty()) stack.Append(c->where);
          one["python_stack"] = c->where.empty() ? Json() : std::move(stack);
          call_list.Append(std::move(one));
        }
        ev["calls"] = std::move(call_list);
        Json consequences = Json::MakeArray();
        if (job.all_waiting) {
          for (size_t i = 0; i < job.ranks.size(); ++i) {
            const JobRank& r = job.ranks[i];
            if (std::find(odd.begin(), odd.end(), r.rank) != odd.end() || !r.failed()) continue;
            consequences.Append(ConsequenceJson(ctx, r, first_odd->at_ns));
          }
          AppendLauncherConsequences(ctx, job, consequences);
        }
        ev["consequences"] = std::move(consequences);
        std::vector<int64_t> usual_ranks;
        for (size_t i : *majority) usual_ranks.push_back(job.ranks[i].rank);
        const auto describe = [](const Call& c) {
          std::string s = rules::CollectiveText(c.op_name, 0, c.where);
          s += " (" + std::to_string(c.count) + (c.count == 1 ? " element" : " elements") + (c.dtype.empty() ? "" : " of " + c.dtype) + ")";
          return s;
        };
        f.summary = RankList(odd) + " called " + describe(*odd_call) + " as collective #" + std::to_string(seq) +
                    " of " + CommName(group, nccl) + ", where " + RankList(usual_ranks) + " called " +
                    describe(*usual) + (job.all_waiting ? "; every rank then waited in a collective until the job ended"
                                                        : "");
        ctx.Add(std::move(f));
        break;  // the first mismatch in this group; the rest follow from it
      }
    }
  }
}

const RuleRegistration kCollectiveMismatchRuleRegistration(CollectiveMismatchRule,
                                                           {FindingId::kDistCollectiveMismatch});

}  // namespace
}  // namespace colabtrace::analyzer::dist
