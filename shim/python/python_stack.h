// Python stacks: the `path:line in function` frames of the calling thread's Python code.
//
// The shim never links against Python. At start-up it looks the interpreter up among
// the process's dynamic symbols (the python executable's, or a loaded libpython's):
// `Py_Version` (3.11+; before it `Py_GetVersion`), `PyGILState_GetThisThreadState`,
// `PyCode_Addr2Line` and `PyCode_Type`. Frames are walked by reading the interpreter's
// own structures with a per-version layout table: CPython 3.8, 3.9 and 3.10 (a chain of
// PyFrameObjects) and 3.11, 3.12, 3.13 (a chain of _PyInterpreterFrames). The first walk
// in a process is checked, so a build the table does not fit turns Python stacks off;
// any other version, or no Python at all, gives no Python stack, never a crash.
//
// Whose frames: the calling thread's own thread state (the one CPython keeps in
// thread-specific storage for the thread), whether or not the thread holds the GIL
// right now. ctypes (and any C extension that releases the GIL around a foreign call)
// calls cudaMalloc with the GIL released; the thread's Python frames are then suspended
// at the call and cannot change until the call returns and the thread takes the GIL
// back, so they are exactly the right attribution and safe to read. Threads created in
// C with no Python thread state get no Python stack.
//
// The text is one frame per line, innermost first, at most kMaxPythonFrames frames and
// kMaxPythonStackText bytes (cut at a frame boundary).
#pragma once

#include <cstddef>
#include <cstdint>

#include "colabtrace/format/wire.h"

namespace colabtrace::shim::python {

inline constexpr size_t kMaxPythonFrames = 32;
inline constexpr size_t kMaxPythonStackText = 4096;

// Looks the interpreter up (once; later calls return at once). Cheap to call early: it
// runs from a constructor. Returns true when a supported CPython is in the process.
bool InitPythonStacks();

// (major << 8) | minor of the CPython in the process (0x030D: 3.13), as InitPythonStacks
// found it from Py_Version or Py_GetVersion(); 0 without one.
uint32_t PythonVersion();

// Writes a ShimNote (kPythonStacksUnavailable) when the process runs a CPython whose
// frames no layout describes (3.7 and older, a newer one than the table), or
// (kPythonLayoutMismatch) when the first walk found the table wrong for this build; the
// report names the version rather than leaving stacks silently empty. At start, after
// InitPythonStacks, and in a fork child. Inside a ShimScope.
void NotePythonStacksUnavailable();

// The interned String id of the calling thread's Python stack, 0 when the thread runs
// no Python code (or the interpreter is unknown). For hooks (GPU allocations): repeated
// stacks cost one hash of the frame chain and one table probe. COLABTRACE_STACKS=0 turns
// these off with the native stacks. Call inside a ShimScope.
uint64_t CapturePythonStackId();

// Writes the calling thread's Python stack text into out (no terminating NUL) and
// returns its length (0: none). Async-signal-safe: it never allocates, takes no lock and
// calls nothing in Python except PyCode_Addr2Line on a validated code object (what
// faulthandler does); every structure is first copied with a checked read, so a
// damaged interpreter state yields a shorter or empty stack instead of a second fault.
size_t CapturePythonStackTextSafe(char* out, size_t cap);

// The same id for a kernel launch, outside any ShimScope: the GPU launch ring keeps it in
// its slot, where a SIGKILL leaves it in the file, so every kernel in flight carries its
// whole Python stack. A stack seen before costs one walk of the frame chain reading two
// words per frame (instruction pointer and link; 3.8-3.10: code object, f_lasti and
// link), one hash and one probe of the process's cache; the first launch from a stack
// makes its text and interns it (cold; needs Recording). 0 when the thread runs no Python code, the interpreter is
// unknown or stacks are off.
uint64_t LaunchPythonStackId();
// True when LaunchPythonStackId can answer at all (a supported CPython is in the process
// and stacks are on): one load, for hot paths to skip the call.
extern bool g_python_frames;
inline bool PythonFramesOn() { return __atomic_load_n(&g_python_frames, __ATOMIC_RELAXED); }

// The String id of "file:line in function" for the calling thread's innermost Python
// frame, file being the last component of its code's file name (names past 1,024
// characters cut): the line that called a built-in function, as the start-up hook's
// `_where` writes it, for the hook's collectives made in C (entry_module.cpp). Cached per
// code object, instruction and trace generation: a site seen before costs one frame
// read and one probe. 0 when the thread runs no Python code, the layout is not proven
// fit (CallSitesReadable) or nothing is recorded. The caller holds the GIL.
uint64_t CallSiteId();
// True when CallSiteId can answer: a supported CPython whose layout a checked walk found
// fit (made now when none was yet, on the calling thread's own frames). Unlike the
// stacks, not turned off by COLABTRACE_STACKS=0: a call site is not a stack.
bool CallSitesReadable();

// Emits a PySample record with the calling thread's Python stack (nothing when it runs
// no Python code). The periodic resource sample calls it, on whichever program thread
// took the sample, so a process that is killed leaves its last Python position behind.
// Inside a ShimScope. into_window: the periodic sample's, written into the thread's
// event chunk (writer.h, EmitIntoWindow). Returns the py_stack String id (0: none written).
uint64_t EmitPythonSample(uint64_t ts, bool into_window);

// The calling thread's PyThreadState address once the interpreter is initialised (0: not
// a Python thread, no interpreter, or not initialised yet). One call each into CPython's
// Py_IsInitialized and PyGILState_GetThisThreadState (thread-local reads, no GIL needed).
uintptr_t ThisThreadStateIfRunning();

// Writes the interpreter's layout (the offsets an outside reader of Python stacks needs,
// `colabtrace run --hang-timeout`) into b, version last; false (b untouched) without a
// supported interpreter or with stacks off.
bool FillLayoutBlock(format::PythonLayoutBlock* b);

}  // namespace colabtrace::shim::python
