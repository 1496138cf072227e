// Python stacks from the interpreter's own frame structures. See python_stack.h.
//
// Layouts (offsets into CPython's private structures, x86-64 and aarch64 LP64) are
// checked against each version's headers by tests/python/test_python_layouts.py, which
// compiles offsetof() against the installed interpreter's internal headers.
#include "python_stack.h"

#include <dlfcn.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <cstdio>
#include <cstring>

#include "config.h"
#include "raw.h"
#include "real.h"
#include "writer.h"

namespace colabtrace::shim::python {

bool g_python_frames = false;

namespace {

// ---- the interpreter ----------------------------------------------------------------

// The two shapes of a thread's frames. CPython 3.11 and later keep a chain of
// _PyInterpreterFrame structs (in the thread's data stack, or a generator's), each with a
// pointer to the instruction it last started. 3.8-3.10 keep a chain of PyFrameObjects,
// each with f_lasti, the offset of the last instruction it started (an int).
enum class FrameKind : uint8_t { kInterpreterFrame, kFrameObject };

// Where CPython keeps what a stack walk needs. One entry per supported version; the
// fields with a default are those one kind of frame does not use.
struct Layout {
  uint32_t version;                 // (major << 8) | minor, e.g. 0x030B for 3.11
  FrameKind kind;
  size_t tstate_frame;              // PyThreadState.cframe (3.11, 3.12: a _PyCFrame*);
                                    // .current_frame (3.13) or .frame (3.8-3.10): the
                                    // innermost frame itself
  bool frame_in_tstate;             // tstate_frame points to the innermost frame
  size_t cframe_current_frame = 0;  // _PyCFrame.current_frame (a _PyInterpreterFrame*)
  size_t frame_code;                // _PyInterpreterFrame.f_code (3.13: f_executable);
                                    // PyFrameObject.f_code
  size_t frame_previous;            // _PyInterpreterFrame.previous; PyFrameObject.f_back
  size_t frame_position;            // _PyInterpreterFrame.prev_instr (3.13: instr_ptr), a
                                    // pointer into the code's bytecode;
                                    // PyFrameObject.f_lasti, an int
  int lasti_unit = 0;               // frame objects: bytes per f_lasti unit (3.8, 3.9: 1; 3.10: 2)
  size_t frame_owner = 0;           // _PyInterpreterFrame.owner (a char)
  size_t frame_size;                // bytes copied per frame (covers the fields above)
  size_t code_filename;             // PyCodeObject.co_filename
  size_t code_name;                 // PyCodeObject.co_name (3.11: co_qualname is later)
  size_t code_linetable;            // PyCodeObject.co_linetable (3.8, 3.9: co_lnotab; a bytes object)
  size_t code_firstlineno;          // PyCodeObject.co_firstlineno (int; for outside readers)
  size_t code_firsttraceable = 0;   // PyCodeObject._co_firsttraceable (int)
  size_t code_instructions = 0;     // PyCodeObject.co_code_adaptive (first code unit)
  size_t unicode_length;            // PyASCIIObject.length
  size_t unicode_state;             // PyASCIIObject.state (bit field)
  size_t ascii_data;                // sizeof(PyASCIIObject): compact ASCII text follows
  size_t compact_data;              // sizeof(PyCompactUnicodeObject): other compact text
  int owner_generator = 0;          // FRAME_OWNED_BY_GENERATOR
  int owner_entry = -1;             // the lowest owner of the interpreter's own frames, skipped
                                    // (3.12, 3.13: FRAME_OWNED_BY_CSTACK, an entry frame;
                                    // 3.14+: FRAME_OWNED_BY_INTERPRETER, entry and base
                                    // frames), -1: none
  uintptr_t code_tag_bits = 0;      // low bits of frame_code that are tags, not address
                                    // (3.14+: f_executable is a _PyStackRef, Py_TAG_BITS)
  bool operator==(const Layout&) const = default;
};

// From each version's Include/internal/pycore_frame.h (3.8-3.10: Include/frameobject.h,
// Include/cpython/frameobject.h), Include/cpython/pystate.h, Include/cpython/code.h and
// Include/cpython/unicodeobject.h; checked against the headers of 3.8.18, 3.9.18,
// 3.10.13, 3.11.2, 3.11.7, 3.12.1 and 3.13.0 (default builds; not the free-threaded 3.13t)
// by test_python_layouts.py, which reads these rows by field name.
// 3.8-3.11 strings still have their wstr fields, so their text starts later than 3.12's.
// 3.12: the frame's prev_instr is now its 3.13 instr_ptr; LASTI is computed the same way.
constexpr Layout kLayouts[] = {
    {.version = 0x0308, .kind = FrameKind::kFrameObject, .tstate_frame = 24, .frame_in_tstate = true,
     .frame_code = 32, .frame_previous = 24, .frame_position = 104, .lasti_unit = 1, .frame_size = 108,
     .code_filename = 104, .code_name = 112, .code_linetable = 120, .code_firstlineno = 40,
     .unicode_length = 16, .unicode_state = 32, .ascii_data = 48, .compact_data = 72},
    {.version = 0x0309, .kind = FrameKind::kFrameObject, .tstate_frame = 24, .frame_in_tstate = true,
     .frame_code = 32, .frame_previous = 24, .frame_position = 104, .lasti_unit = 1, .frame_size = 108,
     .code_filename = 104, .code_name = 112, .code_linetable = 120, .code_firstlineno = 40,
     .unicode_length = 16, .unicode_state = 32, .ascii_data = 48, .compact_data = 72},
    {.version = 0x030A, .kind = FrameKind::kFrameObject, .tstate_frame = 24, .frame_in_tstate = true,
     .frame_code = 32, .frame_previous = 24, .frame_position = 96, .lasti_unit = 2, .frame_size = 100,
     .code_filename = 104, .code_name = 112, .code_linetable = 120, .code_firstlineno = 40,
     .unicode_length = 16, .unicode_state = 32, .ascii_data = 48, .compact_data = 72},
    {.version = 0x030B, .kind = FrameKind::kInterpreterFrame, .tstate_frame = 56, .frame_in_tstate = false,
     .cframe_current_frame = 8, .frame_code = 32, .frame_previous = 48, .frame_position = 56,
     .frame_owner = 69, .frame_size = 80, .code_filename = 112, .code_name = 120, .code_linetable = 136,
     .code_firstlineno = 72, .code_firsttraceable = 168, .code_instructions = 184, .unicode_length = 16,
     .unicode_state = 32, .ascii_data = 48, .compact_data = 72, .owner_generator = 1, .owner_entry = -1,
     .code_tag_bits = 0},
    {.version = 0x030C, .kind = FrameKind::kInterpreterFrame, .tstate_frame = 56, .frame_in_tstate = false,
     .cframe_current_frame = 0, .frame_code = 0, .frame_previous = 8, .frame_position = 56,
     .frame_owner = 70, .frame_size = 80, .code_filename = 112, .code_name = 120, .code_linetable = 136,
     .code_firstlineno = 68, .code_firsttraceable = 176, .code_instructions = 192, .unicode_length = 16,
     .unicode_state = 32, .ascii_data = 40, .compact_data = 56, .owner_generator = 1, .owner_entry = 3,
     .code_tag_bits = 0},
    {.version = 0x030D, .kind = FrameKind::kInterpreterFrame, .tstate_frame = 72, .frame_in_tstate = true,
     .cframe_current_frame = 0, .frame_code = 0, .frame_previous = 8, .frame_position = 56,
     .frame_owner = 70, .frame_size = 80, .code_filename = 112, .code_name = 120, .code_linetable = 136,
     .code_firstlineno = 68, .code_firsttraceable = 184, .code_instructions = 200, .unicode_length = 16,
     .unicode_state = 32, .ascii_data = 40, .compact_data = 56, .owner_generator = 1, .owner_entry = 3,
     .code_tag_bits = 0},
};

// CPython 3.13+ describes its own structures in _PyRuntime.debug_offsets (struct
// _Py_DebugOffsets, the first member of _PyRuntimeState): a cookie, PY_VERSION_HEX, then
// offsetof() values. That struct changes shape between releases (3.14 and 3.15 add
// fields in the middle), so reading it needs the byte position of each value we use, per
// version; with it, a release needs no kLayouts row. A few facts the walk needs are not
// among the values (enum constants and tag bits), so the shape carries them too.
// Positions and constants are checked against each version's headers by
// test_python_layouts.py (3.13) and test_newest_pythons.py (3.14, 3.15, in a chroot of
// Debian's builds of them).
struct DebugOffsetsShape {
  uint32_t version;            // (major << 8) | minor
  uint32_t size;               // sizeof(_Py_DebugOffsets)
  uint32_t free_threaded;      // .free_threaded
  uint32_t current_frame;      // .thread_state.current_frame
  uint32_t frame_struct_size;  // .interpreter_frame.size
  uint32_t frame_previous;     // .interpreter_frame.previous
  uint32_t frame_executable;   // .interpreter_frame.executable
  uint32_t frame_instr_ptr;    // .interpreter_frame.instr_ptr
  uint32_t frame_owner;        // .interpreter_frame.owner
  uint32_t code_filename;      // .code_object.filename
  uint32_t code_name;          // .code_object.name
  uint32_t code_linetable;     // .code_object.linetable
  uint32_t code_firstlineno;   // .code_object.firstlineno
  uint32_t code_adaptive;      // .code_object.co_code_adaptive
  uint32_t ob_type;            // .pyobject.ob_type
  uint32_t bytes_ob_size;      // .bytes_object.ob_size
  uint32_t bytes_ob_sval;      // .bytes_object.ob_sval
  uint32_t unicode_state;      // .unicode_object.state
  uint32_t unicode_length;     // .unicode_object.length
  uint32_t unicode_ascii;      // .unicode_object.asciiobject_size
  int32_t owner_entry;         // Layout::owner_entry (an enum constant)
  uint32_t code_tag_bits;      // Layout::code_tag_bits (Py_TAG_BITS, 0 before 3.14)
};

// From Include/internal/pycore_runtime.h (3.13) and pycore_debug_offsets.h (3.14, 3.15),
// checked against the headers of 3.13.0, 3.14.10 and 3.15.2.
constexpr DebugOffsetsShape kDebugOffsetsShapes[] = {
    {.version = 0x030D, .size = 584, .free_threaded = 16, .current_frame = 184, .frame_struct_size = 224,
     .frame_previous = 232, .frame_executable = 240, .frame_instr_ptr = 248, .frame_owner = 264,
     .code_filename = 280, .code_name = 288, .code_linetable = 304, .code_firstlineno = 312,
     .code_adaptive = 344, .ob_type = 360, .bytes_ob_size = 520, .bytes_ob_sval = 528, .unicode_state = 544,
     .unicode_length = 552, .unicode_ascii = 560, .owner_entry = 3, .code_tag_bits = 0},
    {.version = 0x030E, .size = 760, .free_threaded = 16, .current_frame = 208, .frame_struct_size = 248,
     .frame_previous = 256, .frame_executable = 264, .frame_instr_ptr = 272, .frame_owner = 288,
     .code_filename = 320, .code_name = 328, .code_linetable = 344, .code_firstlineno = 352,
     .code_adaptive = 384, .ob_type = 408, .bytes_ob_size = 600, .bytes_ob_sval = 608, .unicode_state = 624,
     .unicode_length = 632, .unicode_ascii = 640, .owner_entry = 3, .code_tag_bits = 3},
    {.version = 0x030F, .size = 888, .free_threaded = 16, .current_frame = 208, .frame_struct_size = 312,
     .frame_previous = 320, .frame_executable = 328, .frame_instr_ptr = 336, .frame_owner = 352,
     .code_filename = 384, .code_name = 392, .code_linetable = 408, .code_firstlineno = 416,
     .code_adaptive = 448, .ob_type = 472, .bytes_ob_size = 696, .bytes_ob_sval = 704, .unicode_state = 720,
     .unicode_length = 728, .unicode_ascii = 736, .owner_entry = 3, .code_tag_bits = 3},
};

constexpr size_t kObType = 8;         // PyObject.ob_type
constexpr size_t kVarSize = 16;       // PyVarObject.ob_size
constexpr size_t kBytesData = 32;     // PyBytesObject.ob_sval
constexpr size_t kMaxCodeHeader = 256;
constexpr size_t kMaxNameChars = 1024;

using GetThreadStateFn = void* (*)();
using IsInitializedFn = int (*)();
using Addr2LineFn = int (*)(void*, int);

struct Interpreter {
  const Layout* layout = nullptr;
  uint32_t version = 0;  // (major << 8) | minor of the CPython in the process; 0: none found
  // A CPython whose frames no layout describes: (major << 8) | minor and its version text
  // ("3.10.13"), for the ShimNote that says so; 0 without Python or with a layout.
  uint32_t unreadable = 0;
  char version_text[24] = {};
  GetThreadStateFn this_thread_state = nullptr;
  IsInitializedFn is_initialized = nullptr;
  Addr2LineFn addr2line = nullptr;
  uintptr_t code_type = 0;   // &PyCode_Type
  uintptr_t frame_type = 0;  // &PyFrame_Type (3.8-3.10: each frame is an object of it)
  uintptr_t bytes_type = 0;  // &PyBytes_Type
  bool checked_reads = false;  // process_vm_readv works here (seccomp may forbid it)
};
Interpreter g_py;
// Built from _PyRuntime.debug_offsets (3.13+). Constant-initialized: the shim may start
// before this file's dynamic initializers run, which would then reset it.
constinit Layout g_runtime_layout = {};
int g_init_state = 0;  // 0 not yet, 1 done

void* Lookup(const char* name) {
  void* p = RealDlsym()(RTLD_DEFAULT, name);
  if (p == nullptr) dlerror();  // leave no error behind for the program to read
  return p;
}

// ---- reading memory -------------------------------------------------------------------

// Plain loads: the hot path, reading the calling thread's own live (or suspended)
// frames, which the interpreter keeps consistent.
struct DirectRead {
  static bool Read(void* dst, uintptr_t src, size_t n) {
    if (src < 4096) return false;
    std::memcpy(dst, reinterpret_cast<const void*>(src), n);
    return true;
  }
};

// Checked copies for signal handlers: process_vm_readv on ourselves fails with EFAULT
// instead of faulting. Without it (a seccomp filter), plain loads of pointers that
// passed the sanity checks, as faulthandler does.
struct CheckedRead {
  static bool Read(void* dst, uintptr_t src, size_t n) {
    if (src < 4096) return false;
    if (!g_py.checked_reads) return DirectRead::Read(dst, src, n);
    struct iovec local = {dst, n};
    struct iovec remote = {reinterpret_cast<void*>(src), n};
    const long r = raw::Syscall6(SYS_process_vm_readv, g_pid, reinterpret_cast<long>(&local), 1,
                                 reinterpret_cast<long>(&remote), 1, 0);
    return r == static_cast<long>(n);
  }
};

template <class T> T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class R> bool Word(uintptr_t at, uintptr_t* out) {
  return R::Read(out, at, sizeof(*out));
}

// The layout that _PyRuntime.debug_offsets (the bytes at d) gives, or false when this
// version's shape is unknown or the values do not make sense. The debug offsets do not
// give everything a walk needs; the rest has been the same from 3.12 to 3.15:
// _co_firsttraceable is 16 bytes before co_code_adaptive (an int, then co_extra),
// PyCompactUnicodeObject adds utf8_length and utf8 (16 bytes) to PyASCIIObject, and
// FRAME_OWNED_BY_GENERATOR is 1; the shape gives the owner of entry frames and the tag
// bits of f_executable.
bool LayoutFromDebugOffsets(const uint8_t* d, uint32_t major_minor, Layout* out) {
  const DebugOffsetsShape* shape = nullptr;
  for (const DebugOffsetsShape& s : kDebugOffsetsShapes) {
    if (s.version == major_minor) shape = &s;
  }
  if (shape == nullptr || std::memcmp(d, "xdebugpy", 8) != 0) return false;
  const auto at = [d](uint32_t pos) { return Load<uint64_t>(d + pos); };
  // The same release, a build with the GIL (free-threaded objects have a longer header),
  // and the PyObject and bytes layouts every other read here assumes.
  if (((at(8) >> 16) & 0xFFFF) != major_minor || at(shape->free_threaded) != 0 ||
      at(shape->ob_type) != kObType || at(shape->bytes_ob_size) != kVarSize ||
      at(shape->bytes_ob_sval) != kBytesData) {
    return false;
  }
  const uint64_t adaptive = at(shape->code_adaptive), ascii = at(shape->unicode_ascii);
  Layout l = {.version = major_minor, .kind = FrameKind::kInterpreterFrame,
              .tstate_frame = at(shape->current_frame), .frame_in_tstate = true,
              .frame_code = at(shape->frame_executable), .frame_previous = at(shape->frame_previous),
              .frame_position = at(shape->frame_instr_ptr), .frame_owner = at(shape->frame_owner),
              .frame_size = 0, .code_filename = at(shape->code_filename), .code_name = at(shape->code_name),
              .code_linetable = at(shape->code_linetable), .code_firstlineno = at(shape->code_firstlineno),
              .code_firsttraceable = adaptive - 16, .code_instructions = adaptive,
              .unicode_length = at(shape->unicode_length), .unicode_state = at(shape->unicode_state),
              .ascii_data = ascii, .compact_data = ascii + 16, .owner_generator = 1,
              .owner_entry = shape->owner_entry, .code_tag_bits = shape->code_tag_bits};
  // A walk copies a frame (128 bytes at most), a code object's bytes up to its
  // first code unit, and a string's header, into fixed buffers.
  l.frame_size = at(shape->frame_struct_size) < 128 ? at(shape->frame_struct_size) : 128;
  if (l.frame_owner + 1 > l.frame_size || l.frame_code + 8 > l.frame_size ||
      l.frame_previous + 8 > l.frame_size || l.frame_position + 8 > l.frame_size ||
      l.code_instructions > kMaxCodeHeader || l.code_instructions < 32 ||
      l.compact_data > 80 || l.unicode_state + 4 > l.ascii_data || l.unicode_length + 8 > l.ascii_data ||
      l.code_filename + 8 > l.code_instructions || l.code_name + 8 > l.code_instructions ||
      l.code_linetable + 8 > l.code_instructions || l.code_firstlineno + 4 > l.code_instructions) {
    return false;
  }
  *out = l;
  return true;
}

// ---- walking frames ---------------------------------------------------------------------

struct FrameRef {
  uintptr_t code;
  int offset;  // byte offset of the last instruction started in the code's bytecode, -1: none
};

// The frames one walk reads at most, entry and incomplete ones included: a stack id
// (CapturePythonStackId) hashes these, and its text is made from these, so equal hashes
// mean equal text. Twice kMaxPythonFrames: CPython 3.12+ puts an entry frame between
// Python frames wherever C code called back into Python.
constexpr int kMaxRawFrames = 2 * static_cast<int>(kMaxPythonFrames);

// The calling thread's innermost frame (a _PyInterpreterFrame or a PyFrameObject), 0 when
// it has none (no thread state, or no Python code running).
template <class R> uintptr_t InnermostFrame() {
  const Layout& L = *g_py.layout;
  const auto tstate = reinterpret_cast<uintptr_t>(g_py.this_thread_state());
  if (tstate == 0) return 0;
  uintptr_t cframe = 0, frame = 0;
  if (L.frame_in_tstate) {
    if (!Word<R>(tstate + L.tstate_frame, &frame)) return 0;
  } else if (!Word<R>(tstate + L.tstate_frame, &cframe) ||
             !Word<R>(cframe + L.cframe_current_frame, &frame)) {
    return 0;
  }
  return frame;
}

// The bytes of a code object a walk copies: its type, and for interpreter frames
// everything up to the first code unit (_co_firsttraceable is among them).
inline size_t CodeHeaderSize(const Layout& L) {
  return L.kind == FrameKind::kInterpreterFrame ? L.code_instructions : kObType + sizeof(uintptr_t);
}

// Collects up to max frames of the calling thread, innermost first, from at most max_raw
// frames read. Entry frames and incomplete ones (being set up or torn down: not yet at
// their first traceable instruction, or for a frame object not yet at its first
// instruction) are skipped, as CPython's own tracebacks do. *bad is set when a frame's
// code is not a code object, or a frame object cannot be read or is not one: the layout
// does not fit.
template <class R> size_t CollectFrames(FrameRef* out, size_t max, bool* bad = nullptr, int max_raw = 4096) {
  const Layout& L = *g_py.layout;
  const bool objects = L.kind == FrameKind::kFrameObject;
  uintptr_t frame = InnermostFrame<R>();
  size_t n = 0;
  uint8_t fb[128];
  uint8_t cb[kMaxCodeHeader];
  for (int guard = 0; frame != 0 && n < max && guard < max_raw; ++guard) {
    if (!R::Read(fb, frame, L.frame_size) || (objects && Load<uintptr_t>(fb + kObType) != g_py.frame_type)) {
      if (bad != nullptr && objects) *bad = true;  // not a frame object
      break;
    }
    const uintptr_t code = Load<uintptr_t>(fb + L.frame_code) & ~L.code_tag_bits;
    frame = Load<uintptr_t>(fb + L.frame_previous);
    const int owner = objects ? 0 : static_cast<signed char>(fb[L.frame_owner]);
    if (!objects && L.owner_entry >= 0 && owner >= L.owner_entry) continue;  // the interpreter's own
    if (!R::Read(cb, code, CodeHeaderSize(L)) || Load<uintptr_t>(cb + kObType) != g_py.code_type) {
      if (bad != nullptr) *bad = true;
      break;  // not a code object
    }
    if (objects) {
      const int lasti = Load<int>(fb + L.frame_position);
      if (lasti >= 0 && lasti <= INT32_MAX / 2) out[n++] = FrameRef{code, lasti * L.lasti_unit};
      continue;
    }
    const auto prev_instr = Load<uintptr_t>(fb + L.frame_position);
    const uintptr_t first = code + L.code_instructions;
    const int firsttraceable = Load<int>(cb + L.code_firsttraceable);
    if (owner != L.owner_generator && prev_instr < first + 2 * static_cast<uintptr_t>(firsttraceable)) {
      continue;  // incomplete frame
    }
    const intptr_t units = (static_cast<intptr_t>(prev_instr) - static_cast<intptr_t>(first)) / 2;
    out[n++] = FrameRef{code, units < 0 || units > INT32_MAX / 2 ? -1 : static_cast<int>(2 * units)};
  }
  return n;
}

// ---- text -------------------------------------------------------------------------------

struct TextBuf {
  char* p;
  size_t len;
  size_t cap;
  bool Put(const char* s, size_t n) {
    if (len + n > cap) return false;
    std::memcpy(p + len, s, n);
    len += n;
    return true;
  }
  bool PutChar(char c) { return Put(&c, 1); }
  bool PutNum(int64_t v) {
    char tmp[24];
    size_t k = 0;
    const bool neg = v < 0;
    uint64_t u = neg ? static_cast<uint64_t>(-v) : static_cast<uint64_t>(v);
    do {
      tmp[k++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (neg) tmp[k++] = '-';
    if (len + k > cap) return false;
    while (k > 0) p[len++] = tmp[--k];
    return true;
  }
  // One code point as UTF-8 (lone surrogates and bad values become '?').
  bool PutCodePoint(uint32_t c) {
    char u[4];
    size_t k;
    if (c < 0x80) {
      u[0] = static_cast<char>(c), k = 1;
    } else if (c < 0x800) {
      u[0] = static_cast<char>(0xC0 | (c >> 6)), u[1] = static_cast<char>(0x80 | (c & 0x3F)), k = 2;
    } else if (c < 0x10000 && (c < 0xD800 || c > 0xDFFF)) {
      u[0] = static_cast<char>(0xE0 | (c >> 12)), u[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      u[2] = static_cast<char>(0x80 | (c & 0x3F)), k = 3;
    } else if (c >= 0x10000 && c < 0x110000) {
      u[0] = static_cast<char>(0xF0 | (c >> 18)), u[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      u[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F)), u[3] = static_cast<char>(0x80 | (c & 0x3F));
      k = 4;
    } else {
      u[0] = '?', k = 1;
    }
    return Put(u, k);
  }
};

// Appends the text of a str object (compact strings only, which code objects' names
// and file names always are); "?" for anything else.
template <class R> bool PutUnicode(TextBuf& b, uintptr_t obj) {
  const Layout& L = *g_py.layout;
  uint8_t hdr[80];
  if (obj == 0 || !R::Read(hdr, obj, L.compact_data)) return b.PutChar('?');
  const uint32_t state = Load<uint32_t>(hdr + L.unicode_state);
  const unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  int64_t length = Load<int64_t>(hdr + L.unicode_length);
  if (!compact || length < 0) return b.PutChar('?');
  if (length > static_cast<int64_t>(kMaxNameChars)) length = kMaxNameChars;
  if (ascii) {
    if (b.len + static_cast<size_t>(length) > b.cap) return false;
    if (!R::Read(b.p + b.len, obj + L.ascii_data, static_cast<size_t>(length))) return b.PutChar('?');
    b.len += static_cast<size_t>(length);
    return true;
  }
  if (kind != 1 && kind != 2 && kind != 4) return b.PutChar('?');
  const uintptr_t data = obj + L.compact_data;
  uint8_t chunk[256];
  const size_t per = sizeof(chunk) / kind;
  for (int64_t i = 0; i < length;) {
    const size_t take = static_cast<size_t>(length - i) < per ? static_cast<size_t>(length - i) : per;
    if (!R::Read(chunk, data + static_cast<uintptr_t>(i) * kind, take * kind)) return b.PutChar('?');
    for (size_t j = 0; j < take; ++j) {
      const uint32_t c = kind == 1   ? chunk[j]
                         : kind == 2 ? Load<uint16_t>(chunk + 2 * j)
                                     : Load<uint32_t>(chunk + 4 * j);
      if (!b.PutCodePoint(c)) return false;
    }
    i += static_cast<int64_t>(take);
  }
  return true;
}

// The line of frame f. With checked reads the line table (3.8, 3.9: co_lnotab) must be a
// readable bytes object before PyCode_Addr2Line (which only reads) may walk it. Every
// version's PyCode_Addr2Line takes a byte offset.
template <class R> int LineOf(const FrameRef& f) {
  if (f.offset < 0) return -1;
  const Layout& L = *g_py.layout;
  uintptr_t table = 0, type = 0;
  int64_t size = 0;
  if (!Word<R>(f.code + L.code_linetable, &table) || !Word<R>(table + kObType, &type) ||
      type != g_py.bytes_type || !R::Read(&size, table + kVarSize, sizeof(size)) || size < 0) {
    return -1;
  }
  uint8_t last;
  if (size > 0 && !R::Read(&last, table + kBytesData + static_cast<uintptr_t>(size) - 1, 1)) return -1;
  return g_py.addr2line(reinterpret_cast<void*>(f.code), f.offset);
}

// "path:line in function", one frame per line; stops at a frame that does not fit.
template <class R> size_t FormatFrames(const FrameRef* frames, size_t n, char* out, size_t cap) {
  const Layout& L = *g_py.layout;
  TextBuf b{out, 0, cap};
  for (size_t i = 0; i < n; ++i) {
    const size_t mark = b.len;
    uintptr_t filename = 0, name = 0;
    Word<R>(frames[i].code + L.code_filename, &filename);
    Word<R>(frames[i].code + L.code_name, &name);
    const bool ok = (i == 0 || b.PutChar('\n')) && PutUnicode<R>(b, filename) && b.PutChar(':') &&
                    b.PutNum(LineOf<R>(frames[i])) && b.Put(" in ", 4) && PutUnicode<R>(b, name);
    if (!ok) {
      b.len = mark;
      break;
    }
  }
  return b.len;
}

// ---- the stack cache ----------------------------------------------------------------------

// Frame chain hash -> interned String id, so a stack seen before costs one walk, one
// hash and one probe. Each slot is one word (tag in the high half, id in the low half),
// written and read atomically, so racing threads never see a torn entry. The tag mixes
// in the trace generation: a fork child's new trace never reuses its parent's ids.
constexpr size_t kCacheSlots = 4096;
uint64_t g_cache[kCacheSlots];
int g_layout_proven = 0;  // 0 not yet, 1 the first checked walk fit, 2 it did not

// The hash of the calling thread's frame chain from `frame` outwards: each frame's
// position and link, read with plain loads (the thread's own live or suspended frames),
// kMaxRawFrames at most. Nothing else is read. An interpreter frame's position is its
// instruction pointer, which points into the code object's own bytecode, so it names
// the code and the position at once; a frame object's is its code object and f_lasti,
// folded into one word (the offset rotated into the top bits, which a user-space
// address leaves clear). Two chains at the same positions hash alike, whatever their
// frames' addresses; an entry or incomplete frame is hashed like any other (the text
// leaves it out, the same way for both). The loop's critical path is the chain of links:
// the hash is one multiply-add per frame, then one final mix.
template <FrameKind kKind> uint64_t HashChainOf(const Layout& L, uintptr_t frame) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(g_generation) << 32);
  for (int i = 0; frame >= 4096 && i < kMaxRawFrames; ++i) {
    const auto* f = reinterpret_cast<const uint8_t*>(frame);
    uint64_t position;
    if constexpr (kKind == FrameKind::kInterpreterFrame) {
      position = Load<uintptr_t>(f + L.frame_position);
    } else {
      const auto lasti = static_cast<uint64_t>(static_cast<uint32_t>(Load<int>(f + L.frame_position)));
      position = Load<uintptr_t>(f + L.frame_code) ^ ((lasti << 48) | (lasti >> 16));
    }
    h = (h + position) * 0xff51afd7ed558ccdull;
    frame = Load<uintptr_t>(f + L.frame_previous);
  }
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

uint64_t HashChain(uintptr_t frame) {
  const Layout& L = *g_py.layout;
  return L.kind == FrameKind::kInterpreterFrame ? HashChainOf<FrameKind::kInterpreterFrame>(L, frame)
                                                : HashChainOf<FrameKind::kFrameObject>(L, frame);
}

// ---- an interpreter whose frames cannot be read ----------------------------------------

// "3.10.13 (main, ...)" -> 0x030A and "3.10.13" in text; 0 when it does not start with
// MAJOR.MINOR.
uint32_t ParseVersionText(const char* v, char* text, size_t cap) {
  uint32_t major = 0, minor = 0;
  size_t i = 0;
  for (; v[i] >= '0' && v[i] <= '9' && i < 3; ++i) major = major * 10 + static_cast<uint32_t>(v[i] - '0');
  if (i == 0 || v[i] != '.') return 0;
  size_t j = ++i;
  for (; v[i] >= '0' && v[i] <= '9' && i < j + 3; ++i) minor = minor * 10 + static_cast<uint32_t>(v[i] - '0');
  if (i == j) return 0;
  size_t n = 0;
  while (v[n] != '\0' && v[n] != ' ' && n + 1 < cap) {
    text[n] = v[n];
    ++n;
  }
  text[n] = '\0';
  return (major << 8) | minor;
}

// Py_Version (3.11+): 0xMMmmppRS -> "3.13.1".
void VersionHexText(unsigned long hex, char* text, size_t cap) {
  std::snprintf(text, cap, "%lu.%lu.%lu", (hex >> 24) & 0xFF, (hex >> 16) & 0xFF, (hex >> 8) & 0xFF);
}

void EmitPythonNote(format::ShimNoteCode code) {
  format::ShimNote note;
  note.ts = Ticks();
  note.code = static_cast<uint64_t>(code);
  note.value = g_py.unreadable != 0 ? g_py.unreadable : g_py.layout != nullptr ? g_py.layout->version : 0;
  note.text = InternCString(g_py.version_text);
  Emit(note);
}

}  // namespace

bool InitPythonStacks() {
  if (__atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) != 0) return g_py.layout != nullptr;
  Interpreter py;
  uint32_t major_minor = 0;
  const auto* version = static_cast<const unsigned long*>(Lookup("Py_Version"));
  if (version != nullptr) {
    major_minor = static_cast<uint32_t>(*version >> 16) & 0xFFFF;
    VersionHexText(*version, py.version_text, sizeof(py.version_text));
  } else if (auto* get = reinterpret_cast<const char* (*)()>(Lookup("Py_GetVersion")); get != nullptr) {
    // CPython before 3.11 has no Py_Version; its Py_GetVersion formats static strings only.
    major_minor = ParseVersionText(get(), py.version_text, sizeof(py.version_text));
  }
  py.version = major_minor;
  for (const Layout& l : kLayouts) {
    if (l.version == major_minor) py.layout = &l;
  }
  // 3.13+: the interpreter's own offsets, so a version with a known debug offsets shape
  // needs no row. Where the table has a row too and the two disagree, the row (checked
  // against the headers) wins, and the first checked walk decides whether it fits.
  if (major_minor >= 0x030D) {
    const auto* runtime = static_cast<const uint8_t*>(Lookup("_PyRuntime"));
    if (runtime != nullptr && LayoutFromDebugOffsets(runtime, major_minor, &g_runtime_layout) &&
        (py.layout == nullptr || *py.layout == g_runtime_layout)) {
      py.layout = &g_runtime_layout;
    }
  }
  if (py.layout != nullptr) {
    py.this_thread_state = reinterpret_cast<GetThreadStateFn>(Lookup("PyGILState_GetThisThreadState"));
    py.addr2line = reinterpret_cast<Addr2LineFn>(Lookup("PyCode_Addr2Line"));
    py.is_initialized = reinterpret_cast<IsInitializedFn>(Lookup("Py_IsInitialized"));
    py.code_type = reinterpret_cast<uintptr_t>(Lookup("PyCode_Type"));
    py.bytes_type = reinterpret_cast<uintptr_t>(Lookup("PyBytes_Type"));
    const bool objects = py.layout->kind == FrameKind::kFrameObject;
    if (objects) py.frame_type = reinterpret_cast<uintptr_t>(Lookup("PyFrame_Type"));
    if (py.this_thread_state == nullptr || py.addr2line == nullptr || py.code_type == 0 ||
        py.bytes_type == 0 || py.is_initialized == nullptr || (objects && py.frame_type == 0)) {
      py.layout = nullptr;
    }
  }
  if (py.layout == nullptr && major_minor >= 0x0200) py.unreadable = major_minor;
  // Probe checked reads once.
  uint64_t probe = 0x5A5A, copy = 0;
  struct iovec local = {&copy, sizeof(copy)};
  struct iovec remote = {&probe, sizeof(probe)};
  py.checked_reads = raw::Syscall6(SYS_process_vm_readv, raw::Getpid(), reinterpret_cast<long>(&local), 1,
                                   reinterpret_cast<long>(&remote), 1, 0) == sizeof(copy) &&
                     copy == probe;
  g_py = py;
  __atomic_store_n(&g_init_state, 1, __ATOMIC_RELEASE);
  __atomic_store_n(&g_python_frames, g_py.layout != nullptr && g_config.stack_depth > 0,
                   __ATOMIC_RELAXED);
  return g_py.layout != nullptr;
}

uint32_t PythonVersion() {
  InitPythonStacks();
  return g_py.version;
}

// The first walk in the process uses checked reads: a layout that does not fit this
// interpreter (a build the table does not describe) turns Python stacks off instead of
// letting plain loads follow a wrong pointer.
static bool LayoutProvenHere() {
  int state = __atomic_load_n(&g_layout_proven, __ATOMIC_ACQUIRE);
  if (state != 0) return state == 1;
  FrameRef frames[kMaxPythonFrames];
  bool bad = false;
  const size_t n = CollectFrames<CheckedRead>(frames, kMaxPythonFrames, &bad);
  if (n == 0 && !bad) return false;  // no Python frame on this thread: decide later
  int expected = 0;
  if (__atomic_compare_exchange_n(&g_layout_proven, &expected, bad ? 2 : 1, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE) &&
      bad) {
    EmitPythonNote(format::ShimNoteCode::kPythonLayoutMismatch);  // once: this thread won
  }
  return __atomic_load_n(&g_layout_proven, __ATOMIC_ACQUIRE) == 1;
}

void NotePythonStacksUnavailable() {
  if (__atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) == 0) return;
  if (g_py.unreadable != 0) {
    EmitPythonNote(format::ShimNoteCode::kPythonStacksUnavailable);
  } else if (__atomic_load_n(&g_layout_proven, __ATOMIC_ACQUIRE) == 2) {
    EmitPythonNote(format::ShimNoteCode::kPythonLayoutMismatch);
  }
}

// ---- call sites ---------------------------------------------------------------------------

namespace {

// (code object, instruction, trace generation) hash -> the site's String id, one word
// per slot as in the stack cache (tag in the high half).
constexpr size_t kSiteSlots = 1024;
uint64_t g_sites[kSiteSlots];

uint64_t SiteHash(const FrameRef& f) {
  uint64_t h = (static_cast<uint64_t>(f.code) + static_cast<uint64_t>(static_cast<uint32_t>(f.offset)) *
                                                     0x9E3779B97F4A7C15ull) ^
               (static_cast<uint64_t>(g_generation) << 40);
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// "file:line in function" of frame f, file cut to its last component (os.path.basename).
size_t FormatSite(const FrameRef& f, char* out, size_t cap) {
  const Layout& L = *g_py.layout;
  TextBuf b{out, 0, cap};
  uintptr_t filename = 0, name = 0;
  Word<DirectRead>(f.code + L.code_filename, &filename);
  Word<DirectRead>(f.code + L.code_name, &name);
  if (!PutUnicode<DirectRead>(b, filename)) return 0;
  size_t start = 0;
  for (size_t i = 0; i < b.len; ++i) {
    if (out[i] == '/') start = i + 1;
  }
  std::memmove(out, out + start, b.len - start);
  b.len -= start;
  const bool ok = b.PutChar(':') && b.PutNum(LineOf<DirectRead>(f)) && b.Put(" in ", 4) &&
                  PutUnicode<DirectRead>(b, name);
  return ok ? b.len : 0;
}

__attribute__((noinline, cold)) uint64_t InternSite(const FrameRef& f, uint64_t h) {
  if (!Recording()) return 0;
  ShimScope scope;  // keeps errno
  if (!scope.entered()) return 0;
  char text[2 * kMaxNameChars + 64];
  const size_t len = FormatSite(f, text, sizeof(text));
  if (len == 0) return 0;
  const uint64_t id = InternString(std::string_view(text, len));
  if (id != 0 && id <= 0xFFFFFFFFu) {
    __atomic_store_n(&g_sites[h & (kSiteSlots - 1)], (((h >> 32) | 1) << 32) | id, __ATOMIC_RELAXED);
  }
  return id;
}

}  // namespace

bool CallSitesReadable() {
  if (g_py.layout == nullptr) return false;
  if (__atomic_load_n(&g_layout_proven, __ATOMIC_ACQUIRE) == 1) return true;
  if (!Recording()) return false;
  ShimScope scope;
  return scope.entered() && LayoutProvenHere();
}

uint64_t CallSiteId() {
  if (g_py.layout == nullptr || __atomic_load_n(&g_layout_proven, __ATOMIC_RELAXED) != 1) return 0;
  FrameRef f;
  if (CollectFrames<DirectRead>(&f, 1, nullptr, kMaxRawFrames) != 1) return 0;
  const uint64_t h = SiteHash(f);
  const uint64_t seen = __atomic_load_n(&g_sites[h & (kSiteSlots - 1)], __ATOMIC_RELAXED);
  if (__builtin_expect((seen >> 32) == ((h >> 32) | 1), 1)) return seen & 0xFFFFFFFFu;
  return InternSite(f, h);
}

namespace {

// A stack not in the cache: its text, interned, remembered under hash h. Inside a
// ShimScope.
uint64_t InternStack(uint64_t h) {
  FrameRef frames[kMaxPythonFrames];
  const size_t n = CollectFrames<DirectRead>(frames, kMaxPythonFrames, nullptr, kMaxRawFrames);
  if (n == 0) return 0;
  char text[kMaxPythonStackText];
  const size_t len = FormatFrames<DirectRead>(frames, n, text, sizeof(text));
  if (len == 0) return 0;
  const uint64_t id = InternString(std::string_view(text, len));
  if (id != 0 && id <= 0xFFFFFFFFu) {
    __atomic_store_n(&g_cache[h & (kCacheSlots - 1)], (((h >> 32) | 1) << 32) | id, __ATOMIC_RELAXED);
  }
  return id;
}

// The cached id of the stack from `frame` (hash *h), or 0.
uint64_t CachedStackId(uintptr_t frame, uint64_t* h) {
  *h = HashChain(frame);
  const uint64_t seen = __atomic_load_n(&g_cache[*h & (kCacheSlots - 1)], __ATOMIC_RELAXED);
  return (seen >> 32) == ((*h >> 32) | 1) ? seen & 0xFFFFFFFFu : 0;
}

bool StacksReadable() {
  if (__builtin_expect(g_py.layout == nullptr, 1) || g_config.stack_depth <= 0) return false;
  return __builtin_expect(__atomic_load_n(&g_layout_proven, __ATOMIC_RELAXED) == 1, 1) || LayoutProvenHere();
}

}  // namespace

namespace {

// The id of the calling thread's stack: a cached one, else intern(hash) makes it.
template <class Intern> uint64_t StackId(Intern intern) {
  const uintptr_t frame = InnermostFrame<DirectRead>();
  if (frame == 0) return 0;
  uint64_t h;
  const uint64_t id = CachedStackId(frame, &h);
  return __builtin_expect(id != 0, 1) ? id : intern(h);
}

__attribute__((noinline, cold)) uint64_t InternStackFromHook(uint64_t h) {
  if (!Recording()) return 0;
  ShimScope scope;  // keeps errno
  return scope.entered() ? InternStack(h) : 0;
}

}  // namespace

uint64_t CapturePythonStackId() { return StacksReadable() ? StackId(InternStack) : 0; }

uint64_t LaunchPythonStackId() {
  if (__builtin_expect(__atomic_load_n(&g_layout_proven, __ATOMIC_RELAXED) != 1, 0)) {
    if (g_py.layout == nullptr || g_config.stack_depth <= 0 || !Recording()) return 0;
    ShimScope scope;  // the first walk is a checked one, and may write a note
    if (!scope.entered() || !LayoutProvenHere()) return 0;
  }
  return StackId(InternStackFromHook);
}

uint64_t EmitPythonSample(uint64_t ts, bool into_window) {
  const uint64_t id = CapturePythonStackId();
  if (id == 0) return 0;
  format::PySample r;
  r.ts = ts;
  r.tid = static_cast<uint64_t>(raw::Gettid());
  r.py_stack = id;
  if (into_window) {
    EmitIntoWindow(r);
  } else {
    Emit(r);
  }
  return id;
}

size_t CapturePythonStackTextSafe(char* out, size_t cap) {
  if (g_py.layout == nullptr || out == nullptr) return 0;
  FrameRef frames[kMaxPythonFrames];
  const size_t n = CollectFrames<CheckedRead>(frames, kMaxPythonFrames);
  return n == 0 ? 0 : FormatFrames<CheckedRead>(frames, n, out, cap);
}

uintptr_t ThisThreadStateIfRunning() {
  if (g_py.layout == nullptr || g_py.is_initialized() == 0) return 0;
  return reinterpret_cast<uintptr_t>(g_py.this_thread_state());
}

bool FillLayoutBlock(format::PythonLayoutBlock* b) {
  const Layout* L = g_py.layout;
  if (L == nullptr || g_config.stack_depth <= 0 || b == nullptr) return false;
  // The outside reader (analyzer/cli/python_remote.cpp) walks interpreter frames only: it
  // would take a frame object's f_lasti for an instruction pointer, and it decodes 3.11's
  // location table, not 3.8-3.10's line tables. So for 3.8-3.10 the block stays empty
  // (version 0): `colabtrace run --hang-timeout` gives their threads no Python stack, and
  // the shim's own stacks are unaffected.
  if (L->kind != FrameKind::kInterpreterFrame) return false;
  b->frame_in_tstate = L->frame_in_tstate ? 1 : 0;
  b->tstate_cframe = static_cast<uint32_t>(L->tstate_frame);
  b->cframe_current_frame = static_cast<uint32_t>(L->cframe_current_frame);
  b->frame_code = static_cast<uint32_t>(L->frame_code);
  b->frame_previous = static_cast<uint32_t>(L->frame_previous);
  b->frame_prev_instr = static_cast<uint32_t>(L->frame_position);
  b->frame_owner = static_cast<uint32_t>(L->frame_owner);
  b->code_filename = static_cast<uint32_t>(L->code_filename);
  b->code_name = static_cast<uint32_t>(L->code_name);
  b->code_linetable = static_cast<uint32_t>(L->code_linetable);
  b->code_firstlineno = static_cast<uint32_t>(L->code_firstlineno);
  b->code_instructions = static_cast<uint32_t>(L->code_instructions);
  b->unicode_length = static_cast<uint32_t>(L->unicode_length);
  b->unicode_state = static_cast<uint32_t>(L->unicode_state);
  b->ascii_data = static_cast<uint32_t>(L->ascii_data);
  b->compact_data = static_cast<uint32_t>(L->compact_data);
  b->owner_entry = L->owner_entry;
  b->code_tag_bits = L->code_tag_bits;
  b->code_type = g_py.code_type;
  __atomic_store_n(&b->version, L->version, __ATOMIC_RELEASE);  // last: the block is whole
  return true;
}

}  // namespace colabtrace::shim::python
