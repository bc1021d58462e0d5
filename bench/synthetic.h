// Synthetic clusters of realistic shape for the benchmarks: a mixed GPU fleet (MIG mixed-strategy
// H100 nodes, time-sliced A100 nodes advertising nvidia.com/gpu.shared, exclusive H100 nodes),
// Node objects of about 18 KB (full GFD label set, status.images like a real node) and about 30
// pods per node, a share of them GPU pods bound to the node.
#ifndef GPU_TENANCY_BENCH_SYNTHETIC_H_
#define GPU_TENANCY_BENCH_SYNTHETIC_H_

#include <string>
#include <vector>

namespace bench {

inline constexpr int kPodsPerNode = 30;

enum class NodeKind { kMig, kTimeSliced, kExclusive };
NodeKind KindOf(int index);  // 50% MIG, 30% time-sliced, 20% exclusive
std::string NodeName(int index);

// One Node object as JSON. `with_type_meta` adds apiVersion/kind (a cluster file has them; the
// Nodes inside extender requests do not).
std::string NodeJson(int index, bool with_type_meta);

// The pods of node `index` as JSON objects (with apiVersion/kind).
std::vector<std::string> PodsJson(int index);

// A `kubectl get namespaces,nodes,pods -A -o json` style List for `nodes` nodes.
std::string ClusterListJson(int nodes);

// A permissive policy: every namespace may use every sharing mode.
std::string PermissivePolicyYaml();

// Pending pods (as in an ExtenderArgs.Pod) asking for one MIG 1g.10gb instance, or one replica
// of a time-sliced GPU.
std::string MigPodJson();
std::string SharedPodJson();

// A ~20 KB pod (env vars, annotations, volumes) in an AdmissionReview CREATE request.
std::string AdmissionReviewJson();

}  // namespace bench

#endif  // GPU_TENANCY_BENCH_SYNTHETIC_H_
