// The guard's way into V8 (see guard.go): v8go v0.9.0 wraps neither
// Isolate::RequestInterrupt nor Isolate::AddNearHeapLimitCallback.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void ductusRequestInterrupt(void* isolate, uintptr_t handle);
void ductusWatchHeapLimit(void* isolate, uintptr_t handle);

#ifdef __cplusplus
}
#endif
