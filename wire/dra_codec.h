// resource.k8s.io JSON to the DRA model (topology/dra/model.h): ResourceSlice, ResourceClaim and
// DeviceClass, in the v1, v1beta2 and v1beta1 shapes (docs/wire/dra.md). Errors are
// InvalidArgument naming the JSON path that was wrong, e.g.
// "resourceslice.spec.pool.name: missing".
//
//   ASSIGN_OR_RETURN(rapidjson::Document doc, common::ParseJson(body));
//   ASSIGN_OR_RETURN(wire::DraObjects objects, wire::ParseDraList(doc));
//   std::vector<topology::DraDevice> current = topology::CurrentDevices(objects.slices);
//
// Versions are told apart by shape, not by apiVersion, so objects without apiVersion (as inside
// other payloads) parse too: a device with a `basic` member is v1beta1's wrapper; a request with
// `exactly` is v1/v1beta2, one with a top-level `deviceClassName` is v1beta1's flat request, and
// `firstAvailable` reads the same in all three. An apiVersion that is present must be one of
// resource.k8s.io/{v1,v1beta2,v1beta1}: older ones (v1alpha2's classic claims) mean something
// else under similar keys, and reading them as these would account nothing, silently.
//
// Parsing is strict where the wire contract is fixed (every attribute is an object with exactly
// one of string/int/bool/version; every capacity has a valid `value` quantity) and ignores the
// fields accounting does not read (taints, counters, configs, conditions).
#ifndef GPU_TENANCY_WIRE_DRA_CODEC_H_
#define GPU_TENANCY_WIRE_DRA_CODEC_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json.h"
#include "topology/dra/model.h"

namespace wire {

// Set to "true" on the claims kube-scheduler creates for extended-resource requests.
inline constexpr absl::string_view kExtendedResourceClaimAnnotation =
    "resource.kubernetes.io/extended-resource-claim";

// Devices inherit the slice's driver, pool and node (a device's own nodeName, used with
// perDeviceNodeSelection, stands in when the slice has none). Attributes `type`, `uuid`,
// `parentUUID`, `profile` and `productName` are read unqualified or qualified with the driver's
// domain (`gpu.nvidia.com/uuid`); capacity `memory` becomes whole MiB, rounded down. Every
// attribute and capacity is also kept under its qualified name, for selectors. Partitionable
// devices (KEP-4815): spec.sharedCounters (each set's name and counters) and each device's
// consumesCounters (counterSet and counters) are read as quantities that are not negative; a
// slice may carry counters and no devices. Consumable capacity (DRAConsumableCapacity):
// allowMultipleAllocations, and each capacity also under its published name with its
// requestPolicy (default, validValues ascending, or validRange with min required and a step
// that is not zero); every amount is a quantity that is not negative.
// Required: spec.driver, spec.pool.name and each device's name, all non-empty;
// spec.pool.resourceSliceCount, when given, is at least 1. metadata.name may be absent.
[[nodiscard]] absl::StatusOr<topology::DraSlice> ParseResourceSlice(
    const common::JsonValue& slice, absl::string_view path = "resourceslice");

// Reads metadata (name may be empty: CREATE with generateName), the requests of
// spec.devices.requests (class, CEL selectors, mode, count, capacity.requests; firstAvailable
// subrequests as "<request>/<sub>"), status.allocation (results with their shareID and
// consumedCapacity, nodeSelector) and status.reservedFor. Capacity amounts are quantities that
// are not negative.
// Required: spec; each request's deviceClassName (in `exactly`, the flat v1beta1 request, or
// each firstAvailable entry); each result's request, driver, pool and device; each
// reservation's name.
[[nodiscard]] absl::StatusOr<topology::DraClaim> ParseResourceClaim(
    const common::JsonValue& claim, absl::string_view path = "resourceclaim");

// A template read as the claim it stamps out: metadata (name, namespace) and the requests of
// spec.spec. Required: spec.spec.
[[nodiscard]] absl::StatusOr<topology::DraClaim> ParseResourceClaimTemplate(
    const common::JsonValue& claim_template, absl::string_view path = "resourceclaimtemplate");

// Required: metadata.name (claims refer to classes by it) and, for each selector, cel.expression.
[[nodiscard]] absl::StatusOr<topology::DraDeviceClass> ParseDeviceClass(
    const common::JsonValue& device_class, absl::string_view path = "deviceclass");

struct DraObjects {
  std::vector<topology::DraSlice> slices;
  std::vector<topology::DraClaim> claims;
  std::vector<topology::DraClaim> templates;  // ResourceClaimTemplates
  std::vector<topology::DraDeviceClass> classes;
};

// A List (`kubectl get -o json`: kind "List", items of any kind) or a typed list
// (ResourceSliceList, ResourceClaimList, ResourceClaimTemplateList, DeviceClassList, whose items
// may omit `kind`). Items of other kinds (Pods, Nodes) are skipped; item errors are named
// "items[i]...". Item order is kept within each vector.
[[nodiscard]] absl::StatusOr<DraObjects> ParseDraList(const common::JsonValue& list);

}  // namespace wire

#endif  // GPU_TENANCY_WIRE_DRA_CODEC_H_
