// Place: where exactly bind puts a pod on the node kube-scheduler chose. It re-decides the fit
// against the node as it is now, and the tenant's quota against what the tenant holds now, and,
// when the pod fits, picks what the node's counters cannot say by themselves: the shared GPU
// whose memory the pod is promised and the MIG profile it takes. Pure: the caller
// (kube::ClusterState) runs it under its lock and records the result.
//
//   PlaceOutcome o = Place(demand, pod, *snapshot.FindNode("gpu-7"), tenant_held);
//   if (!o.placed()) return Refuse(o.reason);   // a verdict, not an error
#ifndef GPU_TENANCY_TOPOLOGY_PLACE_H_
#define GPU_TENANCY_TOPOLOGY_PLACE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "topology/demand.h"
#include "topology/fair_share_check.h"
#include "topology/fit.h"
#include "topology/quota.h"
#include "topology/snapshot.h"

namespace topology {

// Where bind puts a pod, recorded on the pod as annotations for audit and metrics.
struct Placement {
  std::string node;
  std::string tenant;
  std::string tier;
  std::string pool;
  std::optional<int> gpu_index;  // the shared GPU whose memory it was promised
  std::string mig_profile;       // first MIG profile requested, if any
  std::string share = {};        // fair sharing: "guaranteed" or "borrowed"; "" otherwise
};

// Place's answer. It owns its strings: bind reports it after the snapshot it was decided on
// may have been replaced.
struct PlaceOutcome {
  Verdict verdict = Verdict::kFits;
  Rule rule = Rule::kFits;
  std::string reason;   // empty when placed
  Placement placement;  // node, tenant, tier and pool always; the rest when placed
  bool placed() const { return verdict == Verdict::kFits; }
};

// `tenant_held` is what the pod's tenant holds (TenantUsage), read only when it has a quota;
// `dra` is the snapshot's dra(): demand for DRA-backed extended resources
// (topology/dra/extended_resources.h) is counted on the node's DRA devices. `share` is the pod's
// fair-sharing check for a tenant that takes part (topology/fair_share_check.h), else null: a
// borrowed pod is placed only from capacity no other tenant is owed, and the placement says which
// it is.
PlaceOutcome Place(const GpuDemand& demand, const PodContext& pod, const NodeState& node,
                   const QuotaUsage& tenant_held, const DraState& dra,
                   PodShareCheck* share = nullptr);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_PLACE_H_
