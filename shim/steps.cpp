// Step markers: colabtrace_step(n) writes a step record (n; its chunk names the calling
// thread), so that the analyzer can cut a run into the program's own steps.
//
// Programs call it through the weak reference in include/colabtrace/colabtrace.h (a
// no-op without the shim), Python through ctypes (python/colabtrace/__init__.py). Safe
// from any thread; a call reached from inside the shim, or while nothing is recorded,
// does nothing. errno is preserved (ShimScope).
#include <cstdint>

#include "clock.h"
#include "writer.h"

namespace colabtrace::shim {

#pragma GCC visibility push(default)
extern "C" void colabtrace_step(uint64_t n) {
  if (!Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  format::Step r;
  r.ts = Ticks();
  r.n = n;
  Emit(r);
}
#pragma GCC visibility pop

}  // namespace colabtrace::shim
