// FileFacts: what the files a trace names look like on disk now, inspected once per
// path for the whole report (colabtrace_elf: dynamic section, versions, fatbin).
//
// Everything is lazy: the ELF is opened on first use, the fatbin listed only when an
// architecture question is asked, and the CUDA major detected only for libraries that
// may be CUDA libraries.
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
};

class FileFactsCache {
 public:
  // The facts for `path` (stat + ELF parse on first call).
  FileFacts& Get(const std::string& path);
  // The fatbin listing of the file (empty when it has none or cannot be read).
  const elf::FatbinListing& Fatbin(FileFacts& f);
  // The CUDA major the file was built for (colabtrace_elf's DetectCudaMajor).
  const std::optional<elf::CudaMajor>& CudaMajor(FileFacts& f);

 private:
  std::unordered_map<std::string, std::unique_ptr<FileFacts>> files_;
};

}  // namespace colabtrace::analyzer::abi
