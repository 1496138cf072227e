// The HTML report page: one self-contained file. Inline SVG plots, one stylesheet, no
// script, no external resource of any kind; a Content-Security-Policy meta keeps it that
// way even if a bug let markup through (nothing can load, nothing can run). The sections
// (sections.h) come in this order: the verdict and vital signs (the first screen), the
// step plots, findings, GPU memory, host memory, I/O, libraries, processes, then the text
// report's sections folded away.
#include <algorithm>
#include <cstdio>
#include <map>

#include "render/html/escape.h"
#include "render/html/sections.h"
#include "render/text/sections.h"

namespace colabtrace::analyzer {

namespace html {
namespace {

constexpr const char* kStyle = R"css(
.ctr{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2329;background:#fff}
.ctr header{background:#1d2329;color:#fff;padding:14px 28px}.ctr header h1{margin:0;font-size:20px}
.ctr header p{margin:4px 0 0;color:#c9d1d9}
.ctr nav{padding:8px 28px;border-bottom:1px solid #d8dee4;background:#f6f8fa;position:sticky;top:0}
.ctr nav a{margin-right:16px;color:#0b5cad;text-decoration:none}
.ctr main{padding:0 28px 40px;max-width:1100px}
.ctr h2{margin:28px 0 8px;border-bottom:1px solid #d8dee4;padding-bottom:4px}
.ctr h3{margin:18px 0 6px;font-size:15px}
.ctr code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px}
.ctr pre{background:#f6f8fa;padding:8px;overflow-x:auto;font-size:12px;margin:4px 0}
.ctr .warnings p{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px;margin:6px 0}
.ctr .finding{border:1px solid #d8dee4;border-left:5px solid #57606a;border-radius:4px;padding:6px 12px;margin:10px 0}
.ctr .finding.error{border-left-color:#cf222e}.ctr .finding.warning{border-left-color:#bf8700}
.ctr .finding.info{border-left-color:#0969da}.ctr .finding h3{margin:4px 0}
.ctr .finding .summary{margin:4px 0;font-weight:600}.ctr .finding .advice{margin:4px 0}
.ctr .sev{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;color:#fff;background:#57606a}
.ctr .sev.error{background:#cf222e}.ctr .sev.warning{background:#bf8700}.ctr .sev.info{background:#0969da}
.ctr .pid{color:#57606a;font-size:13px}.ctr table{border-collapse:collapse;margin:6px 0;font-size:13px}
.ctr td,.ctr th{border:1px solid #d8dee4;padding:3px 7px;text-align:left;vertical-align:top}
.ctr th{background:#f6f8fa}.ctr table.ev{font-size:12px;margin:2px 0}
.ctr table.ev th{font-weight:600;white-space:nowrap}.ctr ol.ev{margin:2px 0;padding-left:20px}
.ctr td.path,.ctr td.cmd{font-family:ui-monospace,Menlo,monospace;font-size:12px;word-break:break-all}
.ctr tr.dup td,.ctr tr.mixed td{background:#ffebe9}.ctr tr.killed td{background:#ffebe9}
.ctr tr.failed td{background:#fff8c5}
.ctr .tag{border-radius:8px;padding:0 6px;font-size:11px;color:#fff;background:#cf222e}
.ctr .tag.mixed{background:#8250df}.ctr .more,.ctr .note{color:#57606a;font-size:13px}
.ctr .null{color:#8c959f}.ctr figure{margin:6px 0}.ctr figcaption{color:#57606a;font-size:13px}
.ctr svg{max-width:100%;height:auto;display:block}.ctr svg text{font:11px system-ui,sans-serif;fill:#1d2329}
.ctr svg .tick{fill:#57606a}.ctr svg .limit-label,.ctr svg .event-label{font-weight:600}
.ctr .plot{fill:#fbfcfd;stroke:none}.ctr .axis{stroke:#8c959f;stroke-width:1}
.ctr .grid{stroke:#eaeef2;stroke-width:1}.ctr .band{stroke:none;fill-opacity:.55}
.ctr .limit{stroke-width:1.4;stroke-dasharray:6 3}.ctr .capacity,.ctr .limit.capacity{stroke:#cf222e}
.ctr .cgroup-max,.ctr .limit.cgroup-max{stroke:#cf222e}.ctr .memtotal,.ctr .limit.memtotal{stroke:#1d2329}
.ctr .line.cgroup{stroke:#8250df;stroke-dasharray:2 2}.ctr .kill{stroke:#cf222e;stroke-width:2}
.ctr .fail.oom{fill:#cf222e}.ctr .fail.other{fill:#bf8700}.ctr .bar{fill:#0969da}.ctr .bar.small{fill:#bf8700}
.ctr .amap-seg{fill:#0969da}.ctr .amap-gap{fill:#ffb3b3}.ctr .amap-mixed{fill:#8250df}
.ctr .amap-break{fill:#fff;stroke:#8c959f;stroke-dasharray:2 2}.ctr .s0{stroke:#0969da;fill:#0969da}
.ctr .s1{stroke:#bf8700;fill:#e3a21a}.ctr .s2{stroke:#1a7f37;fill:#2da44e}
.ctr .s3{stroke:#8250df;fill:#a475f9}.ctr .s4{stroke:#cf222e;fill:#fa4549}
.ctr .s5{stroke:#1b7c83;fill:#3192aa}.ctr .s6{stroke:#9a6700;fill:#d4a72c}
.ctr .s7{stroke:#bc4c00;fill:#fb8f44}.ctr .s8{stroke:#57606a;fill:#8c959f}
.ctr .s9{stroke:#4d2d00;fill:#bf8700}.ctr polyline.line{fill:none;stroke-width:1.6}
.ctr polyline.line.rss{stroke-width:1.2;stroke-dasharray:4 2}.ctr .r0{stroke:#0550ae}.ctr .r1{stroke:#7d4e00}
.ctr .r2{stroke:#116329}.ctr .r3{stroke:#6639ba}.ctr .r4{stroke:#a40e26}.ctr .r5{stroke:#0a3069}
.ctr ul.legend{list-style:none;padding:0;margin:4px 0 8px;font-size:12px;display:flex;flex-wrap:wrap;gap:4px 16px}
.ctr .sw{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-2px;border:1px solid #8c959f}
.ctr .sw.s0{background:#0969da}.ctr .sw.s1{background:#e3a21a}.ctr .sw.s2{background:#2da44e}
.ctr .sw.s3{background:#a475f9}.ctr .sw.s4{background:#fa4549}.ctr .sw.s5{background:#3192aa}
.ctr .sw.s6{background:#d4a72c}.ctr .sw.s7{background:#fb8f44}.ctr .sw.s8{background:#8c959f}
.ctr .sw.s9{background:#bf8700}.ctr .sw.r0{background:#0550ae}.ctr .sw.r1{background:#7d4e00}
.ctr .sw.r2{background:#116329}.ctr .sw.r3{background:#6639ba}.ctr .sw.r4{background:#a40e26}
.ctr .sw.r5{background:#0a3069}
.ctr .sw.capacity,.ctr .sw.cgroup-max,.ctr .sw.kill,.ctr .sw.oom{background:#cf222e}
.ctr .sw.memtotal{background:#1d2329}.ctr .sw.cgroup{background:#8250df}.ctr .sw.other{background:#bf8700}
.ctr .sw.amap-seg{background:#0969da}.ctr .sw.amap-gap{background:#ffb3b3}
.ctr .sw.amap-mixed{background:#8250df}.ctr .sw.amap-break{background:#fff}
.ctr .verdict{margin:18px 0 8px;padding:8px 14px;border:1px solid #d8dee4;border-left:6px solid #1a7f37;border-radius:4px}
.ctr .verdict.healthy{background:#f0fff4}.ctr .verdict.warning{border-left-color:#bf8700;background:#fffbea}
.ctr .verdict.error{border-left-color:#cf222e;background:#fff5f5}
.ctr .verdict-line{font-size:18px;font-weight:600;margin:4px 0 6px}
.ctr ul.worst{list-style:none;padding:0;margin:4px 0 8px}.ctr ul.worst li{margin:3px 0}
.ctr table.vitals{margin:4px 0;background:#fff}.ctr table.vitals th{font-weight:600;white-space:nowrap}
.ctr table.vitals tr.alarm td{color:#a40e26;font-weight:600}
.ctr details.fold{border:1px solid #d8dee4;border-left:5px solid #0969da;border-radius:4px;padding:4px 12px;margin:8px 0}
.ctr details.fold>summary{cursor:pointer}.ctr details.fold .finding{margin:8px 0}
.ctr .step-wait{fill:#cf222e}.ctr .step-sync{fill:#8250df}.ctr .step-io{fill:#bf8700}.ctr .step-other{fill:#0969da}
.ctr g.warmup rect{fill-opacity:.45}.ctr .step-interrupted{fill:none;stroke:#cf222e;stroke-dasharray:3 2}
.ctr .limit.median{stroke:#1d2329}
.ctr .sw.step-wait{background:#cf222e}.ctr .sw.step-sync{background:#8250df}.ctr .sw.step-io{background:#bf8700}
.ctr .sw.step-other{background:#0969da}.ctr .sw.median{background:#1d2329}
.ctr .sw.step-interrupted{background:#fff;border:1px dashed #cf222e}
)css";

std::string Header(const PageContext& ctx, bool steps, bool ranks) {
  const Json* procs = ctx.root.Find("processes");
  const size_t n = procs != nullptr && procs->is_array() ? procs->array().size() : 0;
  char span[48];
  std::snprintf(span, sizeof(span), "%.2f s", static_cast<double>(ctx.run_end - ctx.run_start) / 1e9);
  return "<header><h1>colabtrace report</h1><p>" + std::to_string(n) + " process" + (n == 1 ? "" : "es") + ", " +
         std::to_string(ctx.report.findings().size()) + " findings, " + span +
         " traced. Plots are down-sampled and tables capped; <code>colabtrace report --format json</code> has "
         "every record.</p></header>\n<nav><a href=\"#verdict\">Verdict</a>" +
         (steps ? "<a href=\"#steps\">Steps</a>" : "") +
         "<a href=\"#findings\">Findings</a>" + (ranks ? "<a href=\"#ranks\">Ranks</a>" : "") +
         "<a href=\"#gpu\">GPU memory</a>"
         "<a href=\"#host\">Host memory</a><a href=\"#io\">File I/O</a><a href=\"#libraries\">Libraries</a>"
         "<a href=\"#processes\">Processes</a><a href=\"#text\">Text report</a></nav>\n";
}

std::string TextSections(const ReportBuilder& report) {
  std::string s = "<section id=\"text\"><h2>Text report</h2>\n";
  for (const TextSection& t : text::TextSections(report)) {
    const bool cut = t.body.size() > kMaxSectionTextBytes;
    s += "<details><summary>" + Text(t.title) + "</summary><pre>" +
         Block(cut ? std::string_view(t.body).substr(0, kMaxSectionTextBytes) : std::string_view(t.body)) + "</pre>";
    if (cut) s += "<p class=\"more\">cut at " + FormatBytes(kMaxSectionTextBytes) + ": see colabtrace report</p>";
    s += "</details>\n";
  }
  return s + "</section>\n";
}

}  // namespace

std::string MoreNote(size_t omitted, std::string_view what) {
  if (omitted == 0) return "";
  return "<p class=\"more\" data-omitted=\"" + std::to_string(omitted) + "\">" + std::to_string(omitted) + " more " +
         std::string(what) + ": see <code>colabtrace report --format json</code></p>\n";
}

uint64_t U64(const Json* v) {
  if (v == nullptr || !v->is_number()) return 0;
  const double d = v->number();
  return d <= 0 ? 0 : static_cast<uint64_t>(v->as_int());
}

std::string ProcessLabel(const Json& process) {
  std::string s = "pid " + std::to_string(process["pid"].as_int());
  std::string cmd;
  if (const Json* argv = process.Find("argv"); argv != nullptr && argv->is_array()) {
    for (const Json& a : argv->array()) {
      if (a.is_string()) cmd += (cmd.empty() ? "" : " ") + a.str();
    }
  }
  if (const Json* origin = process.Find("origin"); origin != nullptr && origin->is_string() && origin->str() == "fork") {
    cmd += " (fork)";
  }
  return cmd.empty() ? s : s + " " + Shorten(cmd, 60);
}

}  // namespace html

std::string RenderHtml(const ReportBuilder& report) {
  const Json& root = report.document();
  html::PageContext ctx{report, root, 0, 0, {}};
  const auto& traces = report.traces();
  ctx.run_start = UINT64_MAX;
  for (const ProcessTrace& t : traces) {
    ctx.run_start = std::min(ctx.run_start, t.start_ns());
    ctx.run_end = std::max(ctx.run_end, t.end_ns());
  }
  if (ctx.run_start == UINT64_MAX) ctx.run_start = 0;
  ctx.run_end = std::max(ctx.run_end, ctx.run_start + 1);
  // processes[] entries by trace file (the run wrapper's entry moved to "run").
  std::map<std::string_view, const Json*> by_file;
  if (const Json* procs = root.Find("processes"); procs != nullptr && procs->is_array()) {
    for (const Json& p : procs->array()) {
      if (const Json* f = p.Find("trace_file"); f != nullptr && f->is_string()) by_file[f->str()] = &p;
    }
  }
  for (const ProcessTrace& t : traces) {
    auto it = by_file.find(t.file);
    ctx.process_of_trace.push_back(it == by_file.end() ? nullptr : it->second);
  }

  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "img-src data:\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>colabtrace report</title>\n<style>";
  out += html::kStyle;
  const std::string steps = html::StepsSection(ctx);
  const std::string ranks = html::RanksSection(ctx);
  out += "</style></head><body style=\"margin:0\">\n<div class=\"ctr\">\n" +
         html::Header(ctx, !steps.empty(), !ranks.empty()) +
         "<main>\n";
  if (!report.warnings().empty()) {
    out += "<div class=\"warnings\">";
    for (const auto& w : report.warnings()) out += "<p>warning: " + html::Text(w) + "</p>\n";
    out += "</div>\n";
  }
  out += html::VerdictSection(ctx);
  out += steps;
  out += html::FindingsSection(ctx);
  out += ranks;
  out += html::GpuMemorySection(ctx);
  out += html::HostMemorySection(ctx);
  out += html::IoSection(ctx);
  out += html::LibrariesSection(ctx);
  out += html::ProcessesSection(ctx);
  out += html::TextSections(report);
  out += "</main></div></body></html>\n";
  return out;
}

}  // namespace colabtrace::analyzer
