/* ct_step_markers MAIN THREAD: marks steps 0..MAIN-1 with colabtrace_step() on the main
 * thread, then steps 1000..1000+THREAD-1 on a second thread, and prints how many it marked.
 * Built against include/colabtrace/colabtrace.h only (no link to the shim): it must run
 * the same with and without LD_PRELOAD. */
#include <colabtrace/colabtrace.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long g_thread_steps;

static void* thread_main(void* arg) {
  (void)arg;
  for (long i = 0; i < g_thread_steps; ++i) colabtrace_step((uint64_t)(1000 + i));
  return NULL;
}

int main(int argc, char** argv) {
  const long main_steps = argc > 1 ? atol(argv[1]) : 3;
  g_thread_steps = argc > 2 ? atol(argv[2]) : 0;
  for (long i = 0; i < main_steps; ++i) colabtrace_step((uint64_t)i);
  pthread_t t;
  if (pthread_create(&t, NULL, thread_main, NULL) != 0) return 3;
  pthread_join(t, NULL);
  printf("marked %ld steps, shim %s\n", main_steps + g_thread_steps,
         colabtrace_step != 0 ? "present" : "absent");
  return 0;
}
