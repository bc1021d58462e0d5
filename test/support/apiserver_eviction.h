// Test support, part of the kube-apiserver emulation (fake_apiserver.h): the pods/eviction
// subresource (policy/v1 Eviction). POST /api/v1/namespaces/NS/pods/NAME/eviction deletes the
// pod and answers 201 with a Status, unless a PodDisruptionBudget of the namespace selects the
// pod (spec.selector.matchLabels) and allows no disruption: then 429 TooManyRequests with the
// DisruptionBudget cause, as kube-apiserver's eviction REST handler answers. No disruption
// controller runs, so a budget's status.disruptionsAllowed is what the test stored (without
// one: its Ready matching pods minus spec.minAvailable), and each eviction it allows takes one
// off it. Pods that are not Running are evicted without asking the budget, as the API does.
// Two budgets selecting one pod are a 500, as there.
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_EVICTION_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_EVICTION_H_

#include "absl/strings/string_view.h"
#include "test/support/apiserver_status.h"
#include "test/support/apiserver_store.h"

namespace testing_support::apiserver {

// `body` is the Eviction as sent.
Reply Evict(ObjectStore& store, absl::string_view ns, absl::string_view name,
            absl::string_view body);

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_EVICTION_H_
