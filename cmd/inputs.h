// Loading what the subcommands work on, as their typed options (cmd/options.h) name it: the
// cluster (a file, the embedded demo, or kube-apiserver) and the policy (a file, the embedded
// demo policy, or allow-all).
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
#include "cmd/options.h"
#include "kube/api_client.h"
#include "kube/config.h"
#include "topology/mig_parted.h"
#include "topology/policy.h"
#include "topology/snapshot.h"
#include "views/audit.h"

namespace cmd {

absl::string_view DemoClusterText();
absl::string_view DemoPolicyText();

// The policy file, else the demo policy with `demo`, else Policy::AllowAll(). A file that
// cannot be read or parsed is an error naming it.
absl::StatusOr<topology::Policy> ReadPolicy(const InputOptions& inputs);
// A policy file's text as every command takes it: common::LoadPolicy, and the rule ids
// guard.actions names checked against the contract guard's (guard::CheckGuardActions).
absl::StatusOr<topology::Policy> LoadPolicy(absl::string_view text);
// The cluster file, else the demo cluster with `demo`; InvalidArgument without either.
absl::StatusOr<topology::ClusterData> ReadCluster(const InputOptions& inputs);

// How to reach kube-apiserver: the kubeconfig (at its context), else the in-cluster service
// account.
absl::StatusOr<kube::ApiConfig> ApiConfigOf(const KubeOptions& api_server);
absl::StatusOr<std::unique_ptr<kube::ApiClient>> LiveApiClient(const KubeOptions& api_server);

// Lists the cluster once from kube-apiserver, as serve does at start. With `pending`, also
// lists the pods no node holds yet, which the live state does not keep. The state read with
// `catalog` (it must outlive the state), by default the built-in one.
absl::StatusOr<std::shared_ptr<const topology::ModelState>> ListLive(
    const KubeOptions& api_server, topology::Policy policy,
    std::vector<topology::PodFacts>* pending = nullptr, const topology::Catalog* catalog = nullptr);

// What the isolation audit reads besides the cluster (views/audit.h): the mig-parted config
// (YAML) and the KubeSchedulerConfiguration (its extender entries, their verbs and
// managedResources). Each is absent when its file is not given.
struct AuditSources {
  std::shared_ptr<const topology::MigPartedFile> mig_parted;
  std::optional<std::vector<views::SchedulerExtender>> extenders;
  // serve: what its contract guard finds now; unset elsewhere.
  std::function<std::vector<views::ContractFinding>()> contract;
};
absl::StatusOr<AuditSources> LoadAuditSources(const AuditSourceFiles& files);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_INPUTS_H_
