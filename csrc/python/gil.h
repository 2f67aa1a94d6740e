// Running C++ work without the GIL, in a way that survives interpreter exit.
//
// Not py::gil_scoped_release: its destructor takes the GIL back, and a daemon thread that asks
// for the GIL while the interpreter is finalizing is ended by Python with pthread_exit(), which
// unwinds the thread's stack; an unwind that reaches a destructor (implicitly noexcept) aborts
// the whole process ("terminate called without an active exception"). Here the GIL is taken back
// in an ordinary function, and a thread that comes back during finalization is parked instead
// (the process is about to end; unwinding it would run destructors that need the GIL).
#pragma once

#include <Python.h>
#include <cxxabi.h>

#include <chrono>
#include <exception>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

namespace ptb::python {

inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

[[noreturn]] inline void park_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

inline void take_gil_back(PyThreadState* state) {
  if (interpreter_finalizing()) park_forever();
  try {
    PyEval_RestoreThread(state);
  } catch (abi::__forced_unwind&) {
    // Finalization began while this thread waited for the GIL: Python ended it with
    // pthread_exit(), whose unwind would run our callers' destructors (Py_DECREFs) without the
    // GIL. Park inside the handler instead (leaving it without a rethrow would abort); the
    // process is about to end.
    park_forever();
  }
}

// The GIL for Python work called from compiled code (a packed function), on a thread that may
// not hold it: PyGILState_Ensure, except that a thread asking while the interpreter finalizes
// (a daemon thread in a kernel at exit) is parked, as take_gil_back does, instead of being
// unwound through noexcept frames (which aborted the process).
class CallbackGil {
 public:
  CallbackGil() {
    if (interpreter_finalizing()) park_forever();
    try {
      state_ = PyGILState_Ensure();
    } catch (abi::__forced_unwind&) {
      park_forever();
    }
  }
  ~CallbackGil() { PyGILState_Release(state_); }
  CallbackGil(const CallbackGil&) = delete;
  CallbackGil& operator=(const CallbackGil&) = delete;

 private:
  PyGILState_STATE state_;
};

template <typename F>
auto without_gil(F&& f) -> decltype(f()) {
  using R = decltype(f());
  PyThreadState* state = PyEval_SaveThread();
  std::exception_ptr error;
  if constexpr (std::is_void_v<R>) {
    try {
      f();
    } catch (...) {
      error = std::current_exception();
    }
    take_gil_back(state);
    if (error) std::rethrow_exception(error);
  } else {
    std::optional<R> result;
    try {
      result.emplace(f());
    } catch (...) {
      error = std::current_exception();
    }
    take_gil_back(state);
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }
}

}  // namespace ptb::python
