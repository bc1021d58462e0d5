// The two status macros the packaged abseil (20220623) lacks. They live in base/, below every
// room, so each room may use them (cmake/rooms.cmake puts base/ in every room's view).
//
//   RETURN_IF_ERROR(DoThing());
//   ASSIGN_OR_RETURN(Policy policy, LoadPolicy(text));
#ifndef GPU_TENANCY_BASE_STATUS_MACROS_H_
#define GPU_TENANCY_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GT_CONCAT_INNER(a, b) a##b
#define GT_CONCAT(a, b) GT_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                \
  do {                                       \
    ::absl::Status gt_status_ = (expr);      \
    if (!gt_status_.ok()) return gt_status_; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  GT_ASSIGN_OR_RETURN_IMPL(GT_CONCAT(gt_statusor_, __LINE__), lhs, expr)

#define GT_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                             \
  if (!statusor.ok()) return statusor.status();       \
  lhs = std::move(statusor).value()

#endif  // GPU_TENANCY_BASE_STATUS_MACROS_H_
