// Test support, part of the kube-apiserver emulation (fake_apiserver.h): replies, and the
// metav1.Status bodies kube-apiserver answers errors with (reason, message, details, causes,
// retryAfterSeconds), worded as apierrors words them; checked against the captures in
// test/testdata/apiserver/.
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_STATUS_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_STATUS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "test/support/apiserver_objects.h"

namespace testing_support::apiserver {

// One HTTP reply: an object, a list or a Status.
struct Reply {
  int code = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Status.details; empty members are left out.
struct Details {
  std::string name;
  std::string group;
  std::string kind;
  std::string uid;
  std::string cause_reason, cause_message, cause_field;
  int retry_after = -1;
};

// A Status body ("Success" below 300, else "Failure"); `list_continue` fills metadata.continue.
Reply StatusReply(int code, absl::string_view reason, absl::string_view message,
                  const Details* details, absl::string_view list_continue = "");
Reply ObjectReply(int code, std::string json);

Details ResourceDetails(const ResourceInfo& info, absl::string_view name);
Reply NotFound(const ResourceInfo& info, absl::string_view name);
Reply AlreadyExists(const ResourceInfo& info, absl::string_view name);
// apierrors.NewConflict: `Operation cannot be fulfilled on QUALIFIED "NAME": WHY`.
Reply Conflict(absl::string_view qualified, absl::string_view group, absl::string_view kind,
               absl::string_view name, absl::string_view why);
// The optimistic-concurrency conflict ("the object has been modified; ...").
Reply ModifiedConflict(const ResourceInfo& info, absl::string_view name);
Reply BadRequest(absl::string_view message);
// apierrors.NewInvalid with one cause.
Reply Invalid(absl::string_view qualified_kind, absl::string_view group, absl::string_view kind,
              absl::string_view name, absl::string_view field, absl::string_view cause_reason,
              absl::string_view detail);
Reply UnknownPath();
Reply MethodNotAllowed();
// What FakeApiServer::InjectFailure answers with: the reason and message kube-apiserver gives
// the code, Retry-After: 1 on 429 and 503.
Reply InjectedFailure(int code);

// The scripting API's view of a reply: OK below 300, else NotFound (404), AlreadyExists or
// Aborted (409), InvalidArgument (400, 415, 422) or Internal, with the Status message.
absl::Status ToStatus(const Reply& reply);

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_STATUS_H_
