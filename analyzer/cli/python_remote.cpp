#include "cli/python_remote.h"

#include <sys/uio.h>

#include <algorithm>
#include <cstring>

namespace colabtrace::cli {
namespace {

constexpr uint64_t kObType = 8;        // PyObject.ob_type
constexpr uint64_t kVarSize = 16;      // PyVarObject.ob_size
constexpr uint64_t kBytesData = 32;    // PyBytesObject.ob_sval
constexpr int64_t kMaxNameChars = 1024;
constexpr int64_t kMaxLineTable = 1 << 20;  // bytes; a real table is far smaller
constexpr int kMaxWalk = 4096;         // frames visited, skipped ones included

// PyThreadState's list links and thread id, which PythonLayoutBlock does not carry, by
// CPython version ((major << 8) | minor). From each version's Include/cpython/pystate.h;
// checked against the installed headers by tests/hang_run/test_thread_state_layout.py.
struct ThreadStateLayout {
  uint32_t version;
  uint32_t prev, next, interp, native_thread_id;
};
constexpr ThreadStateLayout kThreadStateLayouts[] = {
    {0x030B, 0, 8, 16, 160},
    {0x030C, 0, 8, 16, 144},
    {0x030D, 0, 8, 16, 160},
    {0x030E, 0, 8, 16, 160},
    {0x030F, 0, 8, 16, 184},
};

// The location table's entry kinds (Objects/locations.md).
constexpr int kNoLocation = 15;
constexpr int kLongForm = 14;
constexpr int kNoColumns = 13;
constexpr int kOneLine0 = 10;

// A varint of the location table: 6-bit chunks, least significant first, 0x40 = more.
// Reads nothing at or past end (a cut value reads as what it has so far).
uint32_t TableVarint(const uint8_t*& p, const uint8_t* end) {
  uint32_t v = 0;
  for (int shift = 0; p < end && shift < 32; shift += 6) {
    const uint8_t b = *p++;
    v |= static_cast<uint32_t>(b & 63) << shift;
    if ((b & 64) == 0) break;
  }
  return v;
}

int TableSignedVarint(const uint8_t*& p, const uint8_t* end) {
  const uint32_t v = TableVarint(p, end);
  return (v & 1) ? -static_cast<int>(v >> 1) : static_cast<int>(v >> 1);
}

// Appends code point c as UTF-8 (lone surrogates and bad values become '?').
void AppendCodePoint(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000 && (c < 0xD800 || c > 0xDFFF)) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c >= 0x10000 && c < 0x110000) {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += '?';
  }
}

template <class T> T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

int LineOfInstruction(const uint8_t* table, size_t size, int firstlineno, int lasti) {
  if (lasti < 0) return firstlineno;
  const uint8_t* p = table;
  const uint8_t* const end = table + size;
  int line = firstlineno;
  int64_t start = 0;  // the entry's first code unit
  while (p < end) {
    const uint8_t first = *p;
    if ((first & 0x80) == 0) {  // not at an entry: the table is not what it should be
      ++p;
      continue;
    }
    const int code = (first >> 3) & 15;
    const int64_t length = (first & 7) + 1;
    const uint8_t* q = p + 1;
    int delta = 0;
    if (code == kLongForm || code == kNoColumns) {
      delta = TableSignedVarint(q, end);
    } else if (code >= kOneLine0 && code < kNoColumns) {
      delta = code - kOneLine0;
    }
    line += delta;
    if (lasti < start + length) return code == kNoLocation ? -1 : line;
    start += length;
    // The next entry starts at the next byte with bit 7 set (no field byte has it).
    for (p = p + 1; p < end && (*p & 0x80) == 0; ++p) {
    }
  }
  return -1;
}

bool RemotePython::usable() const {
  // 3.11 introduced the frame and location-table shapes walked here.
  return layout_.version >= 0x030B && layout_.code_type != 0;
}

bool RemotePython::Read(void* dst, uint64_t src, size_t n) const {
  if (src < 4096 || n == 0) return false;
  iovec local = {dst, n};
  iovec remote = {reinterpret_cast<void*>(src), n};
  return process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

void RemotePython::AppendUnicode(std::string& out, uint64_t obj) const {
  const format::PythonLayoutBlock& L = layout_;
  uint8_t hdr[128];
  if (obj == 0 || L.compact_data > sizeof(hdr) || L.unicode_state + 4 > L.compact_data ||
      L.unicode_length + 8 > L.compact_data || !Read(hdr, obj, L.compact_data)) {
    out += '?';
    return;
  }
  const uint32_t state = Load<uint32_t>(hdr + L.unicode_state);
  const unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  int64_t length = Load<int64_t>(hdr + L.unicode_length);
  if (!compact || length < 0) {
    out += '?';
    return;
  }
  length = std::min(length, kMaxNameChars);
  if (ascii) {
    std::string text(static_cast<size_t>(length), '\0');
    if (!Read(text.data(), obj + L.ascii_data, text.size())) {
      out += '?';
      return;
    }
    out += text;
    return;
  }
  if (kind != 1 && kind != 2 && kind != 4) {
    out += '?';
    return;
  }
  std::vector<uint8_t> data(static_cast<size_t>(length) * kind);
  if (!Read(data.data(), obj + L.compact_data, data.size())) {
    out += '?';
    return;
  }
  for (int64_t i = 0; i < length; ++i) {
    const uint8_t* at = data.data() + static_cast<size_t>(i) * kind;
    AppendCodePoint(out, kind == 1 ? *at : kind == 2 ? Load<uint16_t>(at) : Load<uint32_t>(at));
  }
}

int RemotePython::LineOf(uint64_t code, int lasti) const {
  const format::PythonLayoutBlock& L = layout_;
  int32_t firstlineno = 0;
  if (!Read(&firstlineno, code + L.code_firstlineno, sizeof(firstlineno))) return -1;
  uint64_t table = 0;
  int64_t size = 0;
  if (!Word(code + L.code_linetable, &table) || !Read(&size, table + kVarSize, sizeof(size)) || size < 0 ||
      size > kMaxLineTable) {
    return -1;
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0 && !Read(bytes.data(), table + kBytesData, bytes.size())) return -1;
  return LineOfInstruction(bytes.data(), bytes.size(), firstlineno, lasti);
}

std::map<uint32_t, uint64_t> RemotePython::ThreadStatesByTid(uint64_t known) const {
  std::map<uint32_t, uint64_t> out;
  const ThreadStateLayout* T = nullptr;
  for (const ThreadStateLayout& l : kThreadStateLayouts) {
    if (l.version == layout_.version) T = &l;
  }
  if (T == nullptr || known == 0) return out;
  uint64_t interp = 0;
  if (!Word(known + T->interp, &interp) || interp == 0) return out;
  // Back to the list's head, then along it. A list that changes meanwhile (a thread
  // starting or ending) may be cut short: each entry must belong to the same interpreter.
  uint64_t head = known;
  for (size_t guard = 0; guard < kMaxThreads; ++guard) {
    uint64_t prev = 0;
    if (!Word(head + T->prev, &prev) || prev == 0) break;
    head = prev;
  }
  for (uint64_t ts = head; ts != 0 && out.size() < kMaxThreads;) {
    uint64_t owner = 0, tid = 0, next = 0;
    if (!Word(ts + T->interp, &owner) || owner != interp || !Word(ts + T->native_thread_id, &tid) ||
        !Word(ts + T->next, &next)) {
      break;
    }
    if (tid != 0 && tid <= UINT32_MAX && !out.emplace(static_cast<uint32_t>(tid), ts).second) break;  // a loop
    ts = next;
  }
  return out;
}

std::string RemotePython::StackText(uint64_t thread_state) const {
  if (!usable() || thread_state == 0) return {};
  const format::PythonLayoutBlock& L = layout_;
  uint64_t frame = 0;
  if (L.frame_in_tstate) {
    if (!Word(thread_state + L.tstate_cframe, &frame)) return {};
  } else {
    uint64_t cframe = 0;
    if (!Word(thread_state + L.tstate_cframe, &cframe) || !Word(cframe + L.cframe_current_frame, &frame)) {
      return {};
    }
  }
  // The frame's fields this walk reads, as one copy.
  const size_t frame_bytes = std::max({L.frame_code + 8, L.frame_previous + 8, L.frame_prev_instr + 8,
                                       L.frame_owner + 1});
  // ... and the code object's, up to its first code unit.
  const size_t code_bytes = std::max({static_cast<size_t>(kObType) + 8, L.code_filename + 8ul,
                                      L.code_name + 8ul});
  if (frame_bytes > 256 || code_bytes > 256) return {};
  std::string text;
  size_t frames = 0;
  uint8_t fb[256], cb[256];
  for (int guard = 0; frame != 0 && frames < kMaxFrames && guard < kMaxWalk; ++guard) {
    if (!Read(fb, frame, frame_bytes)) break;
    const uint64_t code = Load<uint64_t>(fb + L.frame_code) & ~L.code_tag_bits;
    const uint64_t prev_instr = Load<uint64_t>(fb + L.frame_prev_instr);
    const int owner = static_cast<signed char>(fb[L.frame_owner]);
    frame = Load<uint64_t>(fb + L.frame_previous);
    if (L.owner_entry >= 0 && owner >= L.owner_entry) continue;  // the interpreter's own frame
    if (!Read(cb, code, code_bytes) || Load<uint64_t>(cb + kObType) != L.code_type) break;  // not code
    const uint64_t first = code + L.code_instructions;
    const int64_t units = (static_cast<int64_t>(prev_instr) - static_cast<int64_t>(first)) / 2;
    // A frame before its first instruction is being set up: CPython's tracebacks skip it.
    if (prev_instr < first || units > INT32_MAX) continue;
    std::string line;
    AppendUnicode(line, Load<uint64_t>(cb + L.code_filename));
    line += ':';
    line += std::to_string(LineOf(code, static_cast<int>(units)));
    line += " in ";
    AppendUnicode(line, Load<uint64_t>(cb + L.code_name));
    const size_t need = line.size() + (text.empty() ? 0 : 1);
    if (text.size() + need > kMaxText) break;
    if (!text.empty()) text += '\n';
    text += line;
    ++frames;
  }
  return text;
}

}  // namespace colabtrace::cli
