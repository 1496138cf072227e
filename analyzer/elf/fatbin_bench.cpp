// elf_fatbin_bench: times ElfImage::Open + ListFatbinEntries on a large CUDA library.
//
//   elf_fatbin_bench [library] [--decompress]
//
// Default library: /usr/local/cuda/lib64/libcublasLt.so.13. Reports the fatbin size,
// entry and container counts, and MB/s of fatbin scanned (best of several runs).
// --decompress also decompresses every entry and confirms its arch from the code
// (cubin e_flags and ptxas -arch note, PTX .target), reporting that throughput separately.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "elf/elf_image.h"
#include "elf/fatbin.h"
#include "fmt/format.h"

namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  using namespace colabtrace::elf;
  std::string path = "/usr/local/cuda/lib64/libcublasLt.so.13";
  bool decompress = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--decompress") == 0) {
      decompress = true;
    } else {
      path = argv[i];
    }
  }
  constexpr int kRuns = 5;
  double best = 1e9;
  FatbinListing listing;
  for (int run = 0; run < kRuns; ++run) {
    const Clock::time_point t0 = Clock::now();
    absl::StatusOr<ElfImage> image = ElfImage::Open(path);
    if (!image.ok()) {
      fmt::print(stderr, "{}\n", image.status().ToString());
      return 1;
    }
    listing = ListFatbinEntries(*image);
    best = std::min(best, Seconds(Clock::now() - t0));
  }
  const double mb = static_cast<double>(listing.bytes) / 1e6;
  fmt::print("{}: fatbin {:.1f} MB, {} containers, {} entries, {} errors\n", path, mb,
             listing.containers, listing.entries.size(), listing.errors.size());
  fmt::print("list (open + scan headers): best of {} runs {:.3f} ms = {:.0f} MB/s\n", kRuns,
             best * 1e3, mb / best);
  if (!decompress) return 0;

  listing = ListFatbinEntries(*ElfImage::Open(path));  // opened fine above; keeps it mapped
  const Clock::time_point t0 = Clock::now();
  uint64_t in_bytes = 0, out_bytes = 0;
  size_t mismatches = 0, failures = 0;
  for (const FatbinEntry& e : listing.entries) {
    absl::StatusOr<std::string> code = ReadEntryPayload(e);
    if (!code.ok()) {
      ++failures;
      continue;
    }
    in_bytes += e.stored_size;
    out_bytes += code->size();
    if (e.kind == FatbinKind::kCubin) {
      // e_flags carry the SM; the 'a'/'f' variant only shows in ptxas's "-arch" note.
      absl::StatusOr<CubinInfo> c = InspectCubin(*code);
      absl::StatusOr<ArchSpec> noted = c.ok() ? ParseArch(c->ptxas_arch) : c.status();
      if (!c.ok() || c->sm != e.arch.sm || (noted.ok() && noted->arch != e.arch)) ++mismatches;
    } else if (e.kind == FatbinKind::kPtx) {
      absl::StatusOr<PtxInfo> p = InspectPtx(*code);
      if (!p.ok() || !p->target || *p->target != e.arch) ++mismatches;
    }
  }
  const double s = Seconds(Clock::now() - t0);
  fmt::print("decompress + inspect all: {:.3f} s, {:.0f} MB/s in, {:.0f} MB/s out ({:.1f} MB "
             "decompressed), {} arch mismatches, {} failures\n",
             s, in_bytes / 1e6 / s, out_bytes / 1e6 / s, out_bytes / 1e6, mismatches, failures);
  return mismatches == 0 && failures == 0 ? 0 : 1;
}
