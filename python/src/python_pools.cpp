// pool_for (forward_binding.hpp): one thread pool per thread count that Python asks for.
// Pools are shared by the calls that ask for the same count, from any Python thread
// (ThreadPool::run serialises concurrent jobs), and are never freed before exit: a count
// costs its threads − 1 sleeping workers.
#include <map>
#include <memory>
#include <mutex>

#include "forward_binding.hpp"

namespace ffn::python {

ThreadPool* pool_for(std::optional<int> threads) {
  if (!threads) return nullptr;
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  const std::lock_guard lock(mutex);
  std::unique_ptr<ThreadPool>& pool = pools[*threads];
  if (!pool) {
    try {
      pool = std::make_unique<ThreadPool>(*threads);
    } catch (...) {
      pools.erase(*threads);  // a refused count (threads < 1) keeps no entry
      throw;
    }
  }
  return pool.get();
}

}  // namespace ffn::python
