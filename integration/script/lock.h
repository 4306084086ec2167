// An isolate's v8::Locker held across a whole call (see lock.go).
#ifdef __cplusplus
extern "C" {
#endif

void* ductusLock(void* isolate);
void ductusUnlock(void* locker);

#ifdef __cplusplus
}
#endif
