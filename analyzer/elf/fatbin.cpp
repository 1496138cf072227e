#include "elf/fatbin.h"

#include <string.h>
#include <zstd.h>

#include <algorithm>
#include <memory>
#include <variant>

#include "absl/status/status.h"
#include "elf/text.h"
#include "fmt/format.h"

namespace colabtrace::elf {
namespace {

constexpr uint64_t kContainerHeaderMin = 16;
constexpr uint64_t kEntryHeaderMin = 64;     // every header seen is 64 bytes or more
constexpr size_t kMaxEntries = size_t{1} << 20;  // libcublasLt.so.13 has 5737
constexpr uint64_t kMaxIdentifier = 4096;    // longest identifier we copy
constexpr std::string_view kNvFatbin = ".nv_fatbin";
constexpr std::string_view kNvRelFatbin = "__nv_relfatbin";

// Parses the entry whose header starts at `off`; `end` bounds the container.
// Returns the entry, or an error message.
std::variant<FatbinEntry, std::string> ParseEntry(Bytes blob, uint64_t off, uint64_t end) {
  if (end - off < kEntryHeaderMin) {
    return fmt::format("entry at {:#x}: truncated header", off);
  }
  const uint64_t header_size = LoadLE<uint32_t>(blob, off + 4);
  const uint64_t payload_size = LoadLE<uint64_t>(blob, off + 8);
  if (header_size < kEntryHeaderMin || header_size > end - off) {
    return fmt::format("entry at {:#x}: bad header size {:#x}", off, header_size);
  }
  if (payload_size > end - off - header_size) {
    return fmt::format("entry at {:#x}: payload of {:#x} bytes overruns its container", off,
                       payload_size);
  }
  const Bytes hdr = *Slice(blob, off, header_size);
  FatbinEntry e;
  e.raw_kind = LoadLE<uint16_t>(hdr, 0);
  e.kind = e.raw_kind == 1 ? FatbinKind::kPtx
           : e.raw_kind == 2 ? FatbinKind::kCubin
                             : FatbinKind::kOther;
  const uint64_t compressed_size = LoadLE<uint32_t>(hdr, 0x10);
  e.version_minor = LoadLE<uint16_t>(hdr, 0x18);
  e.version_major = LoadLE<uint16_t>(hdr, 0x1a);
  e.arch.sm = static_cast<int>(std::min<uint32_t>(LoadLE<uint32_t>(hdr, 0x1c), 99999));
  e.flags = LoadLE<uint64_t>(hdr, 0x28);
  if (e.flags & kFatbinFlagArchSpecific) e.arch.variant = ArchVariant::kArchSpecific;
  if (e.flags & kFatbinFlagFamily) e.arch.variant = ArchVariant::kFamily;
  e.debug = (e.flags & kFatbinFlagDebug) != 0;
  if (e.flags & kFatbinFlagZstd) {
    e.compression = Compression::kZstd;
  } else if (e.flags & kFatbinFlagLz4) {
    e.compression = Compression::kLz4;
  }
  if (e.compressed()) {
    if (compressed_size == 0 || compressed_size > payload_size) {
      return fmt::format("entry at {:#x}: compressed size {:#x} outside payload of {:#x}", off,
                         compressed_size, payload_size);
    }
    e.stored_size = compressed_size;
    e.uncompressed_size = LoadLE<uint64_t>(hdr, 0x38);
  } else {
    e.stored_size = e.uncompressed_size = payload_size;
  }
  const uint64_t name_off = LoadLE<uint32_t>(hdr, 0x20);
  const uint64_t name_size = LoadLE<uint32_t>(hdr, 0x24);
  if (name_off != 0 && name_size != 0 && name_size <= kMaxIdentifier) {
    if (std::optional<Bytes> name = Slice(hdr, name_off, name_size)) {
      std::string_view s = AsChars(*name);
      e.identifier = std::string(s.substr(0, s.find('\0')));
    }
  }
  e.offset = off;
  e.payload = *Slice(blob, off + header_size, e.stored_size);
  return e;
}

// Decompresses a zstd payload into at most `max_size` bytes. `expected` is the size
// from the entry header (0: unknown).
absl::StatusOr<std::string> Unzstd(Bytes in, uint64_t expected, size_t max_size) {
  static thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(),
                                                                              ZSTD_freeDCtx);
  if (expected > max_size) {
    return absl::ResourceExhaustedError(
        fmt::format("uncompressed size {} exceeds the limit {}", expected, max_size));
  }
  std::string out;
  if (expected != 0) {  // one shot into an exactly sized buffer
    out.resize(static_cast<size_t>(expected));
    const size_t n = ZSTD_decompressDCtx(dctx.get(), out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(n)) {
      return absl::DataLossError(fmt::format("zstd: {}", ZSTD_getErrorName(n)));
    }
    if (n != expected) {
      return absl::DataLossError(
          fmt::format("zstd: {} bytes decompressed, header says {}", n, expected));
    }
    return out;
  }
  // Size unknown: stream, growing the output up to max_size.
  ZSTD_DCtx_reset(dctx.get(), ZSTD_reset_session_only);
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  size_t ret = 1;  // nonzero: the frame is not finished
  while (src.pos < src.size || ret != 0) {
    const size_t used = out.size();
    if (used >= max_size) {
      return absl::ResourceExhaustedError(fmt::format("output exceeds the limit {}", max_size));
    }
    out.resize(std::min(max_size, std::max<size_t>(used * 2, 1 << 16)));
    ZSTD_outBuffer dst{out.data() + used, out.size() - used, 0};
    const size_t in_before = src.pos;
    ret = ZSTD_decompressStream(dctx.get(), &dst, &src);
    out.resize(used + dst.pos);
    if (ZSTD_isError(ret)) {
      return absl::DataLossError(fmt::format("zstd: {}", ZSTD_getErrorName(ret)));
    }
    if (dst.pos == 0 && src.pos == in_before) return absl::DataLossError("zstd: truncated frame");
  }
  return out;
}

// The text after `marker` up to the first character not in `allowed`.
std::string_view TokenAfter(std::string_view text, std::string_view marker,
                            std::string_view allowed) {
  const size_t at = text.find(marker);
  if (at == std::string_view::npos) return {};
  std::string_view rest = text.substr(at + marker.size());
  return rest.substr(0, std::min(rest.size(), rest.find_first_not_of(allowed)));
}

constexpr std::string_view kVersionChars = "0123456789.";

}  // namespace

void AppendFatbin(Bytes blob, std::string_view section, FatbinListing& listing) {
  listing.bytes += blob.size();
  uint64_t pos = 0;
  while (pos < blob.size()) {
    if (blob[pos] == 0) {  // zero padding between containers
      ++pos;
      continue;
    }
    if (LoadLE<uint32_t>(blob, pos) != kFatbinMagic) {
      listing.errors.push_back(fmt::format("{}: no fatbin magic at {:#x}", section, pos));
      return;
    }
    const std::optional<Bytes> hdr = Slice(blob, pos, kContainerHeaderMin);
    if (!hdr) {
      listing.errors.push_back(fmt::format("{}: truncated container at {:#x}", section, pos));
      return;
    }
    const uint64_t header_size = LoadLE<uint16_t>(*hdr, 6);
    uint64_t size = LoadLE<uint64_t>(*hdr, 8);
    if (header_size < kContainerHeaderMin || header_size > blob.size() - pos) {
      listing.errors.push_back(
          fmt::format("{}: container at {:#x}: bad header size {:#x}", section, pos, header_size));
      return;
    }
    const uint64_t begin = pos + header_size;
    bool truncated = false;
    if (size > blob.size() - begin) {
      listing.errors.push_back(fmt::format("{}: container at {:#x} claims {:#x} bytes, {:#x} left",
                                           section, pos, size, blob.size() - begin));
      size = blob.size() - begin;
      truncated = true;
    }
    if (listing.entries.size() >= kMaxEntries) {
      listing.errors.push_back(fmt::format("{}: more than {} entries; listing stopped", section,
                                           kMaxEntries));
      return;
    }
    const size_t container = listing.containers++;
    const uint64_t end = begin + size;
    for (uint64_t off = begin; off < end;) {
      std::variant<FatbinEntry, std::string> parsed = ParseEntry(blob, off, end);
      if (auto* err = std::get_if<std::string>(&parsed)) {
        if (!truncated) listing.errors.push_back(fmt::format("{}: {}", section, *err));
        break;  // the container's size still tells where the next one starts
      }
      FatbinEntry& e = std::get<FatbinEntry>(parsed);
      e.container = container;
      e.section = section;
      off += LoadLE<uint32_t>(blob, off + 4) + LoadLE<uint64_t>(blob, off + 8);  // checked
      listing.entries.push_back(std::move(e));
    }
    if (truncated) return;
    pos = end;
  }
}

FatbinListing ParseFatbin(Bytes blob, std::string_view section) {
  FatbinListing listing;
  AppendFatbin(blob, section, listing);
  return listing;
}

FatbinListing ListFatbinEntries(const ElfImage& image) {
  FatbinListing listing;
  listing.storage = image.storage();
  for (std::string_view name : {kNvFatbin, kNvRelFatbin}) {
    if (const Section* s = image.FindSection(name)) AppendFatbin(s->data, name, listing);
  }
  return listing;
}

namespace {

// Lists the containers whose headers are found in `data` (a section named `section`),
// skipping each match by its size; returns how many.
size_t ListContainersIn(Bytes data, std::string_view section, FatbinListing& listing) {
  static constexpr uint8_t kMagic[4] = {0x50, 0xed, 0x55, 0xba};  // kFatbinMagic, LE
  size_t n = 0;
  uint64_t pos = 0;
  while (pos + kContainerHeaderMin <= data.size()) {
    const void* hit = ::memmem(data.data() + pos, data.size() - pos, kMagic, sizeof(kMagic));
    if (hit == nullptr) break;
    const uint64_t at = static_cast<uint64_t>(static_cast<const uint8_t*>(hit) - data.data());
    if (at + kContainerHeaderMin > data.size()) break;
    const uint64_t size = LoadLE<uint64_t>(data, at + 8);
    if (LoadLE<uint16_t>(data, at + 4) == 1 && LoadLE<uint16_t>(data, at + 6) == kContainerHeaderMin &&
        size > 0 && size <= data.size() - at - kContainerHeaderMin) {
      ++n;
      AppendFatbin(data.subspan(at, kContainerHeaderMin + size), section, listing);
      pos = at + kContainerHeaderMin + size;
    } else {
      pos = at + 1;
    }
  }
  return n;
}

}  // namespace

UnregisteredFatbins FindUnregisteredFatbins(const ElfImage& image) {
  UnregisteredFatbins out;
  out.listing.storage = image.storage();
  constexpr uint32_t kShtNobits = 8;
  for (const Section& s : image.sections()) {
    if (s.type == kShtNobits || s.name == kNvFatbin || s.name == kNvRelFatbin) continue;
    if (const size_t n = ListContainersIn(s.data, s.name, out.listing); n > 0) {
      out.containers += n;
      out.sections.emplace_back(std::string(s.name), n);
    }
  }
  return out;
}

std::string DescribeUnregisteredFatbins(const UnregisteredFatbins& u) {
  std::string out;
  for (const auto& [name, n] : u.sections) {
    out += fmt::format("{}{} in {}", out.empty() ? "" : ", ", n, name.empty() ? "a nameless section" : name);
  }
  return out.empty() ? out : fmt::format("{} fatbin container{} ({})", u.containers, u.containers == 1 ? "" : "s", out);
}

absl::StatusOr<std::string> ReadEntryPayload(const FatbinEntry& entry, size_t max_size) {
  switch (entry.compression) {
    case Compression::kNone:
      if (entry.payload.size() > max_size) {
        return absl::ResourceExhaustedError(
            fmt::format("payload of {} bytes exceeds the limit {}", entry.payload.size(), max_size));
      }
      return std::string(AsChars(entry.payload));
    case Compression::kZstd:
      return Unzstd(entry.payload, entry.uncompressed_size, max_size);
    case Compression::kLz4:
      return absl::UnimplementedError("LZ4-compressed fatbin entries are not decompressed");
  }
  return absl::InternalError("unknown compression");
}

absl::StatusOr<CubinInfo> InspectCubin(std::string_view cubin) {
  const Bytes b(reinterpret_cast<const uint8_t*>(cubin.data()), cubin.size());
  constexpr uint16_t kEmCuda = 190;
  if (b.size() < 64 || cubin.substr(0, 4) != "\x7f""ELF" || b[4] != 2 || b[5] != 1 ||
      LoadLE<uint16_t>(b, 18) != kEmCuda) {
    return absl::InvalidArgumentError("not a 64-bit little-endian EM_CUDA ELF");
  }
  CubinInfo info;
  info.abi_version = b[8];
  info.e_flags = LoadLE<uint32_t>(b, 48);
  // ABI 8 (CUDA 12.8+) moved the SM from bits 0-7 to bits 8-15 of e_flags.
  info.sm = static_cast<int>(info.abi_version >= 8 ? (info.e_flags >> 8) & 0xff
                                                   : info.e_flags & 0xff);
  info.ptxas_arch = std::string(TokenAfter(cubin, "-arch ", "abcdefghijklmnopqrstuvwxyz_0123456789"));
  info.toolkit = std::string(TokenAfter(cubin, "Cuda compilation tools, release ", kVersionChars));
  return info;
}

absl::StatusOr<PtxInfo> InspectPtx(std::string_view ptx) {
  PtxInfo info;
  info.toolkit = std::string(TokenAfter(ptx, "Cuda compilation tools, release ", kVersionChars));
  for (size_t pos = 0; pos < ptx.size();) {
    const size_t eol = std::min(ptx.size(), ptx.find('\n', pos));
    std::string_view line = Trim(ptx.substr(pos, eol - pos));
    pos = eol + 1;
    if (ConsumePrefix(&line, ".version")) {
      const std::string_view v = Trim(line);
      const size_t dot = v.find('.');
      const std::optional<int> major = ParseInt(v.substr(0, dot));
      const std::optional<int> minor =
          dot == std::string_view::npos ? std::nullopt : ParseInt(v.substr(dot + 1));
      if (!major || !minor) {
        return absl::InvalidArgumentError(fmt::format("bad PTX .version '{}'", v));
      }
      info.isa_major = *major;
      info.isa_minor = *minor;
    } else if (ConsumePrefix(&line, ".target")) {
      line = Trim(line);
      const std::string_view arch = line.substr(0, std::min(line.size(), line.find_first_of(", \t")));
      absl::StatusOr<ArchSpec> spec = ParseArch(arch);
      if (!spec.ok()) return spec.status();
      info.target = spec->arch;
      break;  // .target follows .version
    }
  }
  if (!info.target) return absl::InvalidArgumentError("PTX has no .target directive");
  return info;
}

std::string_view KindName(FatbinKind kind) {
  switch (kind) {
    case FatbinKind::kCubin: return "cubin";
    case FatbinKind::kPtx: return "ptx";
    case FatbinKind::kOther: return "other";
  }
  return "other";
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kLz4: return "lz4";
    case Compression::kZstd: return "zstd";
  }
  return "none";
}

std::string DescribeArch(const FatbinEntry& e) {
  return FormatArch(e.arch, e.kind == FatbinKind::kPtx);
}

}  // namespace colabtrace::elf
