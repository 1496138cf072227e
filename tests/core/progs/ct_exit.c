/* ct_exit MODE CODE: prints a line on stdout and one on stderr, then ends with CODE via
 * MODE: "exit" (exit()), "return" (return from main), "_exit", "Exit" (_Exit), or
 * "quick" (quick_exit). The stdout line is left in stdio's buffer on purpose: _exit must
 * lose it with and without the shim alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "exit";
  const int code = argc > 2 ? atoi(argv[2]) : 0;
  setenv("CUDA_EXIT_MODE", mode, 1);
  printf("out: mode=%s code=%d\n", mode, code);
  fprintf(stderr, "err: mode=%s code=%d\n", mode, code);
  if (strcmp(mode, "exit") == 0) exit(code);
  if (strcmp(mode, "_exit") == 0) _exit(code);
  if (strcmp(mode, "Exit") == 0) _Exit(code);
  if (strcmp(mode, "quick") == 0) quick_exit(code);
  return code;
}
