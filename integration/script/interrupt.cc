// The V8 entry points the guard and the worker need that v8go v0.9.0 does
// not wrap.
//
// V8's headers are not reachable from this package's cgo flags (they live
// in the v8go module), so v8::Isolate is declared here with exactly the
// member functions used, spelled as in V8 11.1's v8-isolate.h; the linker
// finds them in v8go's libv8.a. No data members are declared: the class is
// only ever used through pointers V8 handed out.
#include "interrupt.h"

namespace v8 {
// as v8-isolate.h declares it (an int underneath)
enum class MemoryPressureLevel { kNone, kModerate, kCritical };
class Isolate {
 public:
  typedef void (*InterruptCallback)(Isolate* isolate, void* data);
  typedef size_t (*NearHeapLimitCallback)(void* data, size_t current_heap_limit,
                                          size_t initial_heap_limit);
  void RequestInterrupt(InterruptCallback callback, void* data);
  void AddNearHeapLimitCallback(NearHeapLimitCallback callback, void* data);
  void TerminateExecution();
  void MemoryPressureNotification(MemoryPressureLevel level);
  void Enter();
  void Exit();
};
}  // namespace v8

extern "C" {
// Defined in Go (guard.go).
extern void ductusGuardInterrupt(uintptr_t handle);
extern size_t ductusGuardNearHeapLimit(uintptr_t handle, size_t current, size_t initial);
}

static void onInterrupt(v8::Isolate*, void* data) {
  ductusGuardInterrupt(reinterpret_cast<uintptr_t>(data));
}

static size_t onNearHeapLimit(void* data, size_t current, size_t initial) {
  return ductusGuardNearHeapLimit(reinterpret_cast<uintptr_t>(data), current, initial);
}

extern "C" void ductusRequestInterrupt(void* isolate, uintptr_t handle) {
  static_cast<v8::Isolate*>(isolate)->RequestInterrupt(onInterrupt, reinterpret_cast<void*>(handle));
}

extern "C" void ductusWatchHeapLimit(void* isolate, uintptr_t handle) {
  static_cast<v8::Isolate*>(isolate)->AddNearHeapLimitCallback(onNearHeapLimit, reinterpret_cast<void*>(handle));
}

// A critical memory pressure notification from the isolate's own thread
// runs one full, memory-reducing collection at once and gives the freed
// pages back; LowMemoryNotification does the same work in up to seven
// rounds and took half as long again (7 against 4.5 ms at 64 closed
// contexts). The level is reset once the collection has run. The caller
// holds the isolate's Locker (lock.go); a collection also wants the isolate
// entered, as v8::Isolate::Scope would.
extern "C" void ductusLowMemory(void* isolate) {
  v8::Isolate* iso = static_cast<v8::Isolate*>(isolate);
  iso->Enter();
  iso->MemoryPressureNotification(v8::MemoryPressureLevel::kCritical);
  iso->Exit();
}
