// How a rank's end reads (dist/rules/rules.h).
#include "core/format.h"
#include "dist/rules/rules.h"

namespace colabtrace::analyzer::dist {

std::string EndText(const JobRank& r) {
  switch (r.end_kind) {
    case EndKind::kExited:
      return r.code ? "exited " + std::to_string(*r.code) : "exited";
    case EndKind::kExecUntraced:
      return "exec'd an untraced program";
    case EndKind::kKilled:
      return r.sender_pid != 0 ? "killed by SIGKILL from pid " + std::to_string(r.sender_pid) : "killed by SIGKILL";
    case EndKind::kSignaled: {
      const std::string name = r.signal ? SignalName(static_cast<int>(*r.signal)) : "a signal";
      return r.sender_pid != 0 ? name + " from pid " + std::to_string(r.sender_pid) : name;
    }
  }
  return "";
}

std::string CauseOf(const JobRank& r) {
  switch (r.blame) {
    case Blame::kNone: return "";
    case Blame::kSent: return "signal";
    case Blame::kExit: return r.end_kind == EndKind::kExited ? "exit" : "signal";
    case Blame::kOwn: return r.end_kind == EndKind::kKilled ? "killed" : "fatal-signal";
  }
  return "";
}

}  // namespace colabtrace::analyzer::dist
