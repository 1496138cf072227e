// The renderers: each formats a finished ReportBuilder (its JSON document, findings and
// the run model's typed models) and computes nothing of its own.
#pragma once

#include <string>

#include "core/json.h"
#include "report/report.h"

namespace colabtrace::analyzer {

// Renderers. `color` adds ANSI colours (the CLI decides: TTY and no NO_COLOR).
std::string RenderText(const ReportBuilder& report, bool color);
std::string RenderJson(const ReportBuilder& report);
// RenderJson's text handed to `sink` in pieces as it is written (Json::DumpStreaming).
bool WriteJson(const ReportBuilder& report, const Json::Sink& sink);
std::string RenderHtml(const ReportBuilder& report);

}  // namespace colabtrace::analyzer
