// The shim's settings, read once from COLABTRACE_* variables at start-up.
//
// A bad value prints one line on stderr (the only thing the shim prints without
// COLABTRACE_VERBOSE=1), is noted in the trace, and the default is used.
#pragma once

#include <cstdint>

namespace colabtrace::shim {

struct Config {
  char out[1024] = {};       // COLABTRACE_OUT: a directory or a file prefix ("" = cwd)
  int stack_depth = 16;      // COLABTRACE_STACKS: native frames per GPU event; 0 = off
  bool io = true;            // COLABTRACE_IO=0 turns file I/O events off
  uint32_t sample_ms = 100;  // COLABTRACE_SAMPLE_MS; 0: samples only at start, fork, exec, exit
  bool disable = false;      // COLABTRACE_DISABLE=1 records nothing
  bool verbose = false;      // COLABTRACE_VERBOSE=1 lets the shim print
  // The window of events kept in full (wire.h, "event chunks"): the last window_s seconds
  // or window_mb MiB of them, whichever is smaller; max_mb: the hard cap of the file.
  uint32_t window_s = 600;   // COLABTRACE_WINDOW_S
  uint32_t window_mb = 256;  // COLABTRACE_WINDOW_MB
  uint32_t max_mb = 1024;    // COLABTRACE_MAX_MB
  // COLABTRACE_HOST_ROOT: the folder the host facts about CPUs and GPUs are read under
  // (its proc/, sys/ and dev/ stand for /proc, /sys and /dev; tests point it at a fake
  // machine). "" = the real root.
  char host_root[512] = {};
};

extern Config g_config;

inline constexpr int kMaxStackDepth = 128;
inline constexpr uint32_t kMaxWindowMb = 4096;   // the window's queue holds 4 GiB of chunks
inline constexpr uint32_t kMaxMaxMb = 32768;     // the shim never maps more than 32 GiB
inline constexpr uint32_t kMinMaxMb = 8;         // the first extent, and room beside it

// Parses the environment into g_config. Bad values are collected for NoteConfigErrors.
void LoadConfig();

// Writes the bad-value messages collected by LoadConfig as ShimNote records. Call inside
// a ShimScope that entered().
void NoteConfigErrors();

// Prints "colabtrace: <msg>\n" on stderr when COLABTRACE_VERBOSE=1 (or force is set).
void Say(const char* msg, bool force = false);

}  // namespace colabtrace::shim
