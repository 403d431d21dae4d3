#include "support/Stack.h"

#include <pthread.h>

namespace fnk {

namespace {
void* trampoline(void* p) {
  (*static_cast<const std::function<void()>*>(p))();
  return nullptr;
}
}  // namespace

void runWithLargeStack(const std::function<void()>& work) {
  constexpr size_t kStackBytes = size_t(256) << 20;  // reserved, not committed
  pthread_attr_t attr;
  pthread_t th;
  if (pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, kStackBytes) == 0 &&
      pthread_create(&th, &attr, trampoline, const_cast<std::function<void()>*>(&work)) == 0) {
    pthread_attr_destroy(&attr);
    pthread_join(th, nullptr);
    return;
  }
  pthread_attr_destroy(&attr);
  work();  // no thread to be had: the current stack will do
}

}  // namespace fnk
