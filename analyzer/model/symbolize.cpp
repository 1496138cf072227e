#include "model/symbolize.h"

#include <cxxabi.h>
#include <elf.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <map>
#include <optional>

#include "elf/bytes.h"
#include "elf/elf_image.h"
#include "core/format.h"

namespace colabtrace::analyzer {
namespace {

// The function symbols of one file, sorted by address, for lookups by address.
struct SymbolTable {
  struct Sym {
    uint64_t addr, size;
    std::string name;
  };
  std::vector<Sym> syms;
  bool stale = false;  // the file on disk is not the one that was loaded (build-id)
  // The executable code the file maps (vaddr, bytes), for recognising the signal
  // trampoline, which has no symbol in a stripped libc.
  struct Code {
    uint64_t vaddr;
    elf::Bytes bytes;
  };
  std::vector<Code> code;
  std::shared_ptr<const void> storage;  // keeps `code` mapped

  // x86-64 glibc's __restore_rt, where a signal handler returns to: mov $15,%rax;
  // syscall (rt_sigreturn). libgcc's unwinder recognises signal frames by these bytes.
  bool IsSigreturn(uint64_t vaddr) const {
    static constexpr uint8_t kRestoreRt[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    for (const Code& c : code) {
      if (vaddr < c.vaddr || vaddr - c.vaddr >= c.bytes.size()) continue;
      const elf::Bytes at = c.bytes.subspan(vaddr - c.vaddr);
      return at.size() >= sizeof(kRestoreRt) && std::memcmp(at.data(), kRestoreRt, sizeof(kRestoreRt)) == 0;
    }
    return false;
  }

  const Sym* Find(uint64_t vaddr) const {
    auto it = std::upper_bound(syms.begin(), syms.end(), vaddr,
                               [](uint64_t v, const Sym& s) { return v < s.addr; });
    if (it == syms.begin()) return nullptr;
    --it;
    return vaddr < it->addr + std::max<uint64_t>(it->size, 1) ? &*it : nullptr;
  }
};

std::string HexBuildId(const format::Bytes& b) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (uint32_t i = 0; i < b.size; ++i) {
    s += kHex[b.data[i] >> 4];
    s += kHex[b.data[i] & 15];
  }
  return s;
}

// Reads .symtab (or, when stripped, .dynsym) of the file holding `path` as loaded:
// <sysroot><path> when its build id is the recorded one, else `path` itself (stale when
// its build id differs). Empty when unreadable.
SymbolTable LoadSymbols(const std::string& sysroot, const std::string& path, const std::string& build_id) {
  SymbolTable table;
  auto open = [](const std::string& file) -> std::optional<elf::ElfImage> {
    // The path comes from an untrusted trace: only ever open a regular file (opening a
    // FIFO or a device named there would block or read forever).
    struct stat st;
    if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    auto image = elf::ElfImage::Open(file);
    if (!image.ok()) return std::nullopt;
    return std::move(*image);
  };
  std::optional<elf::ElfImage> image;
  if (!sysroot.empty() && !build_id.empty() && !path.empty() && path.front() == '/') {
    image = open(sysroot + path);
    if (image && image->build_id() != build_id) image.reset();
  }
  if (!image) {
    image = open(path);
    if (!image) return table;
    if (!build_id.empty() && !image->build_id().empty() && image->build_id() != build_id) {
      table.stale = true;
      return table;
    }
  }
  table.storage = image->storage();
  const elf::Bytes file = image->bytes();
  for (const auto& seg : image->segments()) {
    if (seg.type == PT_LOAD && (seg.flags & PF_X) && seg.offset <= file.size() &&
        seg.filesz <= file.size() - seg.offset) {
      table.code.push_back({seg.vaddr, file.subspan(seg.offset, seg.filesz)});
    }
  }
  const auto& sections = image->sections();
  for (uint32_t want : {static_cast<uint32_t>(SHT_SYMTAB), static_cast<uint32_t>(SHT_DYNSYM)}) {
    for (const auto& s : sections) {
      if (s.type != want || s.link >= sections.size()) continue;
      const elf::Bytes strtab = sections[s.link].data;
      const elf::Bytes data = s.data;
      for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= data.size(); off += sizeof(Elf64_Sym)) {
        Elf64_Sym raw;  // the loop bound keeps this inside `data`
        std::memcpy(&raw, data.data() + off, sizeof(raw));
        const Elf64_Sym* sym = &raw;
        if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_value == 0) continue;
        if (sym->st_name >= strtab.size()) continue;
        const char* name = reinterpret_cast<const char*>(strtab.data()) + sym->st_name;
        const size_t max = strtab.size() - sym->st_name;
        table.syms.push_back({sym->st_value, sym->st_size, std::string(name, strnlen(name, max))});
      }
    }
    if (!table.syms.empty()) break;
  }
  std::sort(table.syms.begin(), table.syms.end(),
            [](const SymbolTable::Sym& a, const SymbolTable::Sym& b) { return a.addr < b.addr; });
  return table;
}

}  // namespace

std::string Demangle(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (d == nullptr) return name;
  std::string out(d);
  std::free(d);
  return out;
}

struct SymbolCache::Table : SymbolTable {
  explicit Table(SymbolTable t) : SymbolTable(std::move(t)) {}
};

SymbolCache::SymbolCache(std::string sysroot) : sysroot_(NormalizeSysroot(std::move(sysroot))) {}
SymbolCache::~SymbolCache() = default;

std::vector<std::string> SymbolCache::Frames(const ProcessTrace& trace,
                                             const std::vector<uint64_t>& frames) {
  std::vector<std::string> out;
  out.reserve(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    const uint64_t ip = frames[i];
    const format::Module* best = nullptr;
    for (const auto& m : trace.records.Module) {
      if (ip >= m.base && ip < m.base + m.size && (best == nullptr || m.base > best->base)) {
        best = &m;
      }
    }
    if (best == nullptr) {
      out.push_back(FormatHex(ip));
      continue;
    }
    const std::string path(trace.Str(best->path));
    const size_t slash = path.rfind('/');
    const std::string file = slash == std::string::npos ? path : path.substr(slash + 1);
    if (file == "libcolabtrace.so") {  // the shim's own frames say nothing
      out.emplace_back();
      continue;
    }
    const uint64_t offset = ip - best->base;
    std::pair<std::string, std::string> key(path, HexBuildId(best->build_id));
    auto it = tables_.find(key);
    if (it == tables_.end()) {
      auto table = std::make_unique<Table>(LoadSymbols(sysroot_, key.first, key.second));
      it = tables_.emplace(std::move(key), std::move(table)).first;
    }
    const Table& table = *it->second;
    // Return addresses point after the call; look up the call itself (except for the
    // innermost frame, which is the exact interrupted instruction).
    const SymbolTable::Sym* sym = table.Find(i == 0 ? offset : offset - 1);
    std::string line = file + "+" + FormatHex(offset);
    if (sym != nullptr) {
      line = Demangle(sym->name) + "+" + FormatHex(offset - sym->addr) + " (" + line + ")";
    } else if (i > 0 && table.IsSigreturn(offset)) {
      line = std::string(kSignalFrame) + " (" + line + ")";
    }
    if (table.stale) line += " (file on disk has changed)";
    out.push_back(std::move(line));
  }
  return out;
}

std::vector<std::string> SymbolCache::Stack(const ProcessTrace& trace,
                                            const std::vector<uint64_t>& frames) {
  std::vector<std::string> out = Frames(trace, frames);
  out.erase(std::remove(out.begin(), out.end(), std::string()), out.end());
  return out;
}

std::string NormalizeSysroot(std::string sysroot) {
  if (!sysroot.empty() && sysroot.front() != '/') {  // relative to the working directory
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(sysroot, ec);
    if (!ec) sysroot = abs.lexically_normal().string();
  }
  while (sysroot.size() > 1 && sysroot.back() == '/') sysroot.pop_back();
  if (sysroot == "/") sysroot.clear();  // "/" is this machine's own root
  return sysroot;
}

}  // namespace colabtrace::analyzer
