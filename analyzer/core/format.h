// Formatting shared by rules and renderers: sizes, durations, addresses, signal and errno
// names, and the escaping of trace strings for a terminal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace colabtrace::analyzer {

std::string FormatBytes(uint64_t bytes);          // "1.5 GiB"
std::string FormatDurationNs(uint64_t ns);        // "12.3 ms"
std::string FormatHex(uint64_t v);                // "0x7f00..."
std::string SignalName(int signo);                // "SIGSEGV"
std::string ErrnoName(int e);                     // "ENOENT" ("errno N" if unknown)
// The last component of a path, trailing slashes ignored ("/a/b/" -> "b"; "/" -> "/").
std::string_view Basename(std::string_view path);
// A trace string made safe for a terminal: control characters (C0, DEL and C1, newline
// and tab included) become \n, \r, \t or \xNN, and bytes that are not valid UTF-8
// become \xNN, so argv or a path from a trace cannot move the cursor, recolour the
// terminal or break a report line. Text renderers apply it to every trace string.
std::string EscapeForTerminal(std::string_view s);
// EscapeForTerminal for preformatted multi-line text: its line breaks are kept.
std::string EscapeForTerminalKeepingLines(std::string_view s);

// The unit of a number in the report (a finding's evidence, a JSON field), told by the
// field's name. The JSON report keeps the raw number; human renderers show it by its unit.
// The naming convention every finding follows:
//   *_bytes_per_s                 bytes per second   "1.5 MiB/s"
//   *_bytes, bytes, size, *_size  bytes              "2.0 GiB"
//   *_ns (but mtime_ns)           nanoseconds: a duration, or a time since the process
//                                 started            "3.39 s"
//   address, addr, *_address, *_addr
//                                 an address         "0x7f00..."
// Anything else (counts, pids, rc, percentages, mtime_ns: a wall-clock time) has none.
enum class FieldUnit { kNone, kBytes, kBytesPerSecond, kNanoseconds, kAddress };
FieldUnit UnitOfField(std::string_view name);
// v shown in its unit ("2.0 GiB" for 2147483648 bytes); the plain number for kNone.
std::string FormatInUnit(FieldUnit unit, uint64_t v);

}  // namespace colabtrace::analyzer
