#include "runtime/workspace.h"

#include <pthread.h>

#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>

namespace ptb {

namespace {

constexpr int64_t kAlignment = 64;
// Every block starts with a header of one alignment unit that records its usable size, so that
// workspace_free knows which blocks to cache without a lookup table.
constexpr int64_t kHeader = kAlignment;

struct Cache {
  std::mutex mu;
  std::multimap<int64_t, void*> free_blocks;  // usable size -> block (header included)
  int64_t bytes = 0;
};

Cache*& cache_slot();

void reset_cache_in_child() {
  // After fork() only the forking thread exists: another thread may have held the lock (or been
  // halfway through an update of the map) at the time, and nobody would release it. Leak the old
  // cache and start an empty one; blocks the child still uses are freed into the new one.
  cache_slot() = new Cache();
}

// Never destroyed: generated code may free a block while static destructors run at exit.
Cache*& cache_slot() {
  static Cache* c = [] {
    pthread_atfork(nullptr, nullptr, reset_cache_in_child);
    return new Cache();
  }();
  return c;
}

Cache& cache() { return *cache_slot(); }

void* user_pointer(void* block) { return static_cast<char*>(block) + kHeader; }
void* block_of(void* ptr) { return static_cast<char*>(ptr) - kHeader; }
int64_t& size_of_block(void* block) { return *static_cast<int64_t*>(block); }

}  // namespace

void* workspace_alloc(int64_t bytes) {
  if (bytes < 0 || bytes > INT64_MAX - 2 * kAlignment - kHeader) return nullptr;
  int64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  if (rounded >= kMinCachedBytes) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    // The smallest cached block that fits, if it wastes at most a quarter of itself: a call
    // that allocates the same sizes as the last one gets the same blocks back.
    auto it = c.free_blocks.lower_bound(rounded);
    if (it != c.free_blocks.end() && it->first - rounded <= it->first / 4) {
      void* block = it->second;
      c.bytes -= it->first;
      c.free_blocks.erase(it);
      return user_pointer(block);
    }
  }
  void* block = std::aligned_alloc(kAlignment, static_cast<size_t>(rounded + kHeader));
  if (block == nullptr) return nullptr;
  size_of_block(block) = rounded;
  return user_pointer(block);
}

void workspace_free(void* ptr) {
  if (ptr == nullptr) return;
  void* block = block_of(ptr);
  const int64_t size = size_of_block(block);
  if (size < kMinCachedBytes || size > kMaxCachedBytes) {
    std::free(block);
    return;
  }
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  // Over the limit: free the largest cached blocks first (they are the rarest sizes to reuse).
  while (c.bytes + size > kMaxCachedBytes && !c.free_blocks.empty()) {
    auto last = std::prev(c.free_blocks.end());
    c.bytes -= last->first;
    std::free(last->second);
    c.free_blocks.erase(last);
  }
  c.free_blocks.emplace(size, block);
  c.bytes += size;
}

void workspace_release() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [size, block] : c.free_blocks) std::free(block);
  c.free_blocks.clear();
  c.bytes = 0;
}

int64_t workspace_cached_bytes() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.bytes;
}

}  // namespace ptb
