// What soak sends: the kubeconfig and webhook configurations for the server, the pods the bind
// threads schedule, extender arguments and admission reviews, and the admission cases with the demo
// policy's answers.
#ifndef GPU_TENANCY_BENCH_SOAK_OBJECTS_H_
#define GPU_TENANCY_BENCH_SOAK_OBJECTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/synthetic.h"
#include "test/support/fake_apiserver.h"

namespace soak {

std::string ReadWhole(const std::string& path);

// A kubeconfig naming the emulation, its CA and the token it accepts.
std::string Kubeconfig(const testing_support::FakeApiServer& api);

// The webhook configurations `policy_yaml` makes, as an operator applies them: serve reads its
// own (cmd/webhook_guard.h) and logs an error when they are missing or stale.
absl::Status LoadWebhookConfigurations(testing_support::FakeApiServer& api,
                                       const std::string& policy_yaml);

// What the bind threads schedule, with the demo policy (cmd/demo/policy.yaml) in mind.
struct PodKind {
  const char* ns;
  const char* limits;
  bench::NodeKind never_fits;  // nodes that do not offer the resource at all
};
inline constexpr PodKind kBindKinds[] = {
    // trusted, MIG
    {"research", R"({"nvidia.com/mig-1g.10gb":"1","cpu":"2","memory":"8Gi"})",
     bench::NodeKind::kTimeSliced},
    // trusted, time-sliced
    {"research", R"({"nvidia.com/gpu.shared":"1","cpu":"2","memory":"8Gi"})",
     bench::NodeKind::kExclusive},
    // untrusted, MIG
    {"acme", R"({"nvidia.com/mig-3g.40gb":"1","cpu":"4","memory":"32Gi"})",
     bench::NodeKind::kExclusive},
    // platform, whole GPU
    {"gpu-ops", R"({"nvidia.com/gpu":"1","cpu":"16","memory":"64Gi"})", bench::NodeKind::kMig},
};

// The first node of `kind` (the fleet has every kind from 10 nodes on).
std::string FirstNodeOf(bench::NodeKind kind);

// A pending pod asking for `limits` (a JSON object), as kube-apiserver stores it.
std::string PendingPod(const std::string& ns, const std::string& name, const std::string& limits);

// ExtenderArgs for `pod` with candidate node names only (nodeCacheCapable: true).
std::string ExtenderArgs(const std::string& pod, const std::vector<std::string>& names);

// An admission.k8s.io/v1 CREATE review shaped like
// test/testdata/admission/pod-create.validating.request.json (what kube-apiserver 1.28 sent).
std::string Review(const std::string& uid, const std::string& ns, const std::string& name,
                   const std::string& limits);

// The admission cases and what the demo policy must answer. The validating webhook allows the
// trusted tenant's MIG pod and denies a time-sliced GPU for the untrusted tier and any GPU for
// a namespace no tenant claims (unknownTenant: deny). The mutating webhook never denies, and
// for a tenant pod it always adds the pool's node affinity and toleration (a JSON Patch).
struct ReviewCase {
  const char* ns;
  const char* limits;
  bool allowed;  // by the validating webhook
  bool patched;  // by the mutating webhook
};
inline constexpr ReviewCase kReviewCases[] = {
    {"research", R"({"nvidia.com/mig-1g.10gb":"1","cpu":"100m","memory":"64Mi"})", true, true},
    {"acme", R"({"nvidia.com/gpu.shared":"1","cpu":"100m","memory":"64Mi"})", false, true},
    {"gpu-team", R"({"nvidia.com/mig-1g.10gb":"1","cpu":"100m","memory":"64Mi"})", false, false},
};

}  // namespace soak

#endif  // GPU_TENANCY_BENCH_SOAK_OBJECTS_H_
