#include "python/torch_snapshot.h"

#include <fstream>
#include <iterator>

namespace colabtrace::analyzer {
namespace {

uint64_t U64(const Json& j, std::string_view key) {
  const Json* v = j.Find(key);
  if (v == nullptr || !v->is_number()) return 0;
  const double d = v->number();
  if (d <= 0) return 0;
  if (d >= 1.8e19) return UINT64_MAX;
  const int64_t i = v->as_int();
  return i > 0 ? static_cast<uint64_t>(i) : static_cast<uint64_t>(d);
}

std::string Text(const Json& j, std::string_view key) {
  const Json* v = j.Find(key);
  return v != nullptr && v->is_string() ? v->str() : std::string();
}

TorchBlockState StateOf(const std::string& s) {
  if (s == "active_allocated") return TorchBlockState::kActiveAllocated;
  if (s == "active_pending_free" || s == "active_awaiting_free") return TorchBlockState::kActivePendingFree;
  if (s == "inactive") return TorchBlockState::kInactive;
  return TorchBlockState::kUnknown;
}

}  // namespace

std::optional<TorchSnapshot> ParseTorchSnapshot(std::string_view json_text, std::string path,
                                                std::string* error) {
  std::string parse_error;
  std::optional<Json> doc = Json::Parse(json_text, &parse_error);
  if (!doc || !doc->is_object()) {
    if (error) *error = path + ": not a PyTorch memory snapshot (" + (doc ? "not an object" : parse_error) + ")";
    return std::nullopt;
  }
  const Json* segments = doc->Find("segments");
  if (segments == nullptr || !segments->is_array()) {
    if (error) *error = path + ": not a PyTorch memory snapshot (no segments[])";
    return std::nullopt;
  }
  TorchSnapshot s;
  s.path = std::move(path);
  for (const Json& seg : segments->array()) {
    if (!seg.is_object()) continue;
    TorchSegment out;
    if (const Json* d = seg.Find("device"); d != nullptr && d->is_number()) out.device = d->as_int();
    out.address = U64(seg, "address");
    out.total_size = U64(seg, "total_size");
    out.allocated_size = U64(seg, "allocated_size");
    out.active_size = U64(seg, "active_size");
    out.stream = U64(seg, "stream");
    out.segment_type = Text(seg, "segment_type");
    if (const Json* blocks = seg.Find("blocks"); blocks != nullptr && blocks->is_array()) {
      for (const Json& b : blocks->array()) {
        if (!b.is_object()) continue;
        TorchBlock blk;
        blk.address = U64(b, "address");
        blk.size = U64(b, "size");
        blk.requested_size = U64(b, "requested_size");
        blk.state = StateOf(Text(b, "state"));
        if (const Json* frames = b.Find("frames"); frames != nullptr && frames->is_array()) {
          for (const Json& f : frames->array()) {
            if (!f.is_object()) continue;
            const Json* line = f.Find("line");
            blk.frames.push_back(Text(f, "filename") + ":" +
                                 std::to_string(line != nullptr ? line->as_int() : 0) + " in " +
                                 Text(f, "name"));
          }
        }
        out.blocks.push_back(std::move(blk));
      }
    }
    s.segments.push_back(std::move(out));
  }
  if (const Json* meta = doc->Find("colabtrace"); meta != nullptr && meta->is_object()) {
    s.has_oom = true;
    if (const Json* d = meta->Find("device"); d != nullptr && d->is_number()) s.oom_device = d->as_int();
    s.requested_bytes = U64(*meta, "requested_bytes");
    s.device_allocated_bytes = U64(*meta, "device_allocated_bytes");
    s.device_free_bytes = U64(*meta, "device_free_bytes");
  }
  return s;
}

std::optional<TorchSnapshot> FindTorchSnapshot(const ProcessTrace& t) {
  std::string path = t.file;
  constexpr std::string_view kExt = ".ctrace";
  if (path.size() <= kExt.size() || path.compare(path.size() - kExt.size(), kExt.size(), kExt) != 0) {
    return std::nullopt;
  }
  path.resize(path.size() - kExt.size());
  path += ".torch-snapshot.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  constexpr size_t kMaxBytes = 512u << 20;  // a snapshot with full history is large, not this large
  std::string text;
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (text.size() > kMaxBytes) return std::nullopt;
  return ParseTorchSnapshot(text, path, nullptr);
}

TorchFragmentation AnalyzeTorchSnapshot(const TorchSnapshot& s, int64_t device, uint64_t request) {
  TorchFragmentation f;
  f.device = device >= 0 ? device : (s.oom_device >= 0 ? s.oom_device : 0);
  f.request = request != 0 ? request : s.requested_bytes;
  f.device_free_bytes = s.has_oom && s.oom_device == f.device ? s.device_free_bytes : 0;
  for (const TorchSegment& seg : s.segments) {
    if (seg.device != f.device) continue;
    ++f.segments;
    f.reserved_bytes += seg.total_size;
    bool has_active = false;
    for (const TorchBlock& b : seg.blocks) has_active |= b.state != TorchBlockState::kInactive;
    for (const TorchBlock& b : seg.blocks) {
      ++f.blocks;
      if (b.state == TorchBlockState::kInactive) {
        f.inactive_bytes += b.size;
        if (b.size > f.largest_free_block) f.largest_free_block = b.size;
        if (has_active) {
          ++f.inactive_split_blocks;
          f.inactive_split_bytes += b.size;
        }
      } else {
        f.allocated_bytes += b.size;
      }
    }
  }
  f.fragmentation = f.request > 0 && f.largest_free_block < f.request &&
                    f.device_free_bytes < f.request &&
                    f.inactive_bytes + f.device_free_bytes >= f.request;
  return f;
}

Json TorchFragmentationJson(const TorchSnapshot& s, const TorchFragmentation& f) {
  Json j = Json::MakeObject();
  j["path"] = s.path;
  j["device"] = f.device;
  j["requested_bytes"] = f.request;
  j["segments"] = f.segments;
  j["blocks"] = f.blocks;
  j["reserved_bytes"] = f.reserved_bytes;
  j["allocated_bytes"] = f.allocated_bytes;
  j["inactive_bytes"] = f.inactive_bytes;
  j["largest_free_block"] = f.largest_free_block;
  j["inactive_split_blocks"] = f.inactive_split_blocks;
  j["inactive_split_bytes"] = f.inactive_split_bytes;
  j["device_free_bytes"] = f.device_free_bytes;
  j["verdict"] = !s.has_oom ? "no-oom" : f.fragmentation ? "fragmentation" : "out-of-memory";
  return j;
}

std::optional<TorchFragmentation> TorchOomAccounting(const std::optional<TorchSnapshot>& snap,
                                                     int64_t device) {
  if (!snap || !snap->has_oom || snap->oom_device != device) return std::nullopt;
  return AnalyzeTorchSnapshot(*snap, device);
}

TorchSnapshots TorchSnapshots::Build(const RunModel& run) {
  TorchSnapshots all;
  all.of_trace.reserve(run.traces().size());
  for (const ProcessTrace& t : run.traces()) all.of_trace.push_back(FindTorchSnapshot(t));
  return all;
}

}  // namespace colabtrace::analyzer
