// Deep recursion without stack overflow.
//
// Expressions can be arbitrarily deep (Python's sum() over 20 000 reads builds a chain of 20 000
// additions), and the passes over them recurse. Each recursive pass calls check_stack() per
// level: when less than a reserve of the thread's stack is left it throws StackExhausted
// instead of overflowing. with_deep_stack(f) runs f on the calling thread, and if that runs out
// of stack, runs it again on a thread with a stack of kDeepStackBytes (address space is
// reserved, memory is only used as deep as the recursion goes); if even that is not enough the
// error reaches Python as RecursionError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <utility>

#include "support/error.h"

namespace ptb {

// The stack of the threads that with_deep_stack() starts.
constexpr size_t kDeepStackBytes = size_t{1} << 30;

// A UserError (RecursionError in Python) raised before the stack would overflow.
class StackExhausted : public UserError {
 public:
  StackExhausted();
};

namespace detail {
// The lowest address this thread's recursion may reach; computed once per thread.
uintptr_t stack_limit();
[[noreturn]] void throw_stack_exhausted();
// Runs f on a new thread with a stack of kDeepStackBytes and waits for it; f's exception (if
// any) is rethrown here.
void run_on_deep_stack(const std::function<void()>& f);
bool on_deep_stack();
}  // namespace detail

// Throws StackExhausted when this thread's stack is nearly used up.
inline void check_stack() {
  char probe;
  if (reinterpret_cast<uintptr_t>(&probe) < detail::stack_limit()) {
    detail::throw_stack_exhausted();
  }
}

// Runs f on a thread with a deep stack (the calling thread if it is one), for work that
// recurses without bound and cannot be guarded everywhere (LLVM's own passes).
template <typename F>
auto on_deep_stack(F&& f) -> decltype(f()) {
  if (detail::on_deep_stack()) return f();
  using R = decltype(f());
  if constexpr (std::is_void_v<R>) {
    detail::run_on_deep_stack([&] { f(); });
  } else {
    std::optional<R> result;
    detail::run_on_deep_stack([&] { result.emplace(f()); });
    return std::move(*result);
  }
}

// Runs f here, and again on a deep stack if it ran out of stack here: for pure functions that
// are nearly always shallow (printing, lowering), so that the common case starts no thread.
template <typename F>
auto with_deep_stack(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const StackExhausted&) {
    if (detail::on_deep_stack()) throw;
  }
  return on_deep_stack(std::forward<F>(f));
}

}  // namespace ptb
