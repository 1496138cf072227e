/* An LD_PRELOAD library that does nothing: the baseline cost of preloading anything at
 * all, next to which tools/bench_gpu/suite.py puts libcolabtrace.so. */
__attribute__((constructor)) static void bench_gpu_noop_init(void) {}
int colabtrace_bench_noop_symbol = 1;
