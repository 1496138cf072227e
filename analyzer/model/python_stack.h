// Python stacks in traces: the text the shim records (shim/python) and its JSON form.
//
// A py_stack field (Signal, GpuAlloc, GpuFree, GpuLaunchFailed, GpuFault, GpuLaunchRing,
// PySample) is a String id whose text is one "path:line in function" per line, innermost
// first.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer {

// The frames of py_stack string `id`, innermost first; empty for 0 or an unknown id.
std::vector<std::string> PythonStackFrames(const ProcessTrace& t, uint64_t id);

// Whether a "path:line in function" frame is the program's own code: not the
// interpreter's standard library (…/lib/python3.N/…), not an installed package
// (…/site-packages/…, …/dist-packages/…), not colabtrace's own start-up hook
// (…/colabtrace/_startup/…), not code without a file ("<frozen …>", "<string>", a
// generated launcher).
bool IsProgramFrame(std::string_view frame);

// The frame that tells where in the program something happened: the innermost of the
// program's own frames (a kernel launched through PyTorch, Triton or a helper package
// names the user's line, not the library's), else the innermost frame; "" for none.
std::string ProgramFrame(const std::vector<std::string>& frames);

// The same as a JSON array of strings (the `python_stack` evidence field); null when
// the record carries no Python stack.
Json PythonStackJson(const ProcessTrace& t, uint64_t id);

// The last Python position recorded in t (its latest py_sample record):
// {"tid", "after_start_ns", "python_stack": [...]}; null when there is none. Evidence for
// proc.killed.
Json LastPythonSampleJson(const ProcessTrace& t);

}  // namespace colabtrace::analyzer
