/* colabtrace's C API for traced programs: step markers.
 *
 *   #include <colabtrace/colabtrace.h>
 *   for (uint64_t step = 0; step < steps; ++step) {
 *     colabtrace_step(step);   // a `step` record in the trace under the shim
 *     ...
 *   }
 *
 * Header only; nothing to link. colabtrace_step is a weak reference to the function
 * libcolabtrace.so exports: under LD_PRELOAD it resolves to the shim, and without the
 * shim it stays null and the call does nothing, so the same binary runs everywhere.
 * C and C++; safe from any thread. The installed Python package ships this header too
 * (python -c "import colabtrace; print(colabtrace.include_dir())").
 */
#ifndef COLABTRACE_COLABTRACE_H_
#define COLABTRACE_COLABTRACE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by libcolabtrace.so; null when the program runs without it. */
extern void colabtrace_step(uint64_t n) __attribute__((weak));

/* The call behind colabtrace_step(n): the shim's function when it is there. */
static inline void colabtrace_step_if_traced_(uint64_t n) {
  if (colabtrace_step != 0) colabtrace_step(n);
}

/* Marks the start of step n (the program's own numbering) in the trace. A macro, so
 * that a call never reaches the null weak reference; `colabtrace_step` without
 * arguments is the weak reference itself (null without the shim). */
#define colabtrace_step(n) colabtrace_step_if_traced_(n)

#ifdef __cplusplus
}
#endif

#endif /* COLABTRACE_COLABTRACE_H_ */
