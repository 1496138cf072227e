#include "abi/file_facts.h"

namespace colabtrace::analyzer::abi {

FileFacts& FileFactsCache::Get(const std::string& path) {
  auto it = files_.find(path);
  if (it != files_.end()) return *it->second;
  auto f = std::make_unique<FileFacts>();
  f->path = path;
  if (!path.empty() && path.front() == '/' && ::stat(path.c_str(), &f->st) == 0) {
    f->exists = true;
    if (S_ISREG(f->st.st_mode)) {
      absl::StatusOr<elf::ElfImage> image = elf::ElfImage::Open(path);
      if (image.ok()) {
        f->image.emplace(*std::move(image));
      } else {
        f->open_error = std::string(image.status().message());
      }
    } else {
      f->open_error = "not a regular file";
    }
  } else {
    f->open_error = "not found";
  }
  FileFacts& ref = *f;
  files_.emplace(path, std::move(f));
  return ref;
}

const elf::FatbinListing& FileFactsCache::Fatbin(FileFacts& f) {
  if (!f.fatbin_listed) {
    f.fatbin_listed = true;
    if (f.image) f.fatbin = elf::ListFatbinEntries(*f.image);
  }
  return f.fatbin;
}

const std::optional<elf::CudaMajor>& FileFactsCache::CudaMajor(FileFacts& f) {
  if (!f.cuda_checked) {
    f.cuda_checked = true;
    if (f.image) f.cuda = elf::DetectCudaMajor(*f.image);
  }
  return f.cuda;
}

const elf::UnregisteredFatbins& FileFactsCache::Unregistered(FileFacts& f) {
  if (!f.unregistered_scanned) {
    f.unregistered_scanned = true;
    if (f.image) f.unregistered = elf::FindUnregisteredFatbins(*f.image);
  }
  return f.unregistered;
}

}  // namespace colabtrace::analyzer::abi
