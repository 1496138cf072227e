// The module map: a Module record (path, load base, size, build-id) for every object
// the dynamic loader has mapped, at start and after every load, so that stacks are
// symbolized offline.
#include <link.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "libs/inventory.h"
#include "lifecycle.h"
#include "modules.h"
#include "raw.h"
#include "writer.h"

namespace colabtrace::shim {
namespace {
constexpr int kMaxModules = 4096;
uint64_t g_module_bases[kMaxModules];
bool g_module_seen[kMaxModules];  // present in the current dl_iterate_phdr walk
int g_module_count = 0;
unsigned long long g_seen_adds = ~0ull, g_seen_subs = ~0ull;

int EmitNewModule(struct dl_phdr_info* info, size_t, void*) {
  const uint64_t base = info->dlpi_addr;
  for (int i = 0; i < g_module_count; ++i) {
    if (g_module_bases[i] == base) {
      g_module_seen[i] = true;
      return 0;
    }
  }
  if (g_module_count < kMaxModules) g_module_seen[g_module_count] = true;
  if (g_module_count < kMaxModules) g_module_bases[g_module_count++] = base;
  format::Module m;
  m.ts = Ticks();
  m.base = base;
  const char* name = info->dlpi_name;
  if (name == nullptr || name[0] == '\0') name = SelfExePath();
  m.path = InternCString(name);
  uint64_t end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz > end) end = ph.p_vaddr + ph.p_memsz;
  }
  m.build_id = libs::LoadedBuildId(info);
  m.size = end;
  Emit(m);
  return 0;
}
}  // namespace

void ReadLoaderCounters(unsigned long long* adds, unsigned long long* subs) {
  struct Counters {
    unsigned long long adds = 0, subs = 0;
  } c;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t size, void* data) {
        if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
          auto* cc = static_cast<Counters*>(data);
          cc->adds = info->dlpi_adds;
          cc->subs = info->dlpi_subs;
        }
        return 1;
      },
      &c);
  *adds = c.adds;
  *subs = c.subs;
}

void SyncModuleMap() {
  struct {
    unsigned long long adds = 0, subs = 0;
  } c;
  ReadLoaderCounters(&c.adds, &c.subs);
  if (c.adds == g_seen_adds && c.subs == g_seen_subs) return;
  const bool unloaded = c.subs != g_seen_subs && g_seen_subs != ~0ull;
  g_seen_adds = c.adds;
  g_seen_subs = c.subs;
  for (int i = 0; i < g_module_count; ++i) g_module_seen[i] = false;
  dl_iterate_phdr(EmitNewModule, nullptr);
  if (!unloaded) return;
  // Forget bases that are gone, keeping the array compact.
  int kept = 0;
  for (int i = 0; i < g_module_count; ++i) {
    if (!g_module_seen[i]) continue;
    g_module_bases[kept] = g_module_bases[i];
    g_module_seen[kept++] = true;
  }
  g_module_count = kept;
}

}  // namespace colabtrace::shim
