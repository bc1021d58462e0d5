// How the webhook judges a DeviceClass a tenant reaches without selectors of its own, and names
// it does not know. Two ways lead there:
//   - a pod's DRA extended resource (KEP-5004): `deviceclass.resource.kubernetes.io/<class>` or
//     a name a class maps through extendedResourceName (nvidia.com/gpu on the NVIDIA chart's
//     gpu.nvidia.com class) in its container resources;
//   - the claim kube-scheduler then makes for the pod (resource.kubernetes.io/
//     extended-resource-claim, believed only from the policy's scheduler users).
// Neither can carry the tenant's selectors, so every device the class selects now must be one
// the tenant may use (rule dra-extended-resource): its sharing mode (topology::DraDeviceMode)
// within the tier's modes, its MIG profile within the tenant's migProfiles. A class that selects
// no current device is read by its well-known name (gpu.nvidia.com: whole GPUs; mig.nvidia.com:
// MIG devices of any profile), or else is unknown demand.
//
// unknown-demand: a class the policy maps to neither list (admission.deviceClasses), or a
// resource name in a GPU vendor's domain the service does not read; denied for a tier that
// denies unknown demand (topology::Tier::DeniesUnknownDemand), a warning otherwise.
#ifndef GPU_TENANCY_WEBHOOK_DEVICE_CLASS_RULES_H_
#define GPU_TENANCY_WEBHOOK_DEVICE_CLASS_RULES_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/dra/model.h"
#include "topology/policy.h"
#include "webhook/verdict.h"

namespace webhook {

inline constexpr absl::string_view kDraExtendedRule = "dra-extended-resource";
inline constexpr absl::string_view kUnknownDemandRule = "unknown-demand";

// One way a tenant reaches a class without a selector of its own.
struct ClassUse {
  std::string subject;  // `container "main" requests deviceclass.resource.kubernetes.io/x`
  std::string device_class;
  // What to ask for instead, as the end of the message ("request nvidia.com/mig-1g.10gb"); ""
  // for the generic advice (a ResourceClaim of the class).
  std::string instead;
};

// Appends dra-extended-resource violations for a GPU class (the caller has classified it);
// `dra` may be null (no DRA state known: only the class's well-known name is read).
void CheckClassOffer(const ClassUse& use, const topology::DraState* dra,
                     const topology::TenantRef& tenant, absl::string_view namespace_name,
                     std::vector<Violation>& violations);

// unknown-demand for `what` ("container \"main\" requests amd.com/gpu", "ResourceClaim \"x\"
// request \"r\" asks for device class foo.example.com") with `why` ("the policy maps no such
// device class"): the violation when the tenant's tier denies unknown demand
// (topology::Tier::DeniesUnknownDemand), else nothing; UnknownDemandWarning is the warning the
// other tiers get. Neither applies to a tenant without a tier (unknown-tenant judges it).
bool DeniesUnknownDemand(const topology::TenantRef& tenant);
Violation UnknownDemandViolation(absl::string_view what, absl::string_view why,
                                 const topology::TenantRef& tenant,
                                 absl::string_view namespace_name);
std::string UnknownDemandWarning(absl::string_view what, absl::string_view why);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_DEVICE_CLASS_RULES_H_
