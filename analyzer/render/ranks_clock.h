// How a job's ranks were put on one time axis, as the Ranks table's title says it (text
// and HTML alike), from dist.jobs[]'s clock and clock_uncertainty_ns.
#pragma once

#include <cstdio>
#include <string>

#include "core/json.h"

namespace colabtrace::analyzer {

// "one host", "clocks aligned by wall time", "clocks aligned by collectives, within 1.2 ms".
inline std::string ClockText(const Json& job) {
  const std::string clock = job["clock"].str();
  if (clock == "wall") return "clocks aligned by wall time";
  if (clock != "collectives") return "one host";
  char ms[32];
  std::snprintf(ms, sizeof(ms), "%.1f ms", static_cast<double>(job["clock_uncertainty_ns"].as_int()) / 1e6);
  return std::string("clocks aligned by collectives, within ") + ms;
}

}  // namespace colabtrace::analyzer
