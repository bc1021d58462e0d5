// The resource.k8s.io objects a live source has seen, as model values keyed as the API keys
// them (ResourceSlices and DeviceClasses by name, ResourceClaims and ResourceClaimTemplates by
// namespace/name), and what each change does to a claim's allocation: it becomes allocated
// (status.allocation appears) or released (the allocation goes away, or the claim is deleted
// while allocated). Build() gives the DraState a snapshot shares; a claim event costs what the
// claim changes, a slice or class event remakes the device set.
//
//   DraStore store;
//   store.ReplaceSlices(slices);
//   for (const ClaimTransition& t : store.UpsertClaim(claim)) ...;  // e.g. kAllocated
//   state.ReplaceDra(store.Build());
//
// Pure (no I/O, no JSON) and not thread-safe: DraSource serialises the calls of its reflectors.
#ifndef GPU_TENANCY_TOPOLOGY_DRA_STORE_H_
#define GPU_TENANCY_TOPOLOGY_DRA_STORE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "topology/dra/model.h"

namespace topology {

struct ClaimTransition {
  enum class Kind { kAllocated, kReleased };
  Kind kind = Kind::kAllocated;
  // The allocated claim: as it is now for kAllocated, as it was for kReleased (shared with the
  // store's states, never null).
  std::shared_ptr<const DraClaim> claim;
  bool deleted = false;  // kReleased: the claim itself is gone (else only its allocation)
};

// What the change from `before` to `after` (either null when the claim was absent) did to the
// allocation. A claim whose allocation changed in one step (a relist that missed the release,
// or a claim recreated under the same name) is released, then allocated.
std::vector<ClaimTransition> ClaimTransitions(const std::shared_ptr<const DraClaim>& before,
                                              const std::shared_ptr<const DraClaim>& after);

class DraStore {
 public:
  void ReplaceSlices(std::vector<DraSlice> slices);
  void UpsertSlice(DraSlice slice);
  void DeleteSlice(const std::string& name);

  // The transitions of every claim added, changed or removed, in key order.
  std::vector<ClaimTransition> ReplaceClaims(std::vector<DraClaim> claims);
  std::vector<ClaimTransition> UpsertClaim(DraClaim claim);
  std::vector<ClaimTransition> DeleteClaim(const std::string& namespace_name,
                                           const std::string& name);

  void ReplaceClasses(std::vector<DraDeviceClass> classes);
  void UpsertClass(DraDeviceClass device_class);
  void DeleteClass(const std::string& name);

  void ReplaceTemplates(std::vector<DraClaim> templates);
  void UpsertTemplate(DraClaim claim_template);
  void DeleteTemplate(const std::string& namespace_name, const std::string& name);

  // The state of every object. The device set (slices and classes) is made again only after
  // one of them changed, and then every claim is counted again; otherwise a claim event has
  // changed only that claim's part of the state, so Build copies a value that shares all the
  // rest with the one it returned before (DraState). The value is made in place, as
  // snapshots hold it, so publishing copies it once.
  std::shared_ptr<const DraState> Build();

  size_t slice_count() const { return slices_.size(); }
  size_t claim_count() const { return state_.claims.size(); }

 private:
  std::map<std::string, DraSlice> slices_;
  std::map<std::string, DraDeviceClass> classes_;
  // Claims and templates are always current; the device set and the counts only while
  // device_set_current_ and !recount_, and Build makes them so.
  DraState state_;
  bool device_set_current_ = false;
  bool recount_ = false;
};

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DRA_STORE_H_
