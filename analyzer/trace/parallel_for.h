// ParallelFor: runs fn(0) ... fn(n - 1) on a few threads, each taking the next index, for
// work that is independent per trace: the reader decodes a folder of traces so, and the
// per-process models (the step model) are built so. fn must touch only what index i owns
// (results go to a slot per index, so their order never depends on the threads).
// Lives in trace/, the analyzer's ground layer, so every layer may use it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace colabtrace::analyzer {

// Threads: one per `per_thread` items (at least one), no more than the machine's cores or 8.
template <class Fn>
void ParallelFor(size_t n, size_t per_thread, Fn&& fn) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  const size_t threads = std::min<size_t>(
      {n / std::max<size_t>(per_thread, 1) + 1, std::max(1u, std::thread::hardware_concurrency()), 8});
  std::vector<std::thread> pool;
  for (size_t k = 1; k < threads; ++k) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
}

}  // namespace colabtrace::analyzer
