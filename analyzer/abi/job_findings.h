// JobFindings: one finding per cause for the whole job, whatever the number of processes
// it touched. A DataLoader job whose nine processes mapped the same mismatched CUDA
// libraries has one abi.mixed-cuda-majors, not nine.
//
// Rules add what they find in each process with a cause: a key naming what went wrong
// apart from the process (the library paths, the failed request and its error). Findings
// of one id and one cause become one: `pid` is the first process that had it (in the
// report's trace order), evidence `pids` lists every one, the severity is the highest
// any process gave it, and the summary and evidence are those of the first process with
// that severity (evidence `evidence_pid` names it when it is not the first process).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/finding.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer::abi {

class JobFindings {
 public:
  // f.pid is the process it was found in.
  void Add(Finding f, std::string cause);
  // Adds the merged findings through the rule's context, in order of first appearance,
  // and forgets them.
  void MoveTo(RuleContext& rule);

 private:
  struct Entry {
    Finding finding;
    int64_t first_pid = 0;
    std::vector<int64_t> pids;
  };
  std::vector<Entry> entries_;
  std::map<std::string, size_t> by_cause_;  // id + '\0' + cause -> entries_ index
};

}  // namespace colabtrace::analyzer::abi
