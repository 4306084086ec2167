// The guard's and the worker's ways into V8 (see guard.go and trim in
// worker.go): v8go v0.9.0 wraps none of Isolate::RequestInterrupt,
// Isolate::AddNearHeapLimitCallback and Isolate::MemoryPressureNotification.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void ductusRequestInterrupt(void* isolate, uintptr_t handle);
void ductusWatchHeapLimit(void* isolate, uintptr_t handle);
void ductusLowMemory(void* isolate);

#ifdef __cplusplus
}
#endif
