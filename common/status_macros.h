// Moved to topology/status_macros.h so topology/ and plan/ can use the macros too; this header
// only forwards, for code written before the move.
#ifndef GPU_TENANCY_COMMON_STATUS_MACROS_H_
#define GPU_TENANCY_COMMON_STATUS_MACROS_H_

#include "topology/status_macros.h"

#endif  // GPU_TENANCY_COMMON_STATUS_MACROS_H_
