#include "analyses/symbolize.h"

#include <algorithm>

#include "report/report.h"

namespace colabtrace::analyzer {

std::vector<std::string> SymbolizeStack(const ProcessTrace& trace,
                                        const std::vector<uint64_t>& frames) {
  std::vector<std::string> out;
  out.reserve(frames.size());
  for (uint64_t ip : frames) {
    const format::Module* best = nullptr;
    for (const auto& m : trace.records.Module) {
      if (ip >= m.base && ip < m.base + m.size && (best == nullptr || m.base > best->base)) {
        best = &m;
      }
    }
    if (best == nullptr) {
      out.push_back(FormatHex(ip));
      continue;
    }
    std::string path(trace.Str(best->path));
    const size_t slash = path.rfind('/');
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    out.push_back(name + "+" + FormatHex(ip - best->base));
  }
  return out;
}

}  // namespace colabtrace::analyzer
