// abi.duplicate-library (error)
//
// Rule: in one process and one namespace, two loaded objects with the same library stem
// (name without "lib", version and wheel hash: libcudart.so.12 and libcudart.so.13 are
// both "cudart") that are different files (dev+inode, else path) and were mapped at the
// same time. The executable and the vDSO are ignored.
//
// Copies that a wheel vendors on purpose are not duplicates: auditwheel renames each
// library it bundles to a hashed soname (libgomp-a34b3233.so.1, libgfortran-040039e1.so.5),
// so numpy + scipy or torch + scikit-learn map several copies of libgomp/libgfortran/
// libopenblas that never bind to each other's symbols. Such a hashed copy counts only for
// the families where two copies in one process break things even so: CUDA libraries
// (one context, one driver state) and libstdc++ (one C++ runtime, one exception ABI).
//
// Nor are modules: objects without a soname that were opened by a path (dlopen of
// ".../cupy/_core/core.cpython-312-x86_64-linux-gnu.so" by Python's import system, a
// plugin loader's ".../jax_plugins/xla_cuda13/xla_cuda_plugin.so"). Two packages may each
// ship a module of one file name; without a soname the loader never takes one for the
// other, and each is reached through its own handle. Again CUDA libraries and libstdc++
// count even so. One finding per library and set of copies for the whole job.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "abi/rules/rules.h"

namespace colabtrace::analyzer::abi {
namespace {

// An auditwheel-style name: "<name>-<8 hex>.so[.N...]" (the hash auditwheel adds).
bool IsVendoredName(std::string_view name) {
  const size_t so = name.find(".so");
  if (so == std::string_view::npos || so < 9 || name[so - 9] != '-') return false;
  return std::all_of(name.begin() + static_cast<long>(so) - 8, name.begin() + static_cast<long>(so),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

// A module the program opened by its path (an extension module, a plugin): no soname,
// so no other object can bind to it by name.
bool IsModule(const LoadedLibrary& o) {
  return o.soname.empty() && (o.api == format::LibApi::kDlopen || o.api == format::LibApi::kDlmopen) &&
         o.requested.find('/') != std::string::npos;
}

// Families where even vendored copies conflict.
bool CopiesAlwaysConflict(const elf::LibraryFamily& f) {
  return f.group == elf::LibraryGroup::kCudaToolkit || f.group == elf::LibraryGroup::kNvidiaLibrary ||
         f.group == elf::LibraryGroup::kCudaDriver || f.family == "libstdc++";
}

struct Copy {
  uint64_t start, end;
  size_t file;  // dense id of the file (dev+inode, else path)
  size_t object;
};

// The copies that overlap in time with a copy of another file. O(n log n): sorted by
// start, a prefix table of the two latest ends from distinct files answers "does any
// other file's copy that started before my end end after my start?".
std::vector<size_t> OverlappingCopies(std::vector<Copy> copies) {
  std::sort(copies.begin(), copies.end(), [](const Copy& a, const Copy& b) {
    return std::tie(a.start, a.object) < std::tie(b.start, b.object);
  });
  struct Top2 {
    uint64_t end1 = 0, end2 = 0;
    size_t file1 = SIZE_MAX, file2 = SIZE_MAX;
  };
  std::vector<Top2> prefix(copies.size() + 1);
  for (size_t i = 0; i < copies.size(); ++i) {
    Top2 t = prefix[i];
    const Copy& c = copies[i];
    if (c.file == t.file1) {
      t.end1 = std::max(t.end1, c.end);
    } else if (c.end > t.end1) {
      t = {c.end, t.end1, c.file, t.file1};
    } else if (c.end > t.end2 || c.file == t.file2) {
      if (c.file == t.file2) {
        t.end2 = std::max(t.end2, c.end);
      } else {
        t.end2 = c.end;
        t.file2 = c.file;
      }
    }
    prefix[i + 1] = t;
  }
  std::vector<size_t> out;
  for (const Copy& c : copies) {
    const size_t k = static_cast<size_t>(
        std::lower_bound(copies.begin(), copies.end(), c.end,
                         [](const Copy& x, uint64_t end) { return x.start < end; }) -
        copies.begin());
    const Top2& t = prefix[k];
    const uint64_t other_end = t.file1 != c.file ? t.end1 : t.end2;
    const bool other = t.file1 != c.file ? t.file1 != SIZE_MAX : t.file2 != SIZE_MAX;
    if (other && other_end > c.start) out.push_back(c.object);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void DuplicateLibraryOf(const ProcessLibraries& p, JobContext& ctx) {
  std::map<std::pair<int64_t, std::string>, std::vector<size_t>> groups;
  for (size_t i = 0; i < p.inv.objects.size(); ++i) {
    const LoadedLibrary& o = p.inv.objects[i];
    const std::string name = NameOf(o);
    if (o.is_executable || o.is_vdso || name.find(".so") == std::string::npos) continue;
    if ((IsVendoredName(name) || IsModule(o)) && !CopiesAlwaysConflict(p.family[i])) continue;
    std::string stem = LibraryStem(name);
    if (!stem.empty()) groups[{o.nsid, std::move(stem)}].push_back(i);
  }
  for (const auto& [key, idx] : groups) {
    if (idx.size() < 2) continue;
    std::unordered_map<std::string, size_t> file_ids;
    std::vector<Copy> copies;
    for (size_t i : idx) {
      const LoadedLibrary& o = p.inv.objects[i];
      const std::string file_key = o.identity.known() ? "i" + std::to_string(o.identity.dev) + ":" +
                                                            std::to_string(o.identity.ino)
                                                      : "p" + o.path;
      const size_t file = file_ids.emplace(file_key, file_ids.size()).first->second;
      copies.push_back({o.loaded_ns, o.unloaded_ns.value_or(UINT64_MAX), file, i});
    }
    if (file_ids.size() < 2) continue;
    const std::vector<size_t> dup = OverlappingCopies(std::move(copies));
    if (dup.size() < 2) continue;
    Finding f = Finding::Of(FindingId::kAbiDuplicateLibrary, p.trace->pid());
    const std::string family = p.family[dup[0]].family.empty() ? key.second : p.family[dup[0]].family;
    f.evidence["family"] = family;
    f.evidence["library"] = key.second;
    f.evidence["namespace"] = key.first;
    Json copies_json = Json::MakeArray();
    std::string list, cause = key.second;
    constexpr size_t kListed = 8;  // in the summary; evidence has them all
    for (size_t n = 0; n < dup.size(); ++n) {
      const LoadedLibrary& o = p.inv.objects[dup[n]];
      copies_json.Append(LibJson(o));
      f.files.push_back(o.path);
      cause += '\0' + o.path;
      if (n >= kListed) continue;
      if (!list.empty()) list += " and ";
      list += o.path + (o.loaded_by.empty() ? "" : " (by " + std::string(Basename(o.loaded_by)) + ")");
    }
    if (dup.size() > kListed) list += " and " + std::to_string(dup.size() - kListed) + " more";
    f.evidence["copies"] = std::move(copies_json);
    f.summary = "lib" + key.second + " is loaded from " + std::to_string(dup.size()) + " files: " + list;
    ctx.findings.Add(std::move(f), std::move(cause));
  }
}

void DuplicateLibraryRule(RuleContext& rule) { ForEachProcessLibraries(rule, DuplicateLibraryOf); }

const RuleRegistration kDuplicateLibraryRuleRegistration(DuplicateLibraryRule,
    {FindingId::kAbiDuplicateLibrary});

}  // namespace

}  // namespace colabtrace::analyzer::abi
