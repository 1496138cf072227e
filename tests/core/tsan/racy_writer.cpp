// A deliberately racy "writer", kept out of the product: two threads append to one
// chunk through a plain (non-atomic) position, as a writer that forgot its per-thread
// chunks would. Built with -fsanitize=thread like the tsan.* tests, and registered so
// that it passes only when ThreadSanitizer reports the race: the proof that the tsan.*
// tests' check can fail (tests/core/tsan/CMakeLists.txt).
#include <cstdint>
#include <cstdio>
#include <thread>

namespace {

uint8_t g_chunk[1 << 16];
size_t g_pos = 0;  // shared, unsynchronised: the defect

void Append(uint8_t byte) {
  if (g_pos < sizeof(g_chunk)) g_chunk[g_pos++] = byte;
}

}  // namespace

int main() {
  std::thread a([] {
    for (int k = 0; k < 10000; ++k) Append(1);
  });
  std::thread b([] {
    for (int k = 0; k < 10000; ++k) Append(2);
  });
  a.join();
  b.join();
  std::printf("appended %zu bytes\n", g_pos);
  return 0;
}
