// Reading a traced process's Python stacks from outside, the way py-spy does: with
// process_vm_readv, which a process may use on its descendants (`colabtrace run` on the
// command's tree). The shim publishes what this needs in its trace's first state chunk:
// the CPython layout (format::PythonLayoutBlock: offsets into the interpreter's private
// structures, as the shim's own walker in shim/python/python_stack.cpp uses them) and,
// in each thread's ThreadNotes, the thread's PyThreadState address.
//
// Every read is checked: a process that exits (or frees a frame) while it is read makes
// the read fail, never the reader crash or hang; the walk then ends where it got to.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "colabtrace/format/wire.h"

namespace colabtrace::cli {

// The line of the instruction with index `lasti` (in 2-byte code units) in a CPython 3.11+
// location table (co_linetable; CPython's Objects/locations.md), whose code object starts
// at `firstlineno`. -1 for an instruction with no line, or one past the table's end;
// firstlineno for lasti < 0 (as PyCode_Addr2Line answers). Never reads past the table.
int LineOfInstruction(const uint8_t* table, size_t size, int firstlineno, int lasti);

// The Python stacks of one process, read from outside.
class RemotePython {
 public:
  // The innermost-first frame count and text size a stack is cut to.
  static constexpr size_t kMaxFrames = 64;
  static constexpr size_t kMaxText = 3584;  // at a frame boundary (a String record's size)
  static constexpr size_t kMaxThreads = 4096;

  RemotePython(pid_t pid, const format::PythonLayoutBlock& layout) : pid_(pid), layout_(layout) {}

  // Whether the layout is one this reader can walk (CPython 3.11 or later).
  bool usable() const;

  // The thread states of the interpreter that `known` (a PyThreadState address of this
  // process) belongs to, by native thread id: its list of threads, walked from known. For
  // the threads the shim never saw make a call it notes (one that only waits on a lock).
  // Empty when the version's PyThreadState layout is not known here or the list cannot be
  // read; at most kMaxThreads entries.
  std::map<uint32_t, uint64_t> ThreadStatesByTid(uint64_t known) const;

  // The stack of the thread whose PyThreadState is at `thread_state`: one
  // "path:line in function" line per frame, innermost first, at most kMaxFrames frames
  // and kMaxText bytes (cut at a frame boundary). "" when the thread has no Python frame
  // or its memory cannot be read (the process ended, or the address is stale).
  std::string StackText(uint64_t thread_state) const;

 private:
  bool Read(void* dst, uint64_t src, size_t n) const;
  bool Word(uint64_t at, uint64_t* out) const { return Read(out, at, sizeof(*out)); }
  // Appends a str object's text (compact strings only; "?" for anything else).
  void AppendUnicode(std::string& out, uint64_t obj) const;
  int LineOf(uint64_t code, int lasti) const;

  pid_t pid_;
  format::PythonLayoutBlock layout_;
};

}  // namespace colabtrace::cli
