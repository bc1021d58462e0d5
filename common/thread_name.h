// Names the calling thread, as `top -H`, `ps -L`, perf and /proc/<pid>/task/<tid>/comm show it,
// so an operator (and bench/dra_floor, which splits the process's CPU by thread role) can tell
// the event loops, the workers and each watch apart. Linux keeps 15 bytes; longer names are cut.
#ifndef GPU_TENANCY_COMMON_THREAD_NAME_H_
#define GPU_TENANCY_COMMON_THREAD_NAME_H_

#include "absl/strings/string_view.h"

namespace common {

void NameThisThread(absl::string_view name);

}  // namespace common

#endif  // GPU_TENANCY_COMMON_THREAD_NAME_H_
