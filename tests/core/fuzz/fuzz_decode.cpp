// libFuzzer target for the trace reader alone: analyzer::ParseTrace, then a walk over
// every decoded table (each record's fields read once), and nothing else. fuzz_reader
// builds, renders and checks a whole report per input (a few inputs a second), so the
// reader's own code gets few tries there; here it gets thousands a second. The custom
// mutator (trace_mutator.h) keeps headers, chunks and record framing valid often enough
// to reach the decoders. Untrusted input: none of this may crash, hang or trip a
// sanitizer, and an unreadable input comes with one clear line.
//
// Built as fuzz_decode (clang++, -fsanitize=fuzzer) where fuzz_reader is, and always as
// core_fuzz_decode_replay over the same corpus (tests/core/fuzz/CMakeLists.txt).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "trace/process_trace.h"
#include "trace_mutator.h"

using colabtrace::analyzer::ParseTrace;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  auto trace = ParseTrace(std::vector<uint8_t>(data, data + size), "fuzz.ctrace", &error);
  if (!trace) {
    if (error.empty() || error.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  // Every decoded record once (packed tables decode as they are read), and every string.
  uint64_t sum = trace->start_ns() ^ trace->end_ns() ^ trace->stats.records;
#define CT_FUZZ_WALK(code, Name, text) \
  for (const auto& r : trace->records.Name) sum += r.ts;
  COLABTRACE_RECORD_TYPES(CT_FUZZ_WALK)
#undef CT_FUZZ_WALK
  for (const auto& s : trace->records.String) sum += trace->Str(s.id).size();
  volatile uint64_t sink = sum;
  (void)sink;
  return 0;
}

// Inputs of at most 64 KiB unless -max_len says otherwise: the header chunk and a record
// chunk at the shim's chunk size, or many chunks at the 4096 bytes the mutator shrinks them
// to. Without it libFuzzer takes the longest seed as its limit (up to 1 MiB: the 2.4 MB
// seed is cut there), and ran 93 inputs/s against 806 (2026-11-29, 367f87d). The seeds'
// whole bytes are still read by core_fuzz_decode_replay.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp((*argv)[i], "-max_len=", 9) == 0) return 0;
  }
  static std::vector<char*> args;
  static char max_len[] = "-max_len=65536";
  args.assign(*argv, *argv + *argc);
  args.push_back(max_len);
  args.push_back(nullptr);
  *argv = args.data();
  ++*argc;
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  if (seed % 4 != 0) {
    if (const size_t n = colabtrace::fuzz::MutateTrace(data, size, max_size, seed); n != 0) return n;
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
