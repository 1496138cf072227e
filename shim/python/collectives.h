// torch.distributed's collectives as the Python start-up hook reports them: what the
// ctypes entry points (collectives.cpp) and the module of built-in functions
// (entry_module.cpp) both call. Async-signal-safe, lock-free, errno preserved, nothing
// recorded while nothing is recorded or when reached from inside the shim.
#pragma once

#include <cstdint>

namespace colabtrace::shim::python {

// The calling thread enters a collective: op_group is op (CollectiveOp) | group << 8;
// seq, count, dtype and where as the Collective record has them. Noted in flight (level
// 1 of the thread's notes) until its end.
void BeginCollective(uint32_t op_group, uint64_t seq, uint64_t count, uint64_t dtype, uint64_t where);

// The collective the thread entered returned (status: CollectiveStatus) after issuing
// `seqs` collectives on its group (0: unknown): one Collective record, ts the begin.
// Nothing when the thread is in none.
void EndCollective(uint32_t status, uint32_t seqs);

// True from a BeginCollective that recorded to its EndCollective: the thread is inside a
// collective, and torch's own calls from it (Work.wait() in a blocking one, the
// collectives an *_object one issues) are part of it.
bool InsideCollective();

// The String id of s in this process's trace (0: not recording, or an id past 2^31 - 1,
// which a C int cannot carry).
int InternForHook(const char* s);

}  // namespace colabtrace::shim::python
