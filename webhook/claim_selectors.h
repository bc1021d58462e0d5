// A tenant's limits written into its DRA claims as CEL device selectors, so that kube-scheduler's
// DRA allocator itself enforces them (it ANDs a request's selectors with its class's; the first
// false skips a device). For pods that use only claims, kube-scheduler never calls an extender,
// so the claim is the only place these limits can live. Selectors (docs/wire/dra.md),
// each guarded with `in` so a device without the key is not a match rather than an error:
//   device-types  the tier's sharing modes as NVIDIA device types: exclusive, timeslice and mps
//                 use full GPUs ("gpu"), mig and mig-shared MIG devices ("mig"), exclusive also
//                 passthrough ("vfio"). Not written when the tier allows all three.
//   mig-profiles  the tenant's migProfiles; devices other than MIG are left to device-types.
//   gpu-memory    the tenant's gpuMemoryPerPod as a cap on each device's `memory` capacity.
//   device-sharing  no device published with allowMultipleAllocations (DRAConsumableCapacity:
//                 several claims hold it at once) unless the tier may share that kind of
//                 device; written only once the cluster publishes such a device, since the
//                 apiserver's CEL knows the field only with the feature on.
// They go into every request whose device class the policy lists as a GPU class:
// `exactly`, each firstAvailable subrequest and v1beta1's flat requests, as ONE selector per
// request, the limits' expressions joined with && (the allocator runs one CEL program per
// selector for every device it considers, so each selector costs its setup on every device).
// A limit the request's class already implies is left out: NVIDIA's chart classes
// (gpu.nvidia.com, mig.nvidia.com, vfio.gpu.nvidia.com, topology::WellKnownClassDeviceType)
// select one device type, so device-types is moot for a class of a type the tier may use, and
// mig-profiles (and device-sharing, when the tier shares that kind) for a class of whole GPUs.
// So is gpu-memory for such a class when every device of its type published now has memory
// within the cap (MemoryCapImplied): the request then needs no selector of its own. A device
// published later can break that for a claim still pending; the contract guard's claim-device
// check reports an allocated device over the cap (guard/contract.h).
// The annotation gpu-tenancy.io/selectors records each limit, why, its expression, the
// requests it was written into and those the published devices implied it for, since CEL has
// no comments. Writing is idempotent: a request that already carries the expression does not
// get it again.
//
// Validation decides from literals only: a request naming a class whose device type the tier
// may not use (claim-device-class), or a selector that pins the MIG profile to literals none
// of which the tenant may use (claim-mig-profile). Anything not decidable that way is left to
// the injected selectors.
#ifndef GPU_TENANCY_WEBHOOK_CLAIM_SELECTORS_H_
#define GPU_TENANCY_WEBHOOK_CLAIM_SELECTORS_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/json.h"
#include "topology/dra/model.h"
#include "topology/policy.h"
#include "webhook/claim_rules.h"
#include "webhook/json_patch.h"
#include "webhook/verdict.h"

namespace webhook {

inline constexpr absl::string_view kSelectorsAnnotation = "gpu-tenancy.io/selectors";

struct TenantSelector {
  std::string limit;  // "device-types", "mig-profiles", "gpu-memory"
  std::string why;    // "tier untrusted may use mig, mig-shared"
  std::string expression;
  // Device types ("gpu", "mig", "vfio") for which the expression holds on every device: a
  // request whose class hands out only that type does not need it.
  std::vector<std::string> moot_for_types;
};

// The selectors the tenant's claims get, in a fixed order; empty for a denied tenant and for
// a tier and tenant that limit nothing. `shared_devices_published`: the cluster publishes a
// multi-allocatable device (topology::DraDeviceSet::publishes_shared_devices).
std::vector<TenantSelector> TenantSelectors(const topology::TenantRef& tenant,
                                            bool shared_devices_published = false);

// The one expression a request of class `device_class` gets: the selectors not moot for the
// class's device type, joined with && (a part with || in parentheses); "" when none is left.
std::string RequestExpression(const std::vector<TenantSelector>& selectors,
                              absl::string_view device_class);

// A tenant's selectors ready to write: TenantSelectors, and for each kind of device class the
// one expression its requests get (RequestExpression) and the limits that expression holds.
struct TenantSelectorPlan {
  std::string tenant;  // TenantRef::name
  std::string tier;
  std::vector<TenantSelector> selectors;
  // The tenant's gpuMemoryPerPod when `selectors` caps device memory (limit gpu-memory).
  std::optional<int64_t> memory_cap_mib;
  struct ForClass {
    std::string expression;      // "" when the class implies every limit
    std::vector<size_t> limits;  // indices into `selectors`, empty with `expression`
  };
  // A class of no well-known device type, then classes of "gpu", "mig" and "vfio" devices
  // (topology::WellKnownClassDeviceType); [1] leaves gpu-memory out.
  std::array<std::array<ForClass, 2>, 4> by_class_type;
  // What a request of `device_class` gets; `without_memory`: with gpu-memory left out.
  const ForClass& For(absl::string_view device_class, bool without_memory = false) const;
  // Whether gpu-memory may be left out of a request of `device_class`: the plan caps memory,
  // the class hands out one NVIDIA device type, and every device of that type published now
  // (`devices`; null: not known) has memory within the cap (MemoryCapImplied).
  bool MemoryImplied(absl::string_view device_class, const topology::DraDeviceSet* devices) const;
};

// Whether the published devices imply a cap of `cap_mib` on each device's memory for a request
// of device type `type`: at least one NVIDIA device of that type is published, and each
// publishes a `memory` of at most the cap. The allocator then evaluates no selector for it:
// each selector costs the allocator a CEL evaluation (with its setup) per device it considers.
bool MemoryCapImplied(const topology::DraDeviceSet& devices, absl::string_view type,
                      int64_t cap_mib);

// `shared_devices_published`: as for TenantSelectors.
TenantSelectorPlan PlanTenantSelectors(const topology::TenantRef& tenant,
                                       bool shared_devices_published);

// Every tenant's plan under one policy, worked out once, so that a claim CREATE only looks its
// tenant up (serve keeps one per policy it has seen). Holds the policy: a plan is never read
// for a tenant of another policy, even one allocated where an old one was.
class TenantSelectorPlans {
 public:
  explicit TenantSelectorPlans(std::shared_ptr<const topology::Policy> policy);
  const topology::Policy& policy() const { return *policy_; }
  // The plan of a tenant that ResolveTenant found under policy(); null for any other (the
  // caller plans for itself).
  const TenantSelectorPlan* For(const topology::TenantRef& tenant,
                                bool shared_devices_published) const;

 private:
  struct Entry {
    topology::TenantRef tenant;
    std::array<TenantSelectorPlan, 2> plans;  // without and with shared devices published
  };
  std::shared_ptr<const topology::Policy> policy_;
  std::vector<Entry> entries_;  // like policy_->tenants, then the unknown tenant
};

// Appends the plan's selector to each of the claim's GPU requests and sets the annotation.
// `devices`: the published devices (TenantSelectorPlan::MemoryImplied), null when not known.
// Call on CREATE only (a claim's spec is immutable). Returns whether anything was added.
bool InjectTenantSelectors(const common::JsonValue& object, const ClaimView& claim,
                           const TenantSelectorPlan& plan, const topology::DraDeviceSet* devices,
                           JsonPatch& patch);

// The MIG profiles a selector pins by literal (`...profile == "1g.10gb"` or `...profile in
// [...]` as one conjunct of a top-level && chain), or nullopt when that is not decidable. Read
// from the parsed expression (cel/parse.h), so every spelling CEL accepts counts:
// either quote, escapes, raw strings, parentheses, chains nested in parentheses, and conjuncts
// that call functions the evaluator does not know.
std::optional<std::vector<std::string>> PinnedProfiles(absl::string_view expression);

// claim-device-class and claim-mig-profile violations.
std::vector<Violation> CheckClaimLiterals(const ClaimView& claim, const topology::TenantRef& tenant,
                                          absl::string_view namespace_name);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_CLAIM_SELECTORS_H_
