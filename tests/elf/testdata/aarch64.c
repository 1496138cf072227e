// Compiled for aarch64 (clang --target) and linked with ld.lld by elf_test's CMake.
int elftest_a64_answer(void) { return 42; }
