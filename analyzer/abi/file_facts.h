// FileFacts: what the files a trace names look like on disk now, inspected once per
// path for the whole report (colabtrace_elf: dynamic section, versions, fatbin).
//
// Everything is lazy: the ELF is opened on first use, the fatbin listed only when an
// architecture question is asked, the other sections scanned for device code only when
// the registered fatbins do not cover the GPU, and the CUDA major detected only for
// libraries that may be CUDA libraries. Which file stands for a recorded library is
// LibraryFiles' decision (library_files.h), not this cache's.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "elf/coverage.h"
#include "elf/elf_image.h"
#include "elf/fatbin.h"
#include "elf/library_family.h"

namespace colabtrace::analyzer::abi {

struct FileFacts {
  std::string path;
  bool exists = false;     // a stat of the path worked
  struct stat st {};       // when exists
  // The parsed ELF, when the file exists and is one; else open_error says why.
  std::optional<elf::ElfImage> image;
  std::string open_error;

  // Filled by FileFactsCache on request.
  bool fatbin_listed = false;
  elf::FatbinListing fatbin;
  bool cuda_checked = false;
  std::optional<elf::CudaMajor> cuda;
  bool unregistered_scanned = false;
  elf::UnregisteredFatbins unregistered;
};

class FileFactsCache {
 public:
  // The facts for `path` (stat + ELF parse on first call).
  FileFacts& Get(const std::string& path);
  // The fatbin listing of the file (empty when it has none or cannot be read).
  const elf::FatbinListing& Fatbin(FileFacts& f);
  // The CUDA major the file links against or is named for (colabtrace_elf's
  // DetectCudaMajor: never from device code).
  const std::optional<elf::CudaMajor>& CudaMajor(FileFacts& f);
  // Fatbin containers outside the file's registered fatbins (FindUnregisteredFatbins).
  const elf::UnregisteredFatbins& Unregistered(FileFacts& f);

 private:
  std::unordered_map<std::string, std::unique_ptr<FileFacts>> files_;
};

}  // namespace colabtrace::analyzer::abi
