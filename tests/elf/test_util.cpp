#include "test_util.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace colabtrace::elf::testing {
namespace {

void PutLE(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

std::string Between(const std::string& line, const std::string& open, char close) {
  const size_t a = line.find(open);
  if (a == std::string::npos) return "";
  const size_t b = line.find(close, a + open.size());
  return line.substr(a + open.size(), b == std::string::npos ? std::string::npos : b - a - open.size());
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

bool FileExists(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0;
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::optional<std::string> Run(const std::string& command) {
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  std::array<char, 65536> buf;
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  if (::pclose(p) != 0) return std::nullopt;
  return out;
}

std::optional<std::string> FindTool(const std::string& name) {
  std::string dirs = std::getenv("PATH") ? std::getenv("PATH") : "";
  dirs += ":/usr/local/cuda/bin";
  std::istringstream in(dirs);
  for (std::string dir; std::getline(in, dir, ':');) {
    const std::string path = dir + "/" + name;
    if (!dir.empty() && ::access(path.c_str(), X_OK) == 0) return path;
  }
  return std::nullopt;
}

std::optional<ReadelfFacts> Readelf(const std::string& path) {
  const std::optional<std::string> readelf = FindTool("readelf");
  if (!readelf) return std::nullopt;
  const std::string q = " '" + path + "'";
  const std::optional<std::string> dyn = Run(*readelf + " -dW" + q);
  const std::optional<std::string> ver = Run(*readelf + " -VW" + q);
  const std::optional<std::string> notes = Run(*readelf + " -nW" + q);
  const std::optional<std::string> syms = Run(*readelf + " --dyn-syms -W" + q);
  if (!dyn || !ver || !notes || !syms) return std::nullopt;

  ReadelfFacts f;
  for (const std::string& line : Lines(*dyn)) {
    if (line.find("(NEEDED)") != std::string::npos) f.needed.push_back(Between(line, "[", ']'));
    if (line.find("(SONAME)") != std::string::npos) f.soname = Between(line, "[", ']');
    if (line.find("(RUNPATH)") != std::string::npos) f.runpath = Between(line, "[", ']');
    if (line.find("(RPATH)") != std::string::npos) f.rpath = Between(line, "[", ']');
  }
  enum { kNone, kDef, kNeed } section = kNone;
  std::string file;
  for (const std::string& line : Lines(*ver)) {
    if (line.starts_with("Version definition section")) section = kDef;
    if (line.starts_with("Version needs section")) section = kNeed;
    if (line.starts_with("Version symbols section")) section = kNone;
    if (section == kDef && line.find("Rev:") != std::string::npos) {
      f.verdef.push_back(Between(line, "Name: ", ' '));
    } else if (section == kNeed && line.find("File: ") != std::string::npos) {
      file = Between(line, "File: ", ' ');
      f.verneed[file];
    } else if (section == kNeed && line.find("  Name: ") != std::string::npos) {
      f.verneed[file].push_back(Between(line, "Name: ", ' '));
    }
  }
  for (const std::string& line : Lines(*notes)) {
    if (line.find("Build ID: ") != std::string::npos) f.build_id = Between(line, "Build ID: ", ' ');
  }
  for (const std::string& line : Lines(*syms)) {
    std::istringstream in(line);
    std::vector<std::string> cols{std::istream_iterator<std::string>(in), {}};
    // Num: Value Size Type Bind Vis Ndx Name
    if (cols.size() >= 8 && cols[0] != "0:" && cols[0].back() == ':' && cols[6] != "UND" &&
        cols[0] != "Num:") {
      ++f.defined_dynamic_symbols;
    }
  }
  return f;
}

std::vector<uint8_t> MakeContainer(const std::vector<FakeEntry>& entries) {
  std::vector<uint8_t> body;
  for (const FakeEntry& e : entries) {
    std::string stored = e.payload;
    uint64_t flags = e.flags;
    if (e.compress) {
      stored.resize(ZSTD_compressBound(e.payload.size()));
      stored.resize(ZSTD_compress(stored.data(), stored.size(), e.payload.data(),
                                  e.payload.size(), 3));
      flags |= 0x8000;
    }
    const uint64_t padded = (stored.size() + 7) / 8 * 8;
    uint32_t header_size = e.header_size;
    const uint32_t name_off = e.identifier.empty() ? 0 : header_size;
    if (!e.identifier.empty()) header_size += (e.identifier.size() + 8) / 8 * 8;
    const size_t start = body.size();
    PutLE(body, e.kind, 2);
    PutLE(body, 0x0101, 2);
    PutLE(body, header_size, 4);
    PutLE(body, padded, 8);
    const bool compressed = (flags & (0x8000 | 0x2000)) != 0;
    PutLE(body, compressed ? stored.size() : 0, 4);
    PutLE(body, 0, 4);
    PutLE(body, e.version_minor, 2);
    PutLE(body, e.version_major, 2);
    PutLE(body, e.sm, 4);
    PutLE(body, name_off, 4);
    PutLE(body, e.identifier.size(), 4);
    PutLE(body, flags, 8);
    PutLE(body, 0, 8);
    PutLE(body, compressed ? e.payload.size() : 0, 8);
    body.resize(start + header_size, 0);
    if (!e.identifier.empty()) {
      std::copy(e.identifier.begin(), e.identifier.end(), body.begin() + start + name_off);
    }
    body.insert(body.end(), stored.begin(), stored.end());
    body.resize(body.size() + (padded - stored.size()), 0);
  }
  std::vector<uint8_t> out;
  PutLE(out, 0xBA55ED50, 4);
  PutLE(out, 1, 2);
  PutLE(out, 16, 2);
  PutLE(out, body.size(), 8);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::string MakeCubin(uint8_t abi_version, uint32_t e_flags, const std::string& tail) {
  std::string elf(64, '\0');
  elf[0] = 0x7f, elf[1] = 'E', elf[2] = 'L', elf[3] = 'F';
  elf[4] = 2, elf[5] = 1, elf[6] = 1, elf[7] = 0x41, elf[8] = static_cast<char>(abi_version);
  elf[16] = 2;    // ET_EXEC
  elf[18] = static_cast<char>(190);  // EM_CUDA
  for (int i = 0; i < 4; ++i) elf[48 + i] = static_cast<char>(e_flags >> (8 * i));
  return elf + tail;
}

}  // namespace colabtrace::elf::testing
