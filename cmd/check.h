// What `gpu-tenancy check` is told, as typed options (cmd/check.cc): the policy, the namespace
// and namespace labels the manifests are read with, the cluster quotas are checked against, and
// the manifests, each checked once when parsed.
#ifndef GPU_TENANCY_CMD_CHECK_H_
#define GPU_TENANCY_CMD_CHECK_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "cmd/options.h"
#include "topology/facts.h"

namespace cmd {

// A namespace's labels as --namespace-labels gives them, by namespace.
using NamespaceLabels = std::map<std::string, topology::Labels, std::less<>>;

struct CheckOptions {
  InputOptions inputs;  // a policy (file or the demo's); a cluster file, optional
  std::string default_namespace = "default";  // of manifests that name none
  NamespaceLabels namespace_labels;           // override those of the manifests' Namespaces
  std::vector<std::string> manifests;         // files; "-" is stdin
};

const common::FlagTable& CheckFlags();

// InvalidArgument naming the flag: neither --policy nor --demo, no MANIFEST, a
// --namespace-labels that is not NS=key=value,..., an empty --namespace.
absl::StatusOr<CheckOptions> ParseCheckOptions(const ParsedFlags& flags);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_CHECK_H_
