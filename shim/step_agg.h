// The step aggregates: every step of the run summed in the trace's step aggregate chunks
// (format/step_agg.h; docs/trace-format.md, "Step aggregate chunks"), so that the window
// may give up old Step and BatchWait records with no step figure changing.
//
// Each boundary a thread writes (a marker, an optimizer step, a recorded batch wait) is
// summed into its source's series, if this thread owns it (the first thread that wrote
// a boundary of that source; others are only counted): the step it ends, from the
// previous boundary, split as the analyzer splits it, goes into the series' sums,
// histograms and current period. Only the owner writes its series, so there is no lock
// and no atomic read-modify-write; every word is stored whole.
#pragma once

#include <cstdint>

#include "writer.h"

namespace colabtrace::shim {

// A boundary of `source` (format::StepSource, or kStepAggBatchWaits) at tick `at`, the
// calling thread's step sums at that instant being `sums`. Call inside a ShimScope that
// entered, after the boundary's record was emitted.
void StepAggBoundary(uint32_t source, uint64_t at, const ThreadState::StepSums& sums);

// Forgets every series and the calling thread's sums: a fork child starts a new trace.
void ResetStepAgg();

}  // namespace colabtrace::shim
