// Escaping for the HTML report: every string that comes from a trace (paths, argv, env
// values, library names, finding summaries built from them) passes through here before
// it reaches the page, in element text, in attribute values and inside inline SVG.
#pragma once

#include <string>
#include <string_view>

namespace colabtrace::analyzer::html {

// A trace string as HTML text or a quoted attribute value: the five characters with a
// meaning in markup (& < > " ') become entities, and control characters and bytes that
// are not valid UTF-8 become visible \xNN (as in the text report, EscapeForTerminal), so
// the page always parses as the UTF-8 it declares.
std::string Text(std::string_view s);

// Text for multi-line strings (stacks, preformatted sections): as Text, but newlines stay.
std::string Block(std::string_view s);

// s shortened to about `max_bytes` for a label inside a plot, cut in the middle at UTF-8
// boundaries ("…" marks the cut), so both a path's root and its file name stay. Raw:
// escape the result with Text like any other trace string.
std::string Shorten(std::string_view s, size_t max_bytes);

}  // namespace colabtrace::analyzer::html
