// Loading what the subcommands work on: the cluster (a file or the embedded demo) and the policy
// (a file, the embedded demo policy, or allow-all).
#ifndef GPU_TENANCY_CMD_INPUTS_H_
#define GPU_TENANCY_CMD_INPUTS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cmd/flags.h"
#include "kube/api_client.h"
#include "topology/mig_parted.h"
#include "topology/policy.h"
#include "topology/snapshot.h"
#include "views/audit.h"

namespace cmd {

absl::string_view DemoClusterText();
absl::string_view DemoPolicyText();

// --policy FILE, else the demo policy with --demo, else Policy::AllowAll().
absl::StatusOr<topology::Policy> LoadPolicyFlag(const ParsedFlags& flags);
// --cluster-file FILE, else the demo cluster with --demo.
absl::StatusOr<topology::ClusterData> LoadClusterFlag(const ParsedFlags& flags);

// A client of kube-apiserver: --kubeconfig FILE [--context NAME], else the in-cluster service
// account.
absl::StatusOr<std::unique_ptr<kube::ApiClient>> LiveApiClient(const ParsedFlags& flags);

// Lists the cluster once from kube-apiserver, as serve does at start: --kubeconfig FILE
// [--context NAME], else the in-cluster service account. With `pending`, also lists the pods no
// node holds yet, which the live state does not keep.
absl::StatusOr<std::shared_ptr<const topology::ModelState>> ListLive(
    const ParsedFlags& flags, topology::Policy policy,
    std::vector<topology::PodFacts>* pending = nullptr);

// What the isolation audit reads besides the cluster (views/audit.h): --mig-parted-config FILE
// (mig-parted YAML) and --scheduler-config FILE (a KubeSchedulerConfiguration: its extender
// entries, their verbs and managedResources). Each is absent when its flag is not given.
struct AuditSources {
  std::shared_ptr<const topology::MigPartedFile> mig_parted;
  std::optional<std::vector<views::SchedulerExtender>> extenders;
  // serve: what its contract guard finds now; unset elsewhere.
  std::function<std::vector<views::ContractFinding>()> contract;
};
absl::StatusOr<AuditSources> LoadAuditSources(const ParsedFlags& flags);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_INPUTS_H_
