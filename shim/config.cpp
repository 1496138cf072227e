#include "config.h"

#include <stdlib.h>

#include <cstring>

#include "raw.h"
#include "writer.h"

namespace colabtrace::shim {

Config g_config;

namespace {

constexpr int kMaxErrors = 9;
char g_errors[kMaxErrors][160];
int g_error_count = 0;

void AddError(const char* name, const char* value, const char* expected) {
  if (g_error_count >= kMaxErrors) return;
  char* e = g_errors[g_error_count++];
  size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n + 1 < sizeof(g_errors[0])) e[n++] = *s++;
  };
  put("ignoring ");
  put(name);
  put("=\"");
  put(value);
  put("\": expected ");
  put(expected);
  put("; using the default");
  e[n] = '\0';
  Say(e, /*force=*/true);
}

// Parses a whole decimal number in [0, max]; false on anything else.
bool ParseUint(const char* s, uint64_t max, uint64_t* out) {
  if (s == nullptr || *s == '\0') return false;
  uint64_t v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + static_cast<uint64_t>(*s - '0');
    if (v > max) return false;
  }
  *out = v;
  return true;
}

// Parses a boolean switch: "0"/"1" (also "false"/"true", "no"/"yes", "off"/"on").
bool ParseBool(const char* s, bool* out) {
  static const char* const kTrue[] = {"1", "true", "yes", "on"};
  static const char* const kFalse[] = {"0", "false", "no", "off"};
  for (const char* t : kTrue) {
    if (strcasecmp(s, t) == 0) return *out = true, true;
  }
  for (const char* f : kFalse) {
    if (strcasecmp(s, f) == 0) return *out = false, true;
  }
  return false;
}

void LoadBool(const char* name, bool* field) {
  const char* v = getenv(name);
  if (v != nullptr && !ParseBool(v, field)) AddError(name, v, "0 or 1");
}

// A whole number in [min, max] from `name`; `expected` says so in the error line.
void LoadUint(const char* name, uint64_t min, uint64_t max, const char* expected, uint32_t* field) {
  const char* v = getenv(name);
  uint64_t n = 0;
  if (v == nullptr) return;
  if (ParseUint(v, max, &n) && n >= min) {
    *field = static_cast<uint32_t>(n);
  } else {
    AddError(name, v, expected);
  }
}

}  // namespace

void Say(const char* msg, bool force) {
  if (!force && !g_config.verbose) return;
  char line[512];
  size_t n = 0;
  for (const char* s = "colabtrace: "; *s;) line[n++] = *s++;
  while (*msg && n + 2 < sizeof(line)) line[n++] = *msg++;
  line[n++] = '\n';
  raw::Write(2, line, n);
}

void LoadConfig() {
  g_error_count = 0;
  g_config = Config{};
  LoadBool("COLABTRACE_VERBOSE", &g_config.verbose);
  LoadBool("COLABTRACE_DISABLE", &g_config.disable);
  LoadBool("COLABTRACE_IO", &g_config.io);
  if (const char* v = getenv("COLABTRACE_OUT"); v != nullptr) {
    if (std::strlen(v) >= sizeof(g_config.out) - 64) {
      AddError("COLABTRACE_OUT", "...", "a path shorter than 960 bytes");
    } else {
      std::strcpy(g_config.out, v);
    }
  }
  if (const char* v = getenv("COLABTRACE_HOST_ROOT"); v != nullptr) {
    if (std::strlen(v) >= sizeof(g_config.host_root)) {
      AddError("COLABTRACE_HOST_ROOT", "...", "a path shorter than 512 bytes");
    } else {
      std::strcpy(g_config.host_root, std::strcmp(v, "/") == 0 ? "" : v);
    }
  }
  uint64_t n = 0;
  if (const char* v = getenv("COLABTRACE_STACKS"); v != nullptr) {
    if (ParseUint(v, kMaxStackDepth, &n)) {
      g_config.stack_depth = static_cast<int>(n);
    } else {
      AddError("COLABTRACE_STACKS", v, "a frame count from 0 to 128");
    }
  }
  if (const char* v = getenv("COLABTRACE_SAMPLE_MS"); v != nullptr) {
    if (ParseUint(v, 3600000, &n)) {
      g_config.sample_ms = static_cast<uint32_t>(n);
    } else {
      AddError("COLABTRACE_SAMPLE_MS", v, "milliseconds from 0 (off) to 3600000");
    }
  }
  LoadUint("COLABTRACE_WINDOW_S", 1, 30 * 86400, "seconds from 1 to 2592000", &g_config.window_s);
  LoadUint("COLABTRACE_WINDOW_MB", 1, kMaxWindowMb, "MiB from 1 to 4096", &g_config.window_mb);
  LoadUint("COLABTRACE_MAX_MB", kMinMaxMb, kMaxMaxMb, "MiB from 8 to 32768", &g_config.max_mb);
}

void NoteConfigErrors() {
  // Runs inside BeginTrace's ShimScope: a nested scope would never be entered.
  for (int i = 0; i < g_error_count; ++i) {
    format::ShimNote note;
    note.ts = Ticks();
    note.code = static_cast<uint64_t>(format::ShimNoteCode::kBadEnvValue);
    note.text = InternCString(g_errors[i]);
    Emit(note);
  }
}

}  // namespace colabtrace::shim
