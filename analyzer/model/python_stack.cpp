#include "model/python_stack.h"

#include <cctype>

namespace colabtrace::analyzer {

std::vector<std::string> PythonStackFrames(const ProcessTrace& t, uint64_t id) {
  std::vector<std::string> frames;
  if (id == 0) return frames;
  const std::string_view text = t.Str(id);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) frames.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return frames;
}

bool IsProgramFrame(std::string_view frame) {
  if (frame.empty() || frame.front() == '<') return false;
  const size_t colon = frame.rfind(':', frame.find(" in "));
  const std::string_view path = frame.substr(0, colon);
  if (path.find("/site-packages/") != std::string_view::npos || path.find("/dist-packages/") != std::string_view::npos) {
    return false;
  }
  // colabtrace's own start-up hook (python/colabtrace/_startup/), wherever it is installed.
  if (path.find("/colabtrace/_startup/") != std::string_view::npos) return false;
  // The standard library: …/lib/python3.11/x.py or …/lib64/python3.11/x.py, any prefix.
  for (size_t at = path.find("/python"); at != std::string_view::npos; at = path.find("/python", at + 1)) {
    const std::string_view before = path.substr(0, at);
    if (!before.ends_with("/lib") && !before.ends_with("/lib64")) continue;
    size_t i = at + 7;
    while (i < path.size() && (std::isdigit(static_cast<unsigned char>(path[i])) || path[i] == '.')) ++i;
    if (i > at + 7 && i < path.size() && path[i] == '/') return false;
  }
  return true;
}

std::string ProgramFrame(const std::vector<std::string>& frames) {
  for (const std::string& f : frames) {
    if (IsProgramFrame(f)) return f;
  }
  return frames.empty() ? std::string() : frames.front();
}

Json PythonStackJson(const ProcessTrace& t, uint64_t id) {
  const std::vector<std::string> frames = PythonStackFrames(t, id);
  if (frames.empty()) return Json();
  Json out = Json::MakeArray();
  for (const std::string& f : frames) out.Append(f);
  return out;
}

Json LastPythonSampleJson(const ProcessTrace& t) {
  const auto& samples = t.records.PySample;
  for (auto it = samples.rbegin(); it != samples.rend(); ++it) {
    Json stack = PythonStackJson(t, it->py_stack);
    if (stack.is_null()) continue;
    Json j = Json::MakeObject();
    j["tid"] = it->tid;
    j["after_start_ns"] = it->ts >= t.start_ns() ? it->ts - t.start_ns() : 0;
    j["python_stack"] = std::move(stack);
    return j;
  }
  return Json();
}

}  // namespace colabtrace::analyzer
