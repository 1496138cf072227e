// RunModel: what every rule, renderer and exporter reads about one run, built once.
//
// It holds the traces and, computed on first use and kept for its lifetime:
//   - the lifecycle model across traces (reaps, `colabtrace run`'s samples, hosts, parents)
//     and each trace's ProcessFacts given it;
//   - the symbol cache (each library's symbol table read once, not once per stack);
//   - the areas' models (the I/O model, the GPU timelines, the library inventories, the
//     PyTorch snapshots), each a type with `static T Build(const RunModel&)` that Get<T>()
//     builds once and shares.
// The areas' models live in their folders (above this one), so the run model knows them
// only as types: a rule asks run.Get<io::IoModel>() and never builds one itself.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "model/process_facts.h"
#include "model/symbolize.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer {

struct RunOptions {
  std::optional<std::string> gpu_arch;  // --gpu-arch sm_XY: the what-if architecture
  // --sysroot DIR: where library files recorded on another machine are looked up first
  // (abi::LibraryFiles). "" for none.
  std::string sysroot;
};

class RunModel {
 public:
  explicit RunModel(const std::vector<ProcessTrace>& traces, RunOptions options = {});
  RunModel(const RunModel&) = delete;
  RunModel& operator=(const RunModel&) = delete;

  const std::vector<ProcessTrace>& traces() const { return traces_; }
  const RunOptions& options() const { return options_; }
  // The index of t in traces(); t must be one of them.
  size_t IndexOf(const ProcessTrace& t) const;

  // The process model: computed once on first use, so that a process reads as having
  // ended the same way in every area of the report.
  const LifecycleModel& lifecycle() const;
  const ProcessFacts& facts(const ProcessTrace& t) const;  // t must be one of traces()

  // Native stacks, symbolized through one cache for the whole run.
  SymbolCache& symbols() const { return symbols_; }

  // An area's model, built by T::Build(*this) on first use and kept.
  template <class T>
  const T& Get() const {
    std::shared_ptr<const void>& slot = models_[std::type_index(typeid(T))];
    if (slot == nullptr) slot = std::make_shared<const T>(T::Build(*this));
    return *static_cast<const T*>(slot.get());
  }

 private:
  const std::vector<ProcessTrace>& traces_;
  RunOptions options_;
  mutable std::unique_ptr<const LifecycleModel> lifecycle_;
  mutable std::vector<ProcessFacts> facts_;  // per trace, same order; empty until asked
  mutable SymbolCache symbols_;
  mutable std::unordered_map<std::type_index, std::shared_ptr<const void>> models_;
};

}  // namespace colabtrace::analyzer
