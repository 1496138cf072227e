#include "elf/elf_image.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "elf/mapped_file.h"
#include "fmt/format.h"

namespace colabtrace::elf {
namespace {

// ELF constants (from <elf.h>, repeated so the parser does not depend on the host's).
constexpr uint16_t kEmX86_64 = 62;
constexpr uint16_t kEmAarch64 = 183;
constexpr uint16_t kShnXindex = 0xffff;
constexpr uint32_t kShtStrtab = 3, kShtDynamic = 6, kShtNote = 7, kShtNobits = 8,
                   kShtDynsym = 11, kShtGnuVerdef = 0x6ffffffd, kShtGnuVerneed = 0x6ffffffe;
constexpr uint32_t kPtLoad = 1, kPtDynamic = 2, kPtNote = 4;
constexpr int64_t kDtNull = 0, kDtNeeded = 1, kDtHash = 4, kDtStrtab = 5, kDtSymtab = 6,
                  kDtStrsz = 10, kDtSoname = 14, kDtRpath = 15, kDtRunpath = 29,
                  kDtGnuHash = 0x6ffffef5, kDtVerdef = 0x6ffffffc, kDtVerdefnum = 0x6ffffffd,
                  kDtVerneed = 0x6ffffffe, kDtVerneednum = 0x6fffffff;
constexpr uint16_t kVerFlgBase = 1;
constexpr uint32_t kNtGnuBuildId = 3;

constexpr size_t kEhdrSize = 64, kPhdrSize = 56, kShdrSize = 64, kDynSize = 16, kSymSize = 24;
// Upper bound on entries walked in any linked table, whatever its header claims.
constexpr uint64_t kMaxChain = 1 << 16;

std::string_view MachineName(uint16_t m) {
  switch (m) {
    case 3: return "i386";
    case 8: return "MIPS";
    case 20: return "PowerPC";
    case 21: return "PowerPC64";
    case 40: return "ARM (32-bit)";
    case 190: return "NVIDIA CUDA";
    case 243: return "RISC-V";
    default: return "unknown";
  }
}

// Where the dynamic tables live, once found through sections or program headers.
struct DynTables {
  Bytes dynamic;
  Bytes strtab;  // for DT_* strings; the other tables use theirs (usually the same)
  Bytes dynsym, dynsym_strtab;
  uint64_t dynsym_count = 0;
  Bytes verdef, verdef_strtab;
  uint64_t verdef_num = 0;  // 0: walk until vd_next == 0
  Bytes verneed, verneed_strtab;
  uint64_t verneed_num = 0;
};

}  // namespace

// Fills an ElfImage from bytes_. One instance per parse.
class ElfParser {
 public:
  explicit ElfParser(ElfImage& image) : img_(image), b_(image.bytes_) {}

  absl::Status Parse() {
    if (absl::Status s = ParseHeader(); !s.ok()) return s;
    ParseSegments();
    ParseSections();
    ParseDynamic();
    ParseBuildId();
    return absl::OkStatus();
  }

 private:
  void Warn(std::string msg) { img_.warnings_.push_back(std::move(msg)); }

  absl::Status ParseHeader() {
    if (b_.size() < kEhdrSize) {
      return absl::InvalidArgumentError(
          fmt::format("file too small for an ELF header ({} bytes)", b_.size()));
    }
    if (b_[0] != 0x7f || b_[1] != 'E' || b_[2] != 'L' || b_[3] != 'F') {
      return absl::InvalidArgumentError("not an ELF file (bad magic)");
    }
    if (b_[4] != 2) return absl::InvalidArgumentError("unsupported ELF class: only 64-bit ELF");
    if (b_[5] != 1) {
      return absl::InvalidArgumentError("unsupported ELF data encoding: only little-endian");
    }
    img_.elf_type_ = LoadLE<uint16_t>(b_, 16);
    const uint16_t machine = LoadLE<uint16_t>(b_, 18);
    if (machine == kEmX86_64) {
      img_.machine_ = ElfMachine::kX86_64;
    } else if (machine == kEmAarch64) {
      img_.machine_ = ElfMachine::kAarch64;
    } else {
      return absl::InvalidArgumentError(fmt::format(
          "unsupported ELF machine {} ({}): only x86-64 and aarch64", machine, MachineName(machine)));
    }
    return absl::OkStatus();
  }

  void ParseSegments() {
    const uint64_t phoff = LoadLE<uint64_t>(b_, 32);
    const uint16_t entsize = LoadLE<uint16_t>(b_, 54);
    const uint16_t phnum = LoadLE<uint16_t>(b_, 56);
    if (phoff == 0 || phnum == 0) return;
    if (entsize < kPhdrSize) {
      Warn(fmt::format("program header entry size {} < {}; program headers ignored", entsize,
                       kPhdrSize));
      return;
    }
    for (uint64_t i = 0; i < phnum; ++i) {
      const std::optional<Bytes> ph = Slice(b_, phoff + i * entsize, kPhdrSize);
      if (!ph) {
        Warn(fmt::format("program header table truncated at entry {} of {}", i, phnum));
        return;
      }
      img_.segments_.push_back(Segment{LoadLE<uint32_t>(*ph, 0), LoadLE<uint32_t>(*ph, 4),
                                       LoadLE<uint64_t>(*ph, 8), LoadLE<uint64_t>(*ph, 16),
                                       LoadLE<uint64_t>(*ph, 32), LoadLE<uint64_t>(*ph, 40)});
    }
  }

  void ParseSections() {
    const uint64_t shoff = LoadLE<uint64_t>(b_, 40);
    const uint16_t entsize = LoadLE<uint16_t>(b_, 58);
    uint64_t shnum = LoadLE<uint16_t>(b_, 60);
    uint32_t shstrndx = LoadLE<uint16_t>(b_, 62);
    if (shoff == 0) return;
    if (entsize < kShdrSize) {
      Warn(fmt::format("section header entry size {} < {}; section headers ignored", entsize,
                       kShdrSize));
      return;
    }
    const std::optional<Bytes> sh0 = Slice(b_, shoff, kShdrSize);
    if (!sh0) {
      Warn("section header table lies outside the file; section headers ignored");
      return;
    }
    if (shnum == 0) shnum = LoadLE<uint64_t>(*sh0, 32);      // more than 0xff00 sections
    if (shstrndx == kShnXindex) shstrndx = LoadLE<uint32_t>(*sh0, 40);
    const uint64_t fit = (b_.size() - shoff) / entsize;  // shoff <= size, checked above
    if (shnum > fit) {
      Warn(fmt::format("section header table truncated: {} of {} entries fit", fit, shnum));
      shnum = fit;
    }
    img_.sections_.reserve(static_cast<size_t>(shnum));
    for (uint64_t i = 0; i < shnum; ++i) {
      const Bytes sh = *Slice(b_, shoff + i * entsize, kShdrSize);
      Section s;
      s.type = LoadLE<uint32_t>(sh, 4);
      s.flags = LoadLE<uint64_t>(sh, 8);
      s.addr = LoadLE<uint64_t>(sh, 16);
      s.offset = LoadLE<uint64_t>(sh, 24);
      s.size = LoadLE<uint64_t>(sh, 32);
      s.link = LoadLE<uint32_t>(sh, 40);
      s.info = LoadLE<uint32_t>(sh, 44);
      s.entsize = LoadLE<uint64_t>(sh, 56);
      if (s.type != kShtNobits && s.type != 0) {
        if (std::optional<Bytes> data = Slice(b_, s.offset, s.size)) {
          s.data = *data;
        } else {
          Warn(fmt::format("section {} [{:#x}, +{:#x}) lies outside the file", i, s.offset,
                           s.size));
        }
      }
      img_.sections_.push_back(s);
    }
    // Names, once every section (including .shstrtab) is known.
    if (shstrndx >= img_.sections_.size()) {
      if (!img_.sections_.empty()) Warn("section name string table index out of range");
      return;
    }
    const Bytes names = img_.sections_[shstrndx].data;
    for (uint64_t i = 0; i < shnum; ++i) {
      const uint32_t name_off = LoadLE<uint32_t>(*Slice(b_, shoff + i * entsize, kShdrSize), 0);
      img_.sections_[i].name = CString(names, name_off).value_or("");
    }
  }

  // The bytes of the section linked from `s` (sh_link), or `fallback`.
  Bytes LinkedData(const Section& s, Bytes fallback) const {
    if (s.link < img_.sections_.size() && img_.sections_[s.link].type == kShtStrtab) {
      return img_.sections_[s.link].data;
    }
    return fallback;
  }

  const Section* SectionOfType(uint32_t type) const {
    for (const Section& s : img_.sections_) {
      if (s.type == type && !s.data.empty()) return &s;
    }
    return nullptr;
  }

  // The file bytes from virtual address `vaddr` to the end of the PT_LOAD segment's
  // file image that contains it; empty when no segment maps it.
  Bytes AtAddress(uint64_t vaddr) const {
    for (const Segment& seg : img_.segments_) {
      if (seg.type != kPtLoad || vaddr < seg.vaddr || vaddr - seg.vaddr >= seg.filesz) continue;
      const uint64_t delta = vaddr - seg.vaddr;
      if (std::optional<Bytes> in_file = Slice(b_, seg.offset, seg.filesz)) {
        return Tail(*in_file, delta);
      }
      return Tail(Tail(b_, seg.offset), delta);  // segment truncated by the file's end
    }
    return {};
  }

  // Reads the DT_* value of the first entry with `tag`.
  static std::optional<uint64_t> DynValue(Bytes dynamic, int64_t tag) {
    for (uint64_t off = 0; off + kDynSize <= dynamic.size(); off += kDynSize) {
      const auto t = static_cast<int64_t>(LoadLE<uint64_t>(dynamic, off));
      if (t == kDtNull) break;
      if (t == tag) return LoadLE<uint64_t>(dynamic, off + 8);
    }
    return std::nullopt;
  }

  // Number of symbols from a DT_GNU_HASH table: one past the highest symbol index any
  // hash chain reaches.
  std::optional<uint64_t> GnuHashSymbolCount(Bytes h) const {
    const auto nbuckets = ReadLE<uint32_t>(h, 0);
    const auto symoffset = ReadLE<uint32_t>(h, 4);
    const auto bloom_size = ReadLE<uint32_t>(h, 8);
    if (!nbuckets || !symoffset || !bloom_size) return std::nullopt;
    const uint64_t buckets = 16 + uint64_t{*bloom_size} * 8;
    const uint64_t chains = buckets + uint64_t{*nbuckets} * 4;
    uint64_t max_index = 0;
    for (uint64_t i = 0; i < *nbuckets; ++i) {
      const auto bucket = ReadLE<uint32_t>(h, buckets + i * 4);
      if (!bucket) return std::nullopt;
      max_index = std::max<uint64_t>(max_index, *bucket);
    }
    if (max_index < *symoffset) return *symoffset;
    for (uint64_t i = max_index;; ++i) {
      const auto hash = ReadLE<uint32_t>(h, chains + (i - *symoffset) * 4);
      if (!hash) return std::nullopt;  // chain runs off the end of the mapped data
      if (*hash & 1) return i + 1;
    }
  }

  std::optional<DynTables> TablesFromSections() const {
    const Section* dyn = SectionOfType(kShtDynamic);
    if (dyn == nullptr) return std::nullopt;
    DynTables t;
    t.dynamic = dyn->data;
    t.strtab = LinkedData(*dyn, {});
    if (t.strtab.empty()) return std::nullopt;
    if (const Section* s = SectionOfType(kShtDynsym)) {
      t.dynsym = s->data;
      t.dynsym_strtab = LinkedData(*s, t.strtab);
      t.dynsym_count = s->data.size() / kSymSize;
    }
    if (const Section* s = SectionOfType(kShtGnuVerdef)) {
      t.verdef = s->data;
      t.verdef_strtab = LinkedData(*s, t.strtab);
      t.verdef_num = s->info;
    }
    if (const Section* s = SectionOfType(kShtGnuVerneed)) {
      t.verneed = s->data;
      t.verneed_strtab = LinkedData(*s, t.strtab);
      t.verneed_num = s->info;
    }
    return t;
  }

  std::optional<DynTables> TablesFromSegments() {
    const auto it = std::find_if(img_.segments_.begin(), img_.segments_.end(),
                                 [](const Segment& s) { return s.type == kPtDynamic; });
    if (it == img_.segments_.end()) return std::nullopt;
    DynTables t;
    if (std::optional<Bytes> d = Slice(b_, it->offset, it->filesz)) {
      t.dynamic = *d;
    } else {
      Warn("PT_DYNAMIC lies outside the file");
      return std::nullopt;
    }
    const std::optional<uint64_t> strtab = DynValue(t.dynamic, kDtStrtab);
    if (!strtab) {
      Warn("dynamic table has no DT_STRTAB");
      return std::nullopt;
    }
    t.strtab = AtAddress(*strtab);
    if (const std::optional<uint64_t> strsz = DynValue(t.dynamic, kDtStrsz)) {
      t.strtab = t.strtab.first(static_cast<size_t>(std::min<uint64_t>(*strsz, t.strtab.size())));
    }
    t.dynsym_strtab = t.verdef_strtab = t.verneed_strtab = t.strtab;
    if (const std::optional<uint64_t> symtab = DynValue(t.dynamic, kDtSymtab)) {
      t.dynsym = AtAddress(*symtab);
      if (const std::optional<uint64_t> gnu = DynValue(t.dynamic, kDtGnuHash)) {
        t.dynsym_count = GnuHashSymbolCount(AtAddress(*gnu)).value_or(0);
      } else if (const std::optional<uint64_t> sysv = DynValue(t.dynamic, kDtHash)) {
        t.dynsym_count = ReadLE<uint32_t>(AtAddress(*sysv), 4).value_or(0);  // nchain
      } else if (*strtab > *symtab) {
        t.dynsym_count = (*strtab - *symtab) / kSymSize;  // .dynstr follows .dynsym
      }
      if (t.dynsym_count == 0) Warn("cannot size the dynamic symbol table");
    }
    if (const std::optional<uint64_t> v = DynValue(t.dynamic, kDtVerdef)) {
      t.verdef = AtAddress(*v);
      t.verdef_num = DynValue(t.dynamic, kDtVerdefnum).value_or(0);
    }
    if (const std::optional<uint64_t> v = DynValue(t.dynamic, kDtVerneed)) {
      t.verneed = AtAddress(*v);
      t.verneed_num = DynValue(t.dynamic, kDtVerneednum).value_or(0);
    }
    return t;
  }

  std::string StringAt(Bytes strtab, uint64_t off, std::string_view what) {
    if (std::optional<std::string_view> s = CString(strtab, off)) return std::string(*s);
    Warn(fmt::format("{}: string offset {:#x} outside the string table", what, off));
    return "";
  }

  void ParseDynamic() {
    std::optional<DynTables> t = TablesFromSections();
    img_.dynamic_source_ = DynamicSource::kSectionHeaders;
    if (!t) {
      t = TablesFromSegments();
      img_.dynamic_source_ = DynamicSource::kProgramHeaders;
    }
    if (!t) {
      img_.dynamic_source_ = DynamicSource::kNone;
      return;
    }
    for (uint64_t off = 0; off + kDynSize <= t->dynamic.size(); off += kDynSize) {
      const auto tag = static_cast<int64_t>(LoadLE<uint64_t>(t->dynamic, off));
      const uint64_t val = LoadLE<uint64_t>(t->dynamic, off + 8);
      if (tag == kDtNull) break;
      if (tag == kDtNeeded) img_.needed_.push_back(StringAt(t->strtab, val, "DT_NEEDED"));
      if (tag == kDtSoname) img_.soname_ = StringAt(t->strtab, val, "DT_SONAME");
      if (tag == kDtRunpath) img_.runpath_ = StringAt(t->strtab, val, "DT_RUNPATH");
      if (tag == kDtRpath) img_.rpath_ = StringAt(t->strtab, val, "DT_RPATH");
    }
    ParseSymbols(*t);
    ParseVerdef(*t);
    ParseVerneed(*t);
  }

  void ParseSymbols(const DynTables& t) {
    for (uint64_t i = 1; i < t.dynsym_count; ++i) {  // entry 0 is the null symbol
      const std::optional<Bytes> sym = Slice(t.dynsym, i * kSymSize, kSymSize);
      if (!sym) {
        Warn(fmt::format("dynamic symbol table truncated at entry {} of {}", i, t.dynsym_count));
        return;
      }
      const std::optional<std::string_view> name =
          CString(t.dynsym_strtab, LoadLE<uint32_t>(*sym, 0));
      if (!name || name->empty()) continue;
      if (LoadLE<uint16_t>(*sym, 6) != 0) {
        img_.defined_symbols_.insert(*name);
        ++img_.defined_symbol_count_;
      } else {
        ++img_.undefined_symbol_count_;
      }
    }
  }

  void ParseVerdef(const DynTables& t) {
    if (t.verdef.empty()) return;
    const uint64_t limit = t.verdef_num ? std::min(t.verdef_num, kMaxChain) : kMaxChain;
    uint64_t off = 0;
    for (uint64_t i = 0; i < limit; ++i) {
      const std::optional<Bytes> vd = Slice(t.verdef, off, 20);
      if (!vd) {
        Warn(fmt::format("version definition {} lies outside its table", i));
        return;
      }
      VersionDefinition def;
      def.is_base = (LoadLE<uint16_t>(*vd, 2) & kVerFlgBase) != 0;
      def.index = LoadLE<uint16_t>(*vd, 4);
      if (LoadLE<uint16_t>(*vd, 6) > 0) {  // vd_cnt: the first aux entry is the name
        const std::optional<Bytes> aux = Slice(t.verdef, off + LoadLE<uint32_t>(*vd, 12), 8);
        if (!aux) {
          Warn(fmt::format("version definition {} has its name outside the table", i));
          return;
        }
        def.name = StringAt(t.verdef_strtab, LoadLE<uint32_t>(*aux, 0), "verdef");
      }
      img_.verdef_.push_back(std::move(def));
      const uint32_t next = LoadLE<uint32_t>(*vd, 16);
      if (next == 0) return;
      off += next;
    }
  }

  void ParseVerneed(const DynTables& t) {
    if (t.verneed.empty()) return;
    const uint64_t limit = t.verneed_num ? std::min(t.verneed_num, kMaxChain) : kMaxChain;
    uint64_t off = 0;
    uint64_t aux_budget = kMaxChain;  // all files together, so hostile counts cannot multiply
    for (uint64_t i = 0; i < limit; ++i) {
      const std::optional<Bytes> vn = Slice(t.verneed, off, 16);
      if (!vn) {
        Warn(fmt::format("version requirement {} lies outside its table", i));
        return;
      }
      VersionRequirement req;
      req.file = StringAt(t.verneed_strtab, LoadLE<uint32_t>(*vn, 4), "verneed file");
      const uint16_t count = LoadLE<uint16_t>(*vn, 2);
      uint64_t aux_off = off + LoadLE<uint32_t>(*vn, 8);
      for (uint16_t j = 0; j < count && aux_budget > 0; ++j, --aux_budget) {
        const std::optional<Bytes> aux = Slice(t.verneed, aux_off, 16);
        if (!aux) {
          Warn(fmt::format("version requirement {} of {} lies outside the table", j, req.file));
          break;
        }
        req.versions.push_back(
            StringAt(t.verneed_strtab, LoadLE<uint32_t>(*aux, 8), "verneed version"));
        const uint32_t next = LoadLE<uint32_t>(*aux, 12);
        if (next == 0) break;
        aux_off += next;
      }
      img_.verneed_.push_back(std::move(req));
      const uint32_t next = LoadLE<uint32_t>(*vn, 12);
      if (next == 0) return;
      off += next;
    }
  }

  // Looks for NT_GNU_BUILD_ID among the notes in `notes`. Name and descriptor are
  // padded to 4 bytes; GNU's 8-byte-aligned property notes have sizes that make the
  // 4-byte walk land on the same offsets.
  bool BuildIdFromNotes(Bytes notes) {
    const auto pad = [](uint64_t n) { return (n + 3) / 4 * 4; };
    uint64_t off = 0;
    while (true) {
      const std::optional<Bytes> hdr = Slice(notes, off, 12);
      if (!hdr) return false;
      const uint64_t namesz = LoadLE<uint32_t>(*hdr, 0);
      const uint64_t descsz = LoadLE<uint32_t>(*hdr, 4);
      const uint32_t type = LoadLE<uint32_t>(*hdr, 8);
      const uint64_t desc_off = off + 12 + pad(namesz);
      const std::optional<Bytes> name = Slice(notes, off + 12, namesz);
      const std::optional<Bytes> desc = Slice(notes, desc_off, descsz);
      if (!name || !desc) return false;
      if (type == kNtGnuBuildId && AsChars(*name) == std::string_view("GNU\0", 4)) {
        std::string hex;
        for (uint8_t byte : *desc) hex += fmt::format("{:02x}", byte);
        img_.build_id_ = std::move(hex);
        return true;
      }
      off = desc_off + pad(descsz);
    }
  }

  void ParseBuildId() {
    for (const Section& s : img_.sections_) {
      if (s.type == kShtNote && BuildIdFromNotes(s.data)) return;
    }
    for (const Segment& seg : img_.segments_) {
      if (seg.type != kPtNote) continue;
      if (std::optional<Bytes> notes = Slice(b_, seg.offset, seg.filesz)) {
        if (BuildIdFromNotes(*notes)) return;
      }
    }
  }

  ElfImage& img_;
  Bytes b_;
};

absl::StatusOr<ElfImage> ElfImage::Open(const std::string& path) {
  absl::StatusOr<MappedFile> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  auto owner = std::make_shared<MappedFile>(*std::move(file));
  ElfImage image;
  image.bytes_ = owner->bytes();
  image.owner_ = std::move(owner);
  if (absl::Status s = ElfParser(image).Parse(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  }
  return image;
}

absl::StatusOr<ElfImage> ElfImage::FromBytes(Bytes bytes) {
  auto owner = std::make_shared<std::vector<uint8_t>>(bytes.begin(), bytes.end());
  ElfImage image;
  image.bytes_ = Bytes(owner->data(), owner->size());
  image.owner_ = std::move(owner);
  if (absl::Status s = ElfParser(image).Parse(); !s.ok()) return s;
  return image;
}

const Section* ElfImage::FindSection(std::string_view name) const {
  for (const Section& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool ElfImage::DefinesVersion(std::string_view version) const {
  return std::any_of(verdef_.begin(), verdef_.end(), [&](const VersionDefinition& d) {
    return !d.is_base && d.name == version;
  });
}

std::vector<std::string> ElfImage::RequiredVersions(std::string_view file) const {
  std::vector<std::string> out;
  for (const VersionRequirement& r : verneed_) {
    if (r.file == file) out.insert(out.end(), r.versions.begin(), r.versions.end());
  }
  return out;
}

}  // namespace colabtrace::elf
