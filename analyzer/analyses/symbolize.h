// Offline symbolization of native stacks from a trace's module map.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/process_trace.h"

namespace colabtrace::analyzer {

// Turns return addresses into "function+0xoff (libfoo.so+0xoff)" lines using the
// trace's Module records and, where the file still exists, its ELF symbol tables.
// Frames outside every known module print as bare addresses.
std::vector<std::string> SymbolizeStack(const ProcessTrace& trace,
                                        const std::vector<uint64_t>& frames);

}  // namespace colabtrace::analyzer
