// v8::Locker, which v8go v0.9.0 takes inside each of its calls but does not
// export. As in interrupt.cc, the class is declared here as V8 11.1's
// v8-locker.h spells it (the data members too: a Locker is allocated here)
// and the linker finds its code in v8go's libv8.a.
#include "lock.h"

namespace v8 {
class Isolate;
namespace internal {
class Isolate;
}
class Locker {
 public:
  explicit Locker(Isolate* isolate) { Initialize(isolate); }
  ~Locker();
  Locker(const Locker&) = delete;
  void operator=(const Locker&) = delete;

 private:
  void Initialize(Isolate* isolate);

  bool has_lock_;
  bool top_level_;
  internal::Isolate* isolate_;
};
}  // namespace v8

extern "C" void* ductusLock(void* isolate) {
  return new v8::Locker(static_cast<v8::Isolate*>(isolate));
}

extern "C" void ductusUnlock(void* locker) {
  delete static_cast<v8::Locker*>(locker);
}
