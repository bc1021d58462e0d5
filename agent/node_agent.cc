#include "agent/node_agent.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/annotation_plan.h"
#include "common/json.h"
#include "common/log.h"
#include "kube/objects.h"
#include "topology/wellknown.h"
#include "wire/k8s_codec.h"

namespace agent {
namespace {

constexpr char kMergePatch[] = "application/merge-patch+json";

// The response's body as JSON, or an error naming `what`.
absl::StatusOr<rapidjson::Document> Answer(absl::string_view what,
                                           const absl::StatusOr<kube::ApiResponse>& r) {
  if (!r.ok()) return absl::UnavailableError(absl::StrCat(what, ": ", r.status().message()));
  if (r->status != 200) {
    return absl::UnavailableError(absl::StrCat(what, ": ", kube::DescribeError(*r)));
  }
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(r->body);
  if (!doc.ok()) return absl::InternalError(absl::StrCat(what, ": ", doc.status().message()));
  return doc;
}

}  // namespace

NodeAgent::NodeAgent(kube::Api& api, const PodResourcesClient& kubelet, NodeAgentOptions options)
    : api_(api), kubelet_(kubelet), options_(std::move(options)) {}

absl::Status NodeAgent::KubeletFailed(const absl::Status& status) {
  kubelet_errors_.fetch_add(1);
  common::Log(common::LogLevel::kError, "cannot read the kubelet's pod resources; nothing written",
              {{"socket", kubelet_.socket_path()}, {"error", status.message()}});
  return status;
}

absl::Status NodeAgent::ApiFailed(const absl::Status& status) {
  api_errors_.fetch_add(1);
  common::Log(common::LogLevel::kError, "kube-apiserver call failed",
              {{"node", options_.node}, {"error", status.message()}});
  return status;
}

absl::Status NodeAgent::RunOnce() {
  rounds_.fetch_add(1);
  absl::StatusOr<std::vector<topology::PodDevices>> served =
      kubelet_.List(options_.kubelet_timeout);
  if (!served.ok()) return KubeletFailed(served.status());
  absl::StatusOr<std::vector<topology::ResourceDevices>> allocatable =
      kubelet_.Allocatable(options_.kubelet_timeout);
  if (!allocatable.ok()) return KubeletFailed(allocatable.status());

  absl::StatusOr<rapidjson::Document> pods =
      Answer("list pods on node " + options_.node,
             api_.Get(absl::StrCat("/api/v1/pods?fieldSelector=spec.nodeName%3D", options_.node)));
  if (!pods.ok()) return ApiFailed(pods.status());
  std::vector<BoundPod> bound;
  if (const common::JsonValue* items = common::FindNonNull(*pods, "items");
      items && items->IsArray()) {
    for (const common::JsonValue& item : items->GetArray()) {
      const common::JsonValue* metadata = common::FindNonNull(item, "metadata");
      if (!metadata) continue;
      bound.push_back({std::string(common::StringOr(*metadata, "namespace")),
                       std::string(common::StringOr(*metadata, "name")),
                       wire::AnnotationOf(&item, topology::kPodDevicesAnnotation),
                       std::string(common::StringOr(*metadata, "uid"))});
    }
  }
  absl::StatusOr<rapidjson::Document> node =
      Answer("get node " + options_.node, api_.Get(absl::StrCat("/api/v1/nodes/", options_.node)));
  if (!node.ok()) return ApiFailed(node.status());

  absl::Status first = absl::OkStatus();
  auto patch = [&](const std::string& path, const std::string& key,
                   const std::optional<std::string>& value, std::atomic<uint64_t>& written) {
    absl::StatusOr<kube::ApiResponse> r =
        api_.Patch(path, kube::AnnotationsPatchJson({{key, value}}), kMergePatch);
    absl::Status s = Answer("patch " + path, r).status();
    if (s.ok()) {
      written.fetch_add(1);
    } else if (first.ok()) {
      first = ApiFailed(s);
    } else {
      ApiFailed(s).IgnoreError();
    }
  };
  for (const PodAnnotation& p : PlanPodAnnotations(options_.node, *served, bound)) {
    patch(absl::StrCat("/api/v1/namespaces/", p.namespace_name, "/pods/", p.name),
          std::string(topology::kPodDevicesAnnotation), p.value, pod_writes_);
  }
  // The pods' reports first, then the Node's record of them: until both have landed the service
  // believes neither the new report nor the stale one.
  if (std::optional<std::string> gpus =
          PlanNodeAnnotation(*allocatable, PlanPodRecords(*served, bound),
                             wire::AnnotationOf(&*node, topology::kNodeDevicesAnnotation))) {
    patch(absl::StrCat("/api/v1/nodes/", options_.node),
          std::string(topology::kNodeDevicesAnnotation), *gpus, node_writes_);
  }
  return first;
}

void NodeAgent::Collect(common::MetricsText& out) const {
  using common::MetricsText;
  out.Family("gpu_tenancy_agent_rounds_total", MetricsText::kCounter,
             "Rounds of reading the kubelet and writing annotations.");
  out.Sample("gpu_tenancy_agent_rounds_total", {}, rounds_.load());
  out.Family("gpu_tenancy_agent_errors_total", MetricsText::kCounter,
             "Rounds cut short, by what failed: the kubelet's PodResources socket (absent, not "
             "gRPC, silent) or kube-apiserver.");
  out.Sample("gpu_tenancy_agent_errors_total", {{"source", "kubelet"}}, kubelet_errors_.load());
  out.Sample("gpu_tenancy_agent_errors_total", {{"source", "apiserver"}}, api_errors_.load());
  out.Family("gpu_tenancy_agent_annotations_written_total", MetricsText::kCounter,
             "Annotations the agent patched, on pods and on its Node.");
  out.Sample("gpu_tenancy_agent_annotations_written_total", {{"object", "pod"}},
             pod_writes_.load());
  out.Sample("gpu_tenancy_agent_annotations_written_total", {{"object", "node"}},
             node_writes_.load());
}

}  // namespace agent
