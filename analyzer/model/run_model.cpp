#include "model/run_model.h"

#include <stdexcept>

namespace colabtrace::analyzer {

RunModel::RunModel(const std::vector<ProcessTrace>& traces, RunOptions options)
    : traces_(traces), options_(std::move(options)), symbols_(options_.sysroot) {}

size_t RunModel::IndexOf(const ProcessTrace& t) const {
  const auto i = static_cast<size_t>(&t - traces_.data());
  if (&t < traces_.data() || i >= traces_.size()) {
    throw std::out_of_range("RunModel: a trace that is not one of the run's");
  }
  return i;
}

const LifecycleModel& RunModel::lifecycle() const {
  if (lifecycle_ == nullptr) lifecycle_ = std::make_unique<const LifecycleModel>(traces_);
  return *lifecycle_;
}

const ProcessFacts& RunModel::facts(const ProcessTrace& t) const {
  if (facts_.empty() && !traces_.empty()) {
    const LifecycleModel& model = lifecycle();
    facts_.reserve(traces_.size());
    for (const ProcessTrace& each : traces_) facts_.push_back(ProcessFacts::Of(each, &model));
  }
  return facts_[IndexOf(t)];
}

}  // namespace colabtrace::analyzer
