#include "python/python_stack.h"

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

}  // namespace colabtrace::analyzer
