// The node agent's round: asks the kubelet (PodResources) what each pod's containers got and
// which GPUs the node has, lists the pods kube-apiserver binds to this node, and patches the
// annotations that differ (agent/annotation_plan.h). A round that cannot reach the kubelet or
// kube-apiserver logs why, counts it and writes nothing; the next round tries again.
//
//   agent::NodeAgent node_agent(api, kubelet, {"gpu-a", absl::Seconds(5)});
//   absl::Status s = node_agent.RunOnce();
//   node_agent.Collect(metrics_text);
//
// RunOnce is called from one thread; Collect from any.
#ifndef GPU_TENANCY_AGENT_NODE_AGENT_H_
#define GPU_TENANCY_AGENT_NODE_AGENT_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/pod_resources_client.h"
#include "common/prometheus_text.h"
#include "kube/api.h"

namespace agent {

struct NodeAgentOptions {
  std::string node;                                   // this node's name
  absl::Duration kubelet_timeout = absl::Seconds(5);  // per PodResources call
};

class NodeAgent {
 public:
  NodeAgent(kube::Api& api, const PodResourcesClient& kubelet, NodeAgentOptions options);

  // OK when every planned write landed. Otherwise the first error; later writes of the round
  // are still attempted.
  absl::Status RunOnce();

  // Rounds, errors by source, annotations written.
  void Collect(common::MetricsText& out) const;
  uint64_t pod_writes() const { return pod_writes_.load(); }
  uint64_t node_writes() const { return node_writes_.load(); }
  uint64_t kubelet_errors() const { return kubelet_errors_.load(); }

 private:
  absl::Status KubeletFailed(const absl::Status& status);
  absl::Status ApiFailed(const absl::Status& status);

  kube::Api& api_;
  const PodResourcesClient& kubelet_;
  const NodeAgentOptions options_;
  std::atomic<uint64_t> rounds_{0};
  std::atomic<uint64_t> kubelet_errors_{0};
  std::atomic<uint64_t> api_errors_{0};
  std::atomic<uint64_t> pod_writes_{0};
  std::atomic<uint64_t> node_writes_{0};
};

}  // namespace agent

#endif  // GPU_TENANCY_AGENT_NODE_AGENT_H_
