// Rules and mutations for DRA ResourceClaims and ResourceClaimTemplates (resource.k8s.io v1,
// v1beta1, v1beta2; the older v1alpha2/v1alpha3 shapes are read without failing). The NVIDIA DRA
// driver's per-claim sharing lives in spec.devices.config[].opaque (driver gpu.nvidia.com) as
//   parameters: {apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig | MigDeviceConfig,
//                sharing: {strategy: TimeSlicing | MPS, timeSlicingConfig: {interval},
//                          mpsConfig: {defaultActiveThreadPercentage: int,
//                                      defaultPinnedDeviceMemoryLimit: quantity,
//                                      defaultPerDevicePinnedMemoryLimit: {device: quantity}}}}
// (k8s-dra-driver-gpu api/nvidia.com/resource/v1beta1/sharing.go). A template carries the claim
// spec under spec.spec.
//
// Rules (validating; the claim rows of rule_table.h):
//   unknown-tenant     a claim for NVIDIA devices from a namespace no tenant owns (policy deny)
//   claim-sharing      TimeSlicing / MPS sharing the tier does not allow (GpuConfig TimeSlicing
//                      needs timeslice, MigDeviceConfig TimeSlicing mig-shared, MPS needs mps)
//   claim-mps-limits   an MPS config must carry defaultActiveThreadPercentage and
//                      defaultPinnedDeviceMemoryLimit within the tenant's limits.mps (each
//                      per-device limit too), when the tenant sets those limits
//   claim-device-class a request for a class whose device type the tier may not use
//   claim-mig-profile  a selector pinning MIG profiles the tenant may not use (claim_selectors.h)
//   device-access      a request with adminAccess, unless the tier has deviceAccess
//   unknown-demand     a request for a class the policy maps neither as GPU nor as other
//                      (admission.deviceClasses): denied or warned by the tier
//   claim-shared-capacity  capacity.requests (a share of a multi-allocatable device) from a
//                      tier with no shared mode
//   dra-extended-resource  a claim kube-scheduler made for a pod's extended resource (the
//                      annotation from a scheduler user): its class must select only devices
//                      the tenant may use (device_class_rules.h)
// Warnings: an MPS config that relies on the driver's defaults (no cap set and no tenant limit).
// Mutation (claims for NVIDIA devices only, ClaimView::gpu_use; the webhook's
// matchConditions send no others): labels gpu-tenancy.io/tenant and gpu-tenancy.io/tier; the
// tenant's MPS limits are written into MPS configs that lack them, and the tier's and tenant's
// device limits into every NVIDIA GPU request as CEL selectors (claim_selectors.h), so the
// limits live in the cluster's objects and the DRA allocator enforces them.
// A claim's spec is immutable, so on UPDATE only the labels are mutated and nothing is denied.
#ifndef GPU_TENANCY_WEBHOOK_CLAIM_RULES_H_
#define GPU_TENANCY_WEBHOOK_CLAIM_RULES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/json.h"
#include "topology/dra/model.h"
#include "topology/policy.h"
#include "webhook/json_patch.h"
#include "webhook/verdict.h"

namespace webhook {

using topology::kNvidiaDraDriver;

// One gpu.nvidia.com opaque config that asks for sharing.
struct SharingConfig {
  size_t index = 0;                               // position in devices.config
  std::string parameters_kind;                    // GpuConfig, MigDeviceConfig
  std::string strategy;                           // TimeSlicing, MPS
  const common::JsonValue* mps_config = nullptr;  // sharing.mpsConfig, may be null
  std::string sharing_pointer;                    // JSON pointer of parameters.sharing
};

// One way the claim asks for devices: an `exactly` request, a flat v1beta1 request or one
// firstAvailable subrequest. `holder` is the object that carries deviceClassName and selectors.
struct ClaimRequest {
  std::string name;  // "gpu", or "gpu/big" for a subrequest
  std::string device_class;
  const common::JsonValue* holder = nullptr;
  std::string holder_pointer;  // JSON pointer of `holder`
  // adminAccess: true on `holder`: the allocator hands out matching devices whether or not other
  // claims hold them (Kubernetes allows it only on a request without firstAvailable).
  bool admin_access = false;
  bool all_devices = false;  // allocationMode: All; else `count` devices (ExactCount)
  int64_t count = 1;
  // How the policy reads the class (AdmissionAllowList::ClassifyDeviceClass).
  topology::DeviceClassKind class_kind = topology::DeviceClassKind::kUnknown;
  // capacity.requests is set (DRAConsumableCapacity): a share of a device several claims hold.
  bool asks_capacity = false;
};

struct ClaimView {
  std::string kind;  // ResourceClaim or ResourceClaimTemplate
  std::string name;
  std::vector<SharingConfig> sharing;
  std::vector<ClaimRequest> requests;
  // Annotation resource.kubernetes.io/extended-resource-claim is "true" (anyone can write it).
  bool extended_resource_annotation = false;
  // The annotation, from a user the policy names as the scheduler (ReviewClaim decides):
  // kube-scheduler made the claim for a pod's DRA extended resource after choosing its
  // devices, so no selector is written into it; its class is judged instead.
  bool extended_resource_claim = false;
  // Why the claim is for GPU devices ("" when it is not): a gpu.nvidia.com config, a device
  // class the policy lists as a GPU class, or an old-style resourceClassName naming nvidia.
  std::string gpu_use;
};

// Reads the claim, classifying each request's device class by `allow`; never fails (the API
// server has validated the object, and an unexpected shape simply yields fewer findings).
ClaimView ParseClaimView(const common::JsonValue& object, absl::string_view kind,
                         const topology::AdmissionAllowList& allow = {});

// device-access for claims (device_access_rules.cc): a request with admin access reaches
// devices allocated to other tenants, so it needs a tier with deviceAccess, like the pod escape
// hatches. Any device class counts: a class name does not say which driver's devices it selects.
void CheckClaimDeviceAccess(const ClaimView& claim, const topology::TenantRef& tenant,
                            absl::string_view namespace_name, std::vector<Violation>& out);

struct TenantSelectorPlan;  // claim_selectors.h

// Appends the labels, and on CREATE the tenant's selectors (`selectors`, the tenant's plan) and
// the missing MPS limits, to `patch`; warnings say what was filled in. `selectors` null: an
// UPDATE, which gets the labels only. `devices`: the published devices, null when not known
// (InjectTenantSelectors).
void MutateClaim(const common::JsonValue& object, const ClaimView& claim,
                 const topology::TenantRef& tenant, const TenantSelectorPlan* selectors,
                 const topology::DraDeviceSet* devices, JsonPatch& patch,
                 std::vector<std::string>& changed, std::vector<std::string>& warnings);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_CLAIM_RULES_H_
