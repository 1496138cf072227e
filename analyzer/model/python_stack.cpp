#include "model/python_stack.h"

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
