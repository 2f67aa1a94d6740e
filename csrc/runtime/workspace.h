// Memory for the intermediate buffers of generated code, kept for reuse across calls.
//
// A compiled graph allocates each large intermediate buffer (a layer's activations) when its
// function starts and frees it when it returns. Through malloc alone, the freed megabytes at the
// top of the heap are given back to the OS (glibc trims above a threshold) and the next call
// faults every page in again, zeroed by the kernel: about 900 page faults, a millisecond, per
// call of a BERT encoder layer. Blocks of at least kMinCachedBytes are instead kept in a cache
// keyed by size once freed, up to kMaxCachedBytes in all, and the next allocation of a size that
// fits takes one back: a graph called again and again reuses the same warm memory.
#pragma once

#include <cstdint>

namespace ptb {

// Blocks smaller than this go straight to malloc (it recycles them well).
constexpr int64_t kMinCachedBytes = int64_t{64} << 10;
// The most memory the cache keeps while nothing uses it; beyond it, blocks are freed.
constexpr int64_t kMaxCachedBytes = int64_t{1} << 30;

// 64-byte aligned memory of at least `bytes` (>= 0); nullptr when out of memory.
void* workspace_alloc(int64_t bytes);

// Returns a block of workspace_alloc (nullptr is ignored).
void workspace_free(void* ptr);

// Frees every cached block (what the cache holds while nothing uses it).
void workspace_release();

// The bytes the cache holds now, in free blocks.
int64_t workspace_cached_bytes();

}  // namespace ptb
