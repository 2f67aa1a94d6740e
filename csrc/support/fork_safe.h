// A process-wide object that a forked child gets afresh.
//
// After fork() only the forking thread exists in the child: another thread may have held the
// object's lock, or been halfway through an update of it, and nobody would finish either. So
// the child leaks the parent's object and starts from a new T() (which must be what the object
// looks like with nothing in it). The object is never destroyed: generated code may still use it
// while static destructors run at exit.
#pragma once

#include <pthread.h>

namespace ptb {

template <typename T>
class ForkSafe {
 public:
  static T& get() { return *slot(); }

 private:
  static T*& slot() {
    static T* instance = [] {
      pthread_atfork(nullptr, nullptr, &reset_in_child);
      return new T();
    }();
    return instance;
  }
  static void reset_in_child() { slot() = new T(); }
};

}  // namespace ptb
