// abi.symbol-version-missing (error)
//
// Rule: a failed load whose dlerror says a version or a symbol was not found ("version
// `V' not found (required by R)", "undefined symbol: S[, version V]", "symbol S version
// V not defined in file P"). The evidence, from the files on disk: the versions the
// requiring object needs from the provider (verneed), the versions the loaded provider
// defines (verdef) in the same namespace (GLIBCXX_* etc.), and other copies of the
// provider that define the missing version. The files are those LibraryFiles gives
// (--sysroot first; a loaded object only by its build id or as the same file); the search
// for other copies reads this machine's directories, so only for a trace recorded here.
// One finding per dlerror text for the whole job.
#include <algorithm>
#include <set>

#include "abi/dlerror_text.h"
#include "abi/library_search.h"

#include "abi/rules/rules.h"

namespace colabtrace::analyzer::abi {

namespace {

void SymbolVersionMissingOf(const ProcessLibraries& p, JobContext& ctx) {
  const ProcessTrace& t = *p.trace;
  std::set<std::string> done;
  // Other copies are searched for only on the host that recorded the trace.
  const bool disk = p.host.same_host;
  constexpr size_t kMaxSearched = 64;  // disk searches for better copies, per process
  size_t searched = 0;
  for (const FailedLoad& fl : p.inv.failures) {
    const abi::DlerrorFacts e = abi::ParseDlerror(fl.error);
    if (e.kind != abi::DlerrorFacts::kVersionNotFound && e.kind != abi::DlerrorFacts::kUndefinedSymbol &&
        e.kind != abi::DlerrorFacts::kSymbolVersion) {
      continue;
    }
    if (!done.insert(fl.error).second) continue;
    std::string provider, needer;
    if (e.kind == abi::DlerrorFacts::kVersionNotFound) {
      provider = e.object;
      needer = e.required_by;
    } else if (e.kind == abi::DlerrorFacts::kSymbolVersion) {
      provider = e.object;
    } else {
      needer = e.object;
    }
    // An undefined versioned symbol: the provider is the file whose version it is.
    FileFacts* nf = needer.empty() ? nullptr : p.FileNamed(needer, ctx.files);
    if (provider.empty() && nf != nullptr && nf->image && !e.version.empty()) {
      for (const elf::VersionRequirement& r : nf->image->verneed()) {
        if (std::find(r.versions.begin(), r.versions.end(), e.version) != r.versions.end()) {
          provider = LoadedPathFor(p, r.file, fl.nsid);
          if (provider.empty()) provider = r.file;
        }
      }
    }
    Finding f = Finding::Of(FindingId::kAbiSymbolVersionMissing, t.pid());
    Json& ev = f.evidence;
    ev["error"] = fl.error;
    ev["requested"] = fl.requested;
    ev["version"] = e.version.empty() ? Json() : Json(e.version);
    ev["symbol"] = e.symbol.empty() ? Json() : Json(e.symbol);
    ev["required_by"] = needer.empty() ? Json() : Json(needer);
    ev["provider"] = provider.empty() ? Json() : Json(provider);
    std::string provider_soname;
    const bool provider_is_path = !provider.empty() && provider.front() == '/';
    FileFacts* pf = provider_is_path ? p.FileNamed(provider, ctx.files) : nullptr;
    if (pf != nullptr && pf->image) {
      provider_soname = pf->image->soname();
      Json defs = Json::MakeArray();
      const std::string prefix = e.version.substr(0, e.version.find_first_of("_0123456789"));
      for (const elf::VersionDefinition& d : pf->image->verdef()) {
        if (d.is_base) continue;
        if (prefix.empty() || d.name.starts_with(prefix)) defs.Append(d.name);
      }
      ev["provider_versions"] = std::move(defs);
      if (!e.symbol.empty()) ev["provider_defines_symbol"] = pf->image->DefinesDynamicSymbol(e.symbol);
    }
    if (nf != nullptr && nf->image) {
      Json needs = Json::MakeArray();
      for (const elf::VersionRequirement& r : nf->image->verneed()) {
        if (!provider_soname.empty() && r.file != provider_soname) continue;
        for (const std::string& v : r.versions) needs.Append(r.file + ":" + v);
      }
      ev["required_versions"] = std::move(needs);
    }
    // Other copies of the provider that have what is missing.
    Json better = Json::MakeArray();
    const std::string prov_name = provider_soname.empty() ? std::string(Basename(provider)) : provider_soname;
    if (!prov_name.empty() && !e.version.empty()) {
      if (!disk) {
        ctx.files.Skipped(FindingName(FindingId::kAbiSymbolVersionMissing), "trace from another host: no search for copies that define it",
                          fl.error);
      } else if (searched++ >= kMaxSearched) {
        ctx.files.Skipped(FindingName(FindingId::kAbiSymbolVersionMissing), "more than 64 in one process: no search for copies", fl.error);
      } else {
        abi::LibrarySearch s(t, p.inv);
        for (const abi::FoundCopy& c : s.FindCopies(prov_name)) {
          FileFacts* cf = ctx.files.Named(c.path, p.host);
          if (cf != nullptr && cf->image && cf->image->DefinesVersion(e.version)) better.Append(c.path);
        }
      }
    }
    if ((!needer.empty() && (nf == nullptr || !nf->image)) || (provider_is_path && (pf == nullptr || !pf->image))) {
      ctx.files.Skipped(FindingName(FindingId::kAbiSymbolVersionMissing), "no readable file: required and provided versions not listed",
                        fl.error);
    }
    ev["copies_with_version"] = better;
    if (!disk) ev["disk_checks"] = p.host.DiskChecksLabel();
    const std::string what = !e.version.empty() ? e.version : e.symbol;
    f.summary = (needer.empty() ? std::string("a library") : std::string(Basename(needer))) + " needs " + what +
                (e.symbol.empty() || e.version.empty() ? "" : " (" + e.symbol + ")") + ", which " +
                (provider.empty() ? std::string("the loaded provider") : provider) + " does not provide";
    f.advice = "An older copy of " + (prov_name.empty() ? std::string("the provider") : prov_name) +
               " was loaded than the one " + (needer.empty() ? std::string("the library") : std::string(Basename(needer))) +
               " was built against." +
               (better.array().empty() ? std::string("")
                                       : " A copy that has " + what + " exists at " + better.array()[0].str() +
                                             ": put its directory first in LD_LIBRARY_PATH (for libstdc++, a "
                                             "conda environment's lib/) or") +
               " install a newer " + (prov_name.empty() ? std::string("provider") : prov_name) +
               " (for GLIBCXX_*/CXXABI_*: a newer libstdc++6 or conda's libstdcxx-ng; for GLIBC_*: a "
               "newer OS image), or use a build of the requester made for the older one; then "
               "restart the runtime.";
    ctx.findings.Add(std::move(f), fl.error);
  }
}

void SymbolVersionMissingRule(RuleContext& rule) { ForEachProcessLibraries(rule, SymbolVersionMissingOf); }

const RuleRegistration kSymbolVersionMissingRuleRegistration(SymbolVersionMissingRule,
    {FindingId::kAbiSymbolVersionMissing});

}  // namespace

}  // namespace colabtrace::analyzer::abi
