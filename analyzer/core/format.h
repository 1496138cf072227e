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

}  // namespace colabtrace::analyzer
