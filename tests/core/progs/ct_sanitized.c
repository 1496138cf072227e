/* ct_sanitized: a single-threaded program that tests/core/test_guest_sanitizers.py builds
 * with -fsanitize=thread or -fsanitize=address and runs bare and under the shim.
 * A sanitizer runtime calls dlsym (the shim's hook) for every function it intercepts
 * while it initialises, before its own interceptors can reach the real functions; the
 * shim must not call any of them on that path.
 * It loads libm with dlopen and calls cos through dlsym, writes and reads back a file
 * through stdio, and runs `true` through fork and exec. Exits 3. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
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
