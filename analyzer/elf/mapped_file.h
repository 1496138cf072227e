// A read-only memory mapping of a whole file.
//
// MappedFile owns an mmap(PROT_READ, MAP_PRIVATE) of a regular file and unmaps it when
// destroyed. It is move-only. The bytes are untrusted; parse them with bytes.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace colabtrace::elf {

class MappedFile {
 public:
  // Maps `path` read-only. Fails when the file cannot be opened or is not a regular
  // file. An empty file maps to an empty span (no mmap call is made).
  static absl::StatusOr<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The mapped bytes; valid for the lifetime of this object (and across moves).
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  void Reset();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace colabtrace::elf
