#include "topology/place.h"

#include "topology/dra/extended_resources.h"
#include "topology/preemption.h"

namespace topology {

PlaceOutcome Place(const GpuDemand& demand, const PodContext& pod, const NodeState& node,
                   const QuotaUsage& tenant_held, const DraState& dra, PodShareCheck* share) {
  const NodeSupply& supply = node.supply;
  const NodeOccupancy& occupancy = node.occupancy;
  PlaceOutcome out;
  out.placement.node = node.facts.name;
  out.placement.tenant = pod.tenant.name;
  if (pod.tenant.tier) out.placement.tier = pod.tenant.tier->name;
  out.placement.pool = supply.pool;
  const bool uses_dra = DemandUsesDra(demand, dra);
  FitResult fit =
      uses_dra ? FitWithDra(demand, pod, node, dra) : Fit(demand, pod, supply, occupancy);
  if (pod.tenant.tenant && !pod.tenant.tenant->quota.empty()) {
    PodQuotaCheck quota(*pod.tenant.tenant, *pod.policy, demand, tenant_held);
    fit = QuotaBeforeCapacity(fit, &quota, node);
  }
  fit = ShareBeforeCapacity(fit, share, node);
  if (!fit.fits()) {
    out.verdict = fit.verdict;
    out.rule = fit.rule;
    out.reason = fit.Reason();
    return out;
  }
  if (share) out.placement.share = std::string(ShareKindName(share->last().kind));
  out.placement.gpu_index = ChooseSharedGpu(demand, supply, occupancy);
  for (const ResourceCount& device : demand.devices) {
    const OfferedResource* r = supply.Find(device);
    if (r && r->kind == ResourceKind::kMigInstance) {
      out.placement.mig_profile = r->mig_profile;
      break;
    }
  }
  if (uses_dra && out.placement.mig_profile.empty()) {
    out.placement.mig_profile = std::string(DraMigProfile(demand, node, dra));
  }
  return out;
}

}  // namespace topology
