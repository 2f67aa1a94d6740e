#include "runtime/packed_func.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include <pthread.h>

#include "runtime/backend_api.h"
#include "support/error.h"

namespace ptb {

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const PackedFunc>> funcs;
};

Registry& registry() {
  // Never destroyed: calls may race with exit. fork() takes the lock first (the registrations
  // must survive into the child, so it is not made afresh as ForkSafe objects are): a lookup
  // on another thread at that moment cannot leave the child's copy locked forever.
  static Registry* r = [] {
    pthread_atfork([] { registry().mu.lock(); }, [] { registry().mu.unlock(); },
                   [] { registry().mu.unlock(); });
    return new Registry();
  }();
  return *r;
}

thread_local std::exception_ptr last_error;

}  // namespace

void register_packed_func(const std::string& name, PackedFunc f, bool override) {
  if (name.empty()) value_error("a packed function needs a name");
  if (!f) value_error("packed function '", name, "' is empty");
  auto fn = std::make_shared<const PackedFunc>(std::move(f));
  std::shared_ptr<const PackedFunc> old;  // released outside the lock
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.funcs.find(name);
  if (it != r.funcs.end()) {
    if (!override) {
      value_error("a packed function named '", name,
                  "' is already registered; pass override=True to replace it");
    }
    old = std::move(it->second);
    it->second = std::move(fn);
  } else {
    r.funcs.emplace(name, std::move(fn));
  }
}

bool remove_packed_func(const std::string& name) {
  std::shared_ptr<const PackedFunc> old;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.funcs.find(name);
  if (it == r.funcs.end()) return false;
  old = std::move(it->second);
  r.funcs.erase(it);
  return true;
}

PackedFunc find_packed_func(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.funcs.find(name);
  return it == r.funcs.end() ? PackedFunc() : *it->second;
}

std::vector<std::string> packed_func_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& kv : r.funcs) out.push_back(kv.first);
  return out;
}

void clear_packed_funcs() {
  std::map<std::string, std::shared_ptr<const PackedFunc>> old;
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    old.swap(r.funcs);
  }
}

std::exception_ptr take_packed_call_error() { return std::exchange(last_error, nullptr); }

}  // namespace ptb

extern "C" int32_t ptb_call_packed(const char* name, int32_t nargs, void* const* data,
                                   const int64_t* meta) {
  using ptb::PackedArg;
  try {
    ptb::PackedFunc f = ptb::find_packed_func(name);
    if (!f) {
      ptb::value_error("the packed function '", name,
                       "' called by the kernel is not registered; register it with "
                       "register_func before calling the kernel");
    }
    // Tensors are described in `meta` (see backend_api.h); their DLTensors live here.
    std::vector<DLTensor> tensors(static_cast<size_t>(nargs));
    std::vector<PackedArg> args(static_cast<size_t>(nargs));
    const int64_t* m = meta;
    for (int32_t k = 0; k < nargs; ++k) {
      PackedArg& a = args[static_cast<size_t>(k)];
      int64_t kind = *m++;
      if (kind == 1) {
        a.kind = PackedArg::Kind::kInt;
        a.i = *m++;
      } else if (kind == 2) {
        a.kind = PackedArg::Kind::kFloat;
        int64_t bits = *m++;
        std::memcpy(&a.f, &bits, sizeof(double));
      } else {
        DLTensor& t = tensors[static_cast<size_t>(k)];
        t.data = data[k];
        t.device = {kDLCPU, 0};
        t.dtype.code = static_cast<uint8_t>(*m++);
        t.dtype.bits = static_cast<uint8_t>(*m++);
        t.dtype.lanes = static_cast<uint16_t>(*m++);
        t.ndim = static_cast<int32_t>(*m++);
        t.shape = const_cast<int64_t*>(m);
        m += t.ndim;
        t.strides = const_cast<int64_t*>(m);
        m += t.ndim;
        t.byte_offset = 0;
        a.kind = PackedArg::Kind::kTensor;
        a.tensor = &t;
      }
    }
    f(args);
    return 0;
  } catch (...) {
    ptb::last_error = std::current_exception();
    return PTB_ERROR_PACKED_CALL;
  }
}
