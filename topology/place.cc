#include "topology/place.h"

namespace topology {

PlaceOutcome Place(const GpuDemand& demand, const PodContext& pod, absl::string_view node,
                   const NodeSupply& supply, const NodeOccupancy& occupancy) {
  PlaceOutcome out;
  out.placement.node = std::string(node);
  out.placement.tenant = pod.tenant.name;
  if (pod.tenant.tier) out.placement.tier = pod.tenant.tier->name;
  out.placement.pool = supply.pool;
  const FitResult fit = Fit(demand, pod, supply, occupancy);
  if (!fit.fits()) {
    out.verdict = fit.verdict;
    out.rule = fit.rule;
    out.reason = fit.Reason();
    return out;
  }
  out.placement.gpu_index = ChooseSharedGpu(demand, supply, occupancy);
  for (const ResourceCount& device : demand.devices) {
    const OfferedResource* r = supply.Find(device);
    if (r && r->kind == ResourceKind::kMigInstance) {
      out.placement.mig_profile = r->mig_profile;
      break;
    }
  }
  return out;
}

}  // namespace topology
