// The C functions that generated code calls. The JIT registers them by address (they need not be
// exported from the extension), so their names are a contract with csrc/codegen only.
#pragma once

#include <cstdint>
#include <vector>

extern "C" {

// The status a kernel returns when ptb_alloc failed (0 is success).
enum { PTB_ERROR_OUT_OF_MEMORY = 1, PTB_ERROR_PACKED_CALL = 2 };

// One chunk [begin, end) of a parallel loop's iterations; returns 0 or an error status.
typedef int32_t (*ptb_parallel_body_t)(int64_t begin, int64_t end, void* closure);

// Runs body over [0, n) on the thread pool; returns the first nonzero status of a chunk, or 0.
int32_t ptb_parallel_for(int64_t n, ptb_parallel_body_t body, void* closure);
// The same for a loop that codegen named (a constant string of the kernel's code): timed under
// that name while the loop profile (runtime/loop_profile.h) is on. Code generated before it
// existed calls ptb_parallel_for, which stays.
int32_t ptb_parallel_for_named(int64_t n, ptb_parallel_body_t body, void* closure,
                               const char* name);

// 64-byte aligned memory for an intermediate buffer; nullptr on failure (or a negative size).
// A size of 0 returns a valid pointer that must be freed.
void* ptb_alloc(int64_t bytes);
void ptb_free(void* ptr);

// Calls the packed function registered as `name` (runtime/packed_func.h) with `nargs`
// arguments. `meta` describes them in order: 0 for a tensor, then its DLPack dtype code, bits,
// lanes, ndim, shape and strides (in elements), its data pointer being data[k]; 1 and an int64
// for an integer; 2 and the bits of a double for a float. Returns 0, or PTB_ERROR_PACKED_CALL
// with the exception kept for take_packed_call_error().
int32_t ptb_call_packed(const char* name, int32_t nargs, void* const* data, const int64_t* meta);
}

namespace ptb {

struct BackendSymbol {
  const char* name;
  void* address;
};

// Every function above, for the JIT to define as absolute symbols.
const std::vector<BackendSymbol>& backend_symbols();

}  // namespace ptb
