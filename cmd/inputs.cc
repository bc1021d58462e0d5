#include "cmd/inputs.h"

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "common/k8s_codec.h"
#include "topology/status_macros.h"

absl::string_view EmbeddedDemoCluster();  // cmd/demo/cluster.yaml
absl::string_view EmbeddedDemoPolicy();   // cmd/demo/policy.yaml

namespace cmd {

absl::string_view DemoClusterText() { return EmbeddedDemoCluster(); }
absl::string_view DemoPolicyText() { return EmbeddedDemoPolicy(); }

absl::StatusOr<topology::Policy> LoadPolicyFlag(const ParsedFlags& flags) {
  if (flags.Has("policy")) {
    std::string path = flags.Get("policy");
    ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    absl::StatusOr<topology::Policy> policy = common::LoadPolicy(text);
    if (!policy.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", policy.status().message()));
    }
    return policy;
  }
  if (flags.Has("demo")) return common::LoadPolicy(DemoPolicyText());
  return topology::Policy::AllowAll();
}

absl::StatusOr<topology::ClusterData> LoadClusterFlag(const ParsedFlags& flags) {
  if (flags.Has("cluster-file")) {
    std::string path = flags.Get("cluster-file");
    ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    absl::StatusOr<topology::ClusterData> data = common::ParseClusterText(text);
    if (!data.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", data.status().message()));
    }
    return data;
  }
  if (flags.Has("demo")) return common::ParseClusterText(DemoClusterText());
  return absl::InvalidArgumentError("give --cluster-file FILE (or --demo)");
}

}  // namespace cmd
