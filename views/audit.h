// The isolation audit: what each tenant's GPUs really give it (its deal), and whether the
// platform is set up the way its design says (the go-live checklist), read from one snapshot of
// the cluster and the policy it was built with. Pure: no I/O; the inputs the snapshot does not
// carry (pod security fields, the scheduler's configuration, the webhook configurations) are
// passed in, and where one is absent the item that needs it says so (warn) instead of passing.
// The site's mig-parted config comes with the state's catalog (topology::Catalog::mig_parted).
//
//   AuditInputs in{&model_state};
//   AuditReport report = BuildAuditReport(in);
//   for (const CheckResult& c : report.checklist) ...   // c.status, c.findings, c.fix
#ifndef GPU_TENANCY_VIEWS_AUDIT_H_
#define GPU_TENANCY_VIEWS_AUDIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/quota.h"
#include "topology/snapshot.h"
#include "topology/supply.h"

namespace views {

// The device boundary a pod or claim got, strongest first.
enum class DeviceBoundary {
  kMigInstance,     // a MIG instance of its own: SMs, L2, memory and bandwidth partitioned
  kMigTimeSliced,   // a MIG instance time-sliced between pods (nvidia.com/mig-<profile>.shared)
  kWholeGpu,        // a whole physical GPU
  kTimeSliced,      // a time-sliced replica: one memory heap, one fault domain
  kMps,             // an MPS client: one memory heap, one fault domain, per-client caps
  kMemoryFraction,  // GPU memory only, on a shared GPU's heap
};

// "mig-instance", "mig-timesliced", "whole-gpu", "timesliced", "mps", "memory-fraction".
absl::string_view BoundaryName(DeviceBoundary boundary);

// How the device plugin advertised what a pod holds decides its boundary.
DeviceBoundary ClassifyBoundary(topology::ResourceKind kind, topology::SharingMode mode);

// The plain sentence a customer's security questionnaire can take, given who else is on the
// same physical GPU (`co_tenants`; `certain` false when the device plugin does not say which
// GPU, so they are the tenants that may be there).
std::string DescribeBoundary(DeviceBoundary boundary, const std::vector<std::string>& co_tenants,
                             bool certain);

// One GPU holding of a tenant: a pod's device resource, or a DRA claim's device.
struct HeldDevice {
  std::string kind;  // "pod" or "claim"
  std::string namespace_name, name, node;
  std::string resource;  // "nvidia.com/mig-3g.40gb", or the DRA device ID
  int64_t count = 1;
  DeviceBoundary boundary = DeviceBoundary::kWholeGpu;
  std::string gpu;  // "GPU 1", a UUID, or "" when unknown
  // Other tenants on the same physical GPU (for a MIG instance: beside it, across the hardware
  // partition); `co_tenants_certain` false when they may be there but the GPU is not known.
  std::vector<std::string> co_tenants;
  bool co_tenants_certain = true;
  std::string isolation;  // DescribeBoundary's sentence
};

// What a tenant shares above the device on a node it runs on.
struct NodeNeighbours {
  std::string node;
  std::vector<std::string> shared;         // "host kernel", "NVIDIA driver", ...
  std::vector<std::string> other_tenants;  // holding GPUs (pods or claims) on the node
};

struct ClaimSelectors {
  std::string claim;  // namespace/name
  std::string request;
  std::vector<std::string> selectors;  // the CEL the DRA allocator evaluates
};

struct TenantDeal {
  std::string tenant;
  std::string tier;   // "" when the policy denies the tenant GPUs
  std::string modes;  // the tier's modes, "exclusive, mig"
  bool device_access = false;
  std::vector<HeldDevice> devices;    // by namespace, name, resource
  std::vector<NodeNeighbours> nodes;  // by node name
  std::vector<std::string> limits;    // "GPU memory per pod: 81920 MiB", ...
  std::vector<topology::QuotaLine> quota;
  std::vector<ClaimSelectors> claim_selectors;
};

enum class CheckStatus { kPass, kWarn, kFail };
absl::string_view StatusName(CheckStatus status);  // "pass", "warn", "fail"

struct CheckFinding {
  std::string object;  // "node/ts-b", "pod/acme/llm", "pool/gpu-mig", "policy"
  std::string problem;
};

struct CheckResult {
  std::string id;     // "untrusted-isolation"
  std::string title;  // what the item asks
  CheckStatus status = CheckStatus::kPass;
  std::string detail;  // why it passed, or what could not be seen
  std::vector<CheckFinding> findings;
  std::string fix;  // how to make it pass; "" when it does
};

// A pod's or claim's way past the device plugin or the DRA allocator (privileged, device host
// paths, DRA admin access...), as the webhook's device-access rule finds it.
struct EscapeHatch {
  std::string namespace_name;
  std::string object;  // "pod/acme/debug"
  std::string what;    // `container "main" is privileged`
};

// One entry of a KubeSchedulerConfiguration's `extenders`, as far as the audit reads it.
struct SchedulerExtender {
  std::string url_prefix;
  bool filter = false;   // filterVerb set
  bool preempt = false;  // preemptVerb set
  // Empty: kube-scheduler asks this entry about every pod.
  std::vector<std::string> managed_resources;
};

// How kube-scheduler and kube-apiserver are wired to the service. Each part is nullopt when it
// was not inspected, with the reason in its `*_unseen` string ("" when it was simply not given).
struct Wiring {
  std::optional<std::vector<SchedulerExtender>> extenders;
  std::string extenders_unseen;
  // Whether gpu-tenancy's validating and mutating webhook configurations exist.
  std::optional<bool> validating_webhook;
  std::optional<bool> mutating_webhook;
  std::string webhooks_unseen;
};

// A placed pod or allocated claim that breaks the contract now (the contract guard's finding,
// guard/contract.h, made by the caller: views read no rules).
struct ContractFinding {
  std::string object;  // "pod/acme/train-0", "resourceclaim/acme/gpu"
  std::string tenant;
  std::string rule;
  std::string message;
};

struct AuditInputs {
  const topology::ModelState* state = nullptr;
  // What the contract guard finds; nullopt when not judged, `contract_unseen` saying why.
  std::optional<std::vector<ContractFinding>> contract;
  std::string contract_unseen;
  // Findings over the pods' and claims' specs; nullopt when they were not inspected, and then
  // `escape_hatches_unseen` says why ("" when the specs were simply not given).
  std::optional<std::vector<EscapeHatch>> escape_hatches;
  std::string escape_hatches_unseen;
  Wiring wiring;
};

// One checklist item: a small named function.
struct AuditCheck {
  absl::string_view id;
  absl::string_view title;
  CheckResult (*run)(const AuditInputs& in);
};
const std::vector<AuditCheck>& AuditChecks();

struct NotChecked {
  std::string item;
  std::string why;
};

struct AuditReport {
  std::vector<TenantDeal> tenants;
  std::vector<CheckResult> checklist;
  std::vector<NotChecked> not_checked;
  int passed = 0, warned = 0, failed = 0;
};

std::vector<TenantDeal> TenantDeals(const topology::ModelState& state);
AuditReport BuildAuditReport(const AuditInputs& in);

}  // namespace views

#endif  // GPU_TENANCY_VIEWS_AUDIT_H_
