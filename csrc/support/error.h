// User errors versus internal errors (as in Halide).
//
// A UserError is the caller's fault (bad argument, bad schedule, bad TC source); it carries the
// Python exception class it maps to. An InternalError is a bug in pytvmbridge. Both are ordinary
// C++ exceptions so they unwind cleanly through the bindings; nothing ever aborts the process.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ptb {

enum class ErrorKind { kType, kValue, kBuffer, kIndex, kNotImplemented, kMemory, kRecursion };

class UserError : public std::runtime_error {
 public:
  UserError(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

template <typename... Args>
std::string str_cat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

template <typename... Args>
[[noreturn]] void type_error(Args&&... args) {
  throw UserError(ErrorKind::kType, str_cat(std::forward<Args>(args)...));
}
template <typename... Args>
[[noreturn]] void value_error(Args&&... args) {
  throw UserError(ErrorKind::kValue, str_cat(std::forward<Args>(args)...));
}
template <typename... Args>
[[noreturn]] void buffer_error(Args&&... args) {
  throw UserError(ErrorKind::kBuffer, str_cat(std::forward<Args>(args)...));
}
template <typename... Args>
[[noreturn]] void not_implemented(Args&&... args) {
  throw UserError(ErrorKind::kNotImplemented, str_cat(std::forward<Args>(args)...));
}
template <typename... Args>
[[noreturn]] void internal_error(const char* file, int line, Args&&... args) {
  throw InternalError(str_cat("internal error in pytvmbridge at ", file, ":", line, ": ",
                              std::forward<Args>(args)..., " (this is a bug; please report it)"));
}

}  // namespace ptb

// Checks an invariant of pytvmbridge itself; a failure is a bug, reported as RuntimeError.
#define PTB_ICHECK(cond, ...)                                                                \
  do {                                                                                       \
    if (!(cond))                                                                             \
      ::ptb::internal_error(__FILE__, __LINE__, "check failed: " #cond ". ", ##__VA_ARGS__); \
  } while (0)
