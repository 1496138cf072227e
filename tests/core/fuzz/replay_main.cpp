// Replays a libFuzzer corpus through LLVMFuzzerTestOneInput with the normal compiler,
// so that ctest checks every saved input (seeds and past crashers) on every run.
// Usage: core_fuzz_replay DIR|FILE...  Fails if no input was found.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// The targets' custom mutators call libFuzzer's; a replay never mutates, but links them.
extern "C" __attribute__((weak)) size_t LLVMFuzzerMutate(uint8_t*, size_t size, size_t) { return size; }

// The time one input may take before it counts as a hang. ASan+UBSan (COLABTRACE_SANITIZE,
// build-asan/) run the reader 3 to 4 times slower: shape-dup-stem takes 0.6 s of CPU in
// the normal build and 2 s sanitized, 6 s of wall time on a loaded machine.
// GCC says __SANITIZE_ADDRESS__; clang (build-asan's compiler where installed) says it
// through __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CT_REPLAY_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(CT_REPLAY_SANITIZED)
constexpr double kHangSeconds = 20.0;
#else
constexpr double kHangSeconds = 5.0;
#endif

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      for (const auto& e : fs::recursive_directory_iterator(argv[i], ec)) {
        if (e.is_regular_file()) inputs.push_back(e.path());
      }
    } else {
      inputs.emplace_back(argv[i]);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "core_fuzz_replay: no corpus inputs found\n");
    return 1;
  }
  for (const auto& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "core_fuzz_replay: cannot read %s\n", p.c_str());
      return 1;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto t0 = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > kHangSeconds) {
      std::fprintf(stderr, "core_fuzz_replay: %s took %.1f s (a hang?)\n", p.c_str(), s);
      return 1;
    }
  }
  std::printf("core_fuzz_replay: replayed %zu inputs\n", inputs.size());
  return 0;
}
