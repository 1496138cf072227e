// A no-op LD_PRELOAD library: what preloading any library costs, with no hooks.
__attribute__((constructor)) static void noop_init(void) {}
int colabtrace_bench_noop_symbol = 1;
