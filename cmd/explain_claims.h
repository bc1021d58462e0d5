// What explain says of a pod's DRA claims: each claim's state, node and devices; for a device
// several claims may hold at once (DRAConsumableCapacity), every claim that holds a share of
// it, with its tenant and what it consumes; for a claim not yet allocated, per node, whether
// free devices pass its class's selectors, the tenant's limits and its capacity asks
// (topology/dra/claim_fit.h). Claims are placed by kube-scheduler's DRA allocator, not by the
// extender, so these rows explain rather than decide.
#ifndef GPU_TENANCY_CMD_EXPLAIN_CLAIMS_H_
#define GPU_TENANCY_CMD_EXPLAIN_CLAIMS_H_

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"
#include "topology/dra/claim_fit.h"
#include "topology/dra/model.h"
#include "topology/facts.h"
#include "topology/policy.h"
#include "topology/snapshot.h"

namespace cmd {

// One allocated claim's hold on a multi-allocatable device.
struct DeviceShare {
  std::string namespace_name, claim, tenant;
  std::string share_id;            // "" when the claim holds the device whole
  topology::DraCapacity consumed;  // keyed as the device publishes its capacity
  bool this_claim = false;         // the claim the row is about
};

struct ClaimDevice {
  const topology::DraDevice* device = nullptr;
  // Multi-allocatable devices: every allocated claim that holds the device, by namespace and
  // name; empty for other devices, which the claim holds whole.
  std::vector<DeviceShare> shares;
  topology::DraCapacity consumed;  // the shares' consumption, summed
};

struct ClaimRow {
  std::string pod_claim;  // the name in spec.resourceClaims
  std::string claim;      // the ResourceClaim's name, "" while a template's is not made
  std::string state;      // "allocated", "pending", "not made yet", "not in the cluster"
  std::string node;
  std::vector<ClaimDevice> devices;
  size_t unpublished = 0;  // results whose device no current slice publishes
  // Not allocated yet (a pending claim, or the template a claim will be made from): where its
  // requests could be met.
  std::vector<topology::ClaimOnNode> candidates;
};

// The pod's claims as the snapshot's DRA objects show them; tenants resolved by `policy`.
std::vector<ClaimRow> ClaimRows(const topology::PodFacts& pod,
                                const topology::ClusterSnapshot& snapshot,
                                const topology::Policy& policy);

// The text lines ("claim   gpu = c: allocated on node-a", its devices and their shares, the
// pending rows).
void PrintClaimRows(const std::vector<ClaimRow>& rows, std::ostream& out);

// The "claims" array of explain's JSON.
void WriteClaimRows(rapidjson::PrettyWriter<rapidjson::StringBuffer>& w,
                    const std::vector<ClaimRow>& rows);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_EXPLAIN_CLAIMS_H_
