#include "common/thread_name.h"

#include <pthread.h>

#include <string>

namespace common {

void NameThisThread(absl::string_view name) {
  constexpr size_t kMaxBytes = 15;  // TASK_COMM_LEN less its terminator
  const std::string kept(name.substr(0, kMaxBytes));
  pthread_setname_np(pthread_self(), kept.c_str());
}

}  // namespace common
