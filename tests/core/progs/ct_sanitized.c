/* ct_sanitized: a race-free program that tests/core/test_guest_sanitizers.py builds with
 * -fsanitize=thread or -fsanitize=address and runs bare and under the shim.
 * A sanitizer runtime calls dlsym (the shim's hook) for every function it intercepts
 * while it initialises, before its own interceptors can reach the real functions; the
 * shim must not call any of them on that path.
 * It loads libm with dlopen and calls cos through dlsym, writes and reads back a file
 * through stdio, and runs `true` through fork and exec. Two threads first open, read and
 * close the same file at once: the shim interns the path from both (under TSan, the
 * intern arena's copies and compares went through the runtime's memcpy/memcmp
 * interceptors, which cannot see the shim's atomics, and TSan reported a race). Exits 3. */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int g_reads;

static void* ReadHostname(void* arg) {
  (void)arg;
  for (int i = 0; i < 50; ++i) {
    const int fd = open("/etc/hostname", O_RDONLY);
    char buf[64];
    if (fd >= 0 && read(fd, buf, sizeof(buf)) >= 0) __atomic_fetch_add(&g_reads, 1, __ATOMIC_RELAXED);
    if (fd >= 0) close(fd);
  }
  return NULL;
}

int main(void) {
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, ReadHostname, NULL);
  for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
  if (__atomic_load_n(&g_reads, __ATOMIC_RELAXED) != 100) return 15;
  void* libm = dlopen("libm.so.6", RTLD_NOW);
  if (libm == NULL) return 10;
  double (*cosine)(double) = (double (*)(double))dlsym(libm, "cos");
  if (cosine == NULL) return 11;
  printf("cos(0) %.1f\n", cosine(0.0));
  FILE* f = fopen("ct_sanitized.txt", "w");
  if (f == NULL) return 12;
  fprintf(f, "written\n");
  fclose(f);
  char line[32] = {0};
  f = fopen("ct_sanitized.txt", "r");
  if (f == NULL || fgets(line, sizeof(line), f) == NULL) return 13;
  fclose(f);
  printf("read %s", line);
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    execlp("true", "true", (char*)NULL);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return 14;
  printf("child %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 3;
}
