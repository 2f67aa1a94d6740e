#include "runtime/workspace.h"

#include <sys/mman.h>

#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>

#include "support/fork_safe.h"

namespace ptb {

namespace {

constexpr int64_t kAlignment = 64;
// Every block starts with a header of one alignment unit that records its usable size, so that
// workspace_free knows which blocks to cache without a lookup table.
constexpr int64_t kHeader = kAlignment;
// Blocks of at least one x86-64 transparent huge page are placed on huge-page boundaries, sized
// in whole huge pages, and ask for huge pages (madvise): Linux's default THP policy ("madvise")
// gives them only to memory that asks, and malloc does not. A layer's activations are read many
// times by the next matrix product (once per panel of output columns); through 4 KiB pages a 12
// MB operand is 3072 pages, past what the TLB holds, and every pass over it walks the page
// tables again (a BERT layer's FFN2, 3072 -> 768 at 1024 rows, one thread: 33-36 ms with its
// input in 4 KiB pages, 29-30 ms in huge pages).
constexpr int64_t kHugePage = int64_t{2} << 20;

// A new block for `rounded` usable bytes (header added), huge-page backed when that large.
void* new_block(int64_t rounded) {
  int64_t total = rounded + kHeader;
  if (total < kHugePage) return std::aligned_alloc(kAlignment, static_cast<size_t>(total));
  total = (total + kHugePage - 1) / kHugePage * kHugePage;
  void* block = std::aligned_alloc(kHugePage, static_cast<size_t>(total));
#ifdef MADV_HUGEPAGE
  // Advice only: where the kernel refuses it (THP off, an old kernel) the block still works.
  if (block != nullptr) madvise(block, static_cast<size_t>(total), MADV_HUGEPAGE);
#endif
  return block;
}

struct Cache {
  std::mutex mu;
  std::multimap<int64_t, void*> free_blocks;  // usable size -> block (header included)
  int64_t bytes = 0;
};

// A forked child starts with an empty cache (support/fork_safe.h); blocks it still uses are
// freed into the new one. Never destroyed: generated code may free a block while static
// destructors run at exit.
Cache& cache() { return ForkSafe<Cache>::get(); }

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
  void* block = new_block(rounded);
  if (block == nullptr) return nullptr;
  // The size asked for, not the whole huge pages behind it: the cache matches later requests
  // (and counts its bytes) by what a kernel uses.
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
