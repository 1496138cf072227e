// A thread per task, for the window tests (tests/core/test_thread_window.py): THREADS
// short threads, at most BATCH alive at a time (a pool made again for each batch), each
// opening, reading (the file's 4 KiB, then end of file) and closing one of NFILES files:
// four file I/O calls per thread. How a thread ends, by its index i:
//   i % 4 == 1: pthread_exit from a function it called;
//   i % 4 == 3: it reads nothing and only returns (a thread that never wrote an event);
//   else: it returns from its start routine.
// So 3 threads in 4 read. Usage: ct_threads DIR NFILES THREADS BATCH COUNTER
//   THREADS < 0: threads go on until the program is killed. COUNTER: a file of 8 bytes, mapped shared, that holds the reading threads done so far
//   (a test that kills the program reads it). Prints "threads N reads R" at the end.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static const char* g_dir;
static long g_files;
static volatile uint64_t* g_counter;

static void ReadOne(long i) {
  char path[4096], buf[8192];
  snprintf(path, sizeof(path), "%s/f%05ld", g_dir, i % g_files);
  const int fd = open(path, O_RDONLY);
  if (fd < 0) abort();
  if (read(fd, buf, sizeof(buf)) != 4096 || read(fd, buf, sizeof(buf)) != 0) abort();
  close(fd);
  __atomic_add_fetch(g_counter, 1, __ATOMIC_RELEASE);
}

__attribute__((noinline)) static void ReadAndExit(long i) {
  ReadOne(i);
  pthread_exit(NULL);
}

static void* Task(void* arg) {
  const long i = (long)(intptr_t)arg;
  switch (i % 4) {
    case 1: ReadAndExit(i); break;
    case 3: break;
    default: ReadOne(i); break;
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: ct_threads DIR NFILES THREADS BATCH COUNTER\n");
    return 2;
  }
  g_dir = argv[1];
  g_files = atol(argv[2]);
  const long threads = atol(argv[3]);
  long batch = atol(argv[4]);
  if (batch < 1 || batch > 64) batch = 64;
  const int cfd = open(argv[5], O_RDWR | O_CREAT, 0600);
  if (cfd < 0 || ftruncate(cfd, 8) != 0) return 2;
  g_counter = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
  close(cfd);
  if (g_counter == MAP_FAILED) return 2;
  *g_counter = 0;
  pthread_t th[64];
  for (long first = 0; threads < 0 || first < threads; first += batch) {
    long n = 0;
    for (; n < batch && (threads < 0 || first + n < threads); ++n) {
      if (pthread_create(&th[n], NULL, Task, (void*)(intptr_t)(first + n)) != 0) abort();
    }
    for (long k = 0; k < n; ++k) pthread_join(th[k], NULL);
  }
  printf("threads %ld reads %llu\n", threads, (unsigned long long)*g_counter);
  return 0;
}
