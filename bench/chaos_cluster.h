// chaos's cluster, and the truth it is checked against. The cluster: the demo policy with one
// more tenant, `lab`, whose GPUs come through ResourceClaims under a quota; the soak's mixed
// fleet (bench/synthetic.h) with its running pods; two DRA nodes publishing whole GPUs; the
// webhook configurations the policy makes. The truth: what the emulator holds right now, read
// in-process (bound GPU pods, the lab's claims, its usage record), and the invariants on it
// that no fault may break: no device or MIG slice handed out twice, no tenant past its quota.
#ifndef GPU_TENANCY_BENCH_CHAOS_CLUSTER_H_
#define GPU_TENANCY_BENCH_CHAOS_CLUSTER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "test/support/fake_apiserver.h"
#include "topology/policy.h"

namespace chaos {

inline constexpr char kClaimNamespace[] = "lab";
inline constexpr char kClaimTenant[] = "lab";
inline constexpr char kRecordNamespace[] = "gpu-system";  // the replicas' own namespace

// The demo policy (cmd/demo/policy.yaml) with the lab tenant and its claim quota of `gpus`.
std::string PolicyYaml(int claim_quota_gpus);

// Loads the cluster: namespaces, `nodes` fleet nodes (their names in `node_names`) with their
// pods, the DRA nodes and device class, and the webhook configurations of `policy_yaml`.
absl::Status LoadCluster(testing_support::FakeApiServer& api, int nodes,
                         const std::string& policy_yaml, std::vector<std::string>& node_names);

// A pending ResourceClaim for `gpus` whole GPUs of the DRA nodes, and its CREATE review.
std::string ClaimJson(const std::string& name, int gpus);
std::string ClaimReview(const std::string& uid, const std::string& name, int gpus,
                        bool dry_run = false);

using ResourceCounts = std::map<std::string, int64_t>;  // extended resource -> count

struct BoundPod {
  std::string ns, name, node;
  ResourceCounts requests;  // GPU resources only
  std::string gpu_index;    // the bind's gpu-tenancy.io/gpu-index annotation, "" when none
};

struct Truth {
  std::map<std::string, BoundPod> pods;       // bound GPU pods by "ns/name"
  std::map<std::string, int64_t> claims;      // the lab's claims by record key -> GPUs asked
  std::map<std::string, std::string> record;  // the lab's usage record (key -> reservation)
};

// What the emulator holds now. Claims are read before the record, so a claim admitted in
// between is in the record.
Truth ReadTruth(const testing_support::FakeApiServer& api);

struct NodeCapacity {
  ResourceCounts allocatable;  // GPU resources
  int64_t replicas_per_gpu = 1;
};
std::map<std::string, NodeCapacity> ReadCapacity(const testing_support::FakeApiServer& api);

// "" when no GPU resource of any node is handed out past its allocatable, no whole GPU (by
// its gpu-index) is bound to two pods and no time-sliced GPU to more pods than its replicas;
// else what is wrong.
std::string CheckDevices(const Truth& truth, const std::map<std::string, NodeCapacity>& nodes);

// "" when no tenant's bound pods exceed a quota item of `policy` (MIG instances per profile,
// compute slices, whole GPUs, shared replicas, GPU pods); else which and by how much.
std::string CheckPodQuotas(const Truth& truth, const topology::Policy& policy);

// "" when the lab's claims, together with every reservation of its usage record still counted at
// `now_unix` for a claim that does not exist (yet), stay within its quota of GPUs.
std::string CheckClaimQuota(const Truth& truth, int64_t quota_gpus, int64_t now_unix);

}  // namespace chaos

#endif  // GPU_TENANCY_BENCH_CHAOS_CLUSTER_H_
