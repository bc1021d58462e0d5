#include "cmd/inputs.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "guard/contract.h"
#include "kube/api_client.h"
#include "kube/cluster_state.h"
#include "kube/config.h"
#include "kube/live_source.h"
#include "wire/k8s_codec.h"
#include "wire/mig_parted_codec.h"

absl::string_view EmbeddedDemoCluster();  // cmd/demo/cluster.yaml
absl::string_view EmbeddedDemoPolicy();   // cmd/demo/policy.yaml

namespace cmd {

absl::string_view DemoClusterText() { return EmbeddedDemoCluster(); }
absl::string_view DemoPolicyText() { return EmbeddedDemoPolicy(); }

absl::StatusOr<topology::Policy> LoadPolicy(absl::string_view text) {
  ASSIGN_OR_RETURN(topology::Policy policy, common::LoadPolicy(text));
  RETURN_IF_ERROR(guard::CheckGuardActions(policy.guard));
  return policy;
}

absl::StatusOr<topology::Policy> ReadPolicy(const InputOptions& inputs) {
  if (!inputs.policy_file.empty()) {
    const std::string& path = inputs.policy_file;
    ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    absl::StatusOr<topology::Policy> policy = LoadPolicy(text);
    if (!policy.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", policy.status().message()));
    }
    return policy;
  }
  if (inputs.demo) return LoadPolicy(DemoPolicyText());
  return topology::Policy::AllowAll();
}

absl::StatusOr<topology::ClusterData> ReadCluster(const InputOptions& inputs) {
  if (!inputs.cluster_file.empty()) {
    const std::string& path = inputs.cluster_file;
    ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    absl::StatusOr<topology::ClusterData> data = wire::ParseClusterText(text);
    if (!data.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", data.status().message()));
    }
    return data;
  }
  if (inputs.demo) return wire::ParseClusterText(DemoClusterText());
  return absl::InvalidArgumentError("give --cluster-file FILE (or --demo)");
}

namespace {

std::string StringMember(const common::JsonValue& object, absl::string_view key) {
  const common::JsonValue* v = object.IsObject() ? common::FindMember(object, key) : nullptr;
  return v != nullptr && v->IsString() ? v->GetString() : "";
}

// The extender entries of a KubeSchedulerConfiguration, as the audit reads them.
absl::StatusOr<std::vector<views::SchedulerExtender>> SchedulerExtenders(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  absl::StatusOr<rapidjson::Document> doc = wire::ParseObjectText(text);
  if (!doc.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--scheduler-config ", path, ": ", doc.status().message()));
  }
  const common::JsonValue* extenders =
      doc->IsObject() ? common::FindMember(*doc, "extenders") : nullptr;
  if (extenders == nullptr || !extenders->IsArray()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--scheduler-config ", path, ": no extenders list (want a KubeSchedulerConfiguration)"));
  }
  std::vector<views::SchedulerExtender> out;
  for (const common::JsonValue& e : extenders->GetArray()) {
    views::SchedulerExtender entry;
    entry.url_prefix = StringMember(e, "urlPrefix");
    entry.filter = !StringMember(e, "filterVerb").empty();
    entry.preempt = !StringMember(e, "preemptVerb").empty();
    const common::JsonValue* managed =
        e.IsObject() ? common::FindMember(e, "managedResources") : nullptr;
    if (managed != nullptr && managed->IsArray()) {
      for (const common::JsonValue& m : managed->GetArray()) {
        std::string name = StringMember(m, "name");
        if (!name.empty()) entry.managed_resources.push_back(std::move(name));
      }
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

absl::StatusOr<AuditSources> LoadAuditSources(const AuditSourceFiles& files) {
  AuditSources out;
  if (!files.mig_parted_config.empty()) {
    const std::string& path = files.mig_parted_config;
    absl::StatusOr<std::string> text = ReadFile(path);
    absl::StatusOr<topology::MigPartedFile> parsed =
        text.ok() ? wire::ParseMigPartedConfig(*text)
                  : absl::StatusOr<topology::MigPartedFile>(text.status());
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mig-parted-config ", path, ": ", parsed.status().message()));
    }
    out.mig_parted = std::make_shared<const topology::MigPartedFile>(*std::move(parsed));
  }
  if (!files.scheduler_config.empty()) {
    ASSIGN_OR_RETURN(out.extenders, SchedulerExtenders(files.scheduler_config));
  }
  return out;
}

absl::StatusOr<kube::ApiConfig> ApiConfigOf(const KubeOptions& api_server) {
  return api_server.kubeconfig.empty()
             ? kube::InClusterConfig()
             : kube::LoadKubeconfig(api_server.kubeconfig, api_server.context);
}

absl::StatusOr<std::unique_ptr<kube::ApiClient>> LiveApiClient(const KubeOptions& api_server) {
  ASSIGN_OR_RETURN(kube::ApiConfig config, ApiConfigOf(api_server));
  return kube::ApiClient::Create(config);
}

absl::StatusOr<std::shared_ptr<const topology::ModelState>> ListLive(
    const KubeOptions& api_server, topology::Policy policy,
    std::vector<topology::PodFacts>* pending, const topology::Catalog* catalog) {
  ASSIGN_OR_RETURN(std::unique_ptr<kube::ApiClient> api, LiveApiClient(api_server));
  auto state = std::make_shared<kube::ClusterState>(catalog ? *catalog : common::BuiltinCatalog());
  state->SetPolicy(std::make_shared<const topology::Policy>(std::move(policy)));
  kube::LiveSource source(*api, *state);
  source.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!(source.synced() && state->Current() != nullptr) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::shared_ptr<const topology::ModelState> current = state->Current();
  source.Stop();
  if (current == nullptr || !source.synced()) {
    return absl::UnavailableError("the cluster could not be listed within 60s");
  }
  if (pending != nullptr) {
    // The live state keeps the pods bound to nodes only.
    const std::string path = "/api/v1/pods?fieldSelector=spec.nodeName%3D";
    ASSIGN_OR_RETURN(kube::ApiResponse reply, api->Get(path));
    if (reply.status != 200) {
      return absl::UnavailableError(
          absl::StrCat("listing pending pods: HTTP ", reply.status, ": ", reply.body));
    }
    ASSIGN_OR_RETURN(rapidjson::Document doc, wire::ParseObjectText(reply.body));
    ASSIGN_OR_RETURN(topology::ClusterData listed, wire::ParseClusterList(doc));
    *pending = std::move(listed.pods);
  }
  return current;
}

}  // namespace cmd
