/* Calls a cudaMalloc-shaped function from a thread created in C: the thread has no
 * Python thread state, so the shim must record no Python stack for it. */
#include <pthread.h>
#include <stddef.h>

typedef int (*malloc_fn)(void**, size_t);

struct job {
  malloc_fn fn;
  size_t size;
  void* ptr;
  int rc;
};

static void* run(void* arg) {
  struct job* j = (struct job*)arg;
  j->rc = j->fn(&j->ptr, j->size);
  return NULL;
}

/* Returns the allocated pointer (NULL on failure). */
void* alloc_in_native_thread(void* fn, size_t size) {
  struct job j = {(malloc_fn)fn, size, NULL, -1};
  pthread_t t;
  if (pthread_create(&t, NULL, run, &j) != 0) return NULL;
  pthread_join(t, NULL);
  return j.rc == 0 ? j.ptr : NULL;
}
