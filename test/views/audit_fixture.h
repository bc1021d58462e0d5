// Small clusters for the audit's table tests: nodes and pods in a line of C++ each, the demo
// policy (tenants acme and bank untrusted, research trusted, gpu-platform with device access)
// and the built-in catalog.
#ifndef GPU_TENANCY_TEST_VIEWS_AUDIT_FIXTURE_H_
#define GPU_TENANCY_TEST_VIEWS_AUDIT_FIXTURE_H_

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "gtest/gtest.h"
#include "topology/snapshot.h"
#include "views/audit.h"

namespace views::testing {

using Resources = std::map<std::string, std::string>;

inline topology::Policy AuditDemoPolicy() {
  std::ifstream in(std::string(GT_SOURCE_DIR) + "/cmd/demo/policy.yaml");
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(text.str());
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *std::move(policy) : topology::Policy::AllowAll();
}

inline topology::NodeFacts GpuNode(const std::string& name, topology::Labels labels,
                                   const Resources& allocatable) {
  topology::NodeFacts n;
  n.name = name;
  n.labels = std::move(labels);
  for (const auto& [resource, count] : allocatable) {
    n.allocatable.emplace(resource, *topology::Quantity::Parse(count));
  }
  return n;
}

// An H100 80GB node with MIG in the mixed strategy, in pool gpu-mig.
inline topology::NodeFacts MigNode(const std::string& name, int gpus, const Resources& allocatable,
                                   const std::string& state = "success",
                                   topology::Labels extra = {}) {
  extra.insert({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                {"nvidia.com/gpu.count", absl::StrCat(gpus)},
                {"nvidia.com/gpu.replicas", "0"},
                {"nvidia.com/mig.capable", "true"},
                {"nvidia.com/mig.strategy", "mixed"},
                {"nvidia.com/mig.config", "tenancy-3-2-1-1"},
                {"nvidia.com/mig.config.state", state},
                {"gpu-tenancy.io/pool", "gpu-mig"}});
  return GpuNode(name, std::move(extra), allocatable);
}

// An A100 40GB node sharing its GPUs (strategy "time-slicing" or "mps", 4 replicas each).
inline topology::NodeFacts SharedNode(const std::string& name, const std::string& strategy,
                                      int gpus, const Resources& allocatable,
                                      const std::string& pool = "",
                                      const std::string& product = "NVIDIA-A100-SXM4-40GB") {
  topology::Labels labels = {{"nvidia.com/gpu.product", product},
                             {"nvidia.com/gpu.count", absl::StrCat(gpus)},
                             {"nvidia.com/gpu.memory", "40960"},
                             {"nvidia.com/gpu.replicas", "4"},
                             {"nvidia.com/gpu.sharing-strategy", strategy},
                             {"nvidia.com/mig.capable", "false"}};
  if (!pool.empty()) labels["gpu-tenancy.io/pool"] = pool;
  return GpuNode(name, std::move(labels), allocatable);
}

inline topology::NodeFacts ExclusiveNode(const std::string& name, int gpus) {
  return GpuNode(name,
                 {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                  {"nvidia.com/gpu.count", absl::StrCat(gpus)},
                  {"nvidia.com/gpu.replicas", "1"},
                  {"gpu-tenancy.io/pool", "gpu-exclusive"}},
                 {{"nvidia.com/gpu", absl::StrCat(gpus)}});
}

inline topology::PodFacts GpuPod(const std::string& ns, const std::string& name,
                                 const std::string& node, const Resources& limits,
                                 std::optional<int> gpu_index = std::nullopt) {
  topology::PodFacts p;
  p.namespace_name = ns;
  p.name = name;
  p.uid = absl::StrCat(ns, "-", name);
  p.node_name = node;
  p.phase = "Running";
  topology::ContainerFacts c;
  c.name = "main";
  for (const auto& [resource, count] : limits) {
    c.limits.emplace(resource, *topology::Quantity::Parse(count));
    c.requests.emplace(resource, *topology::Quantity::Parse(count));
  }
  p.containers.push_back(std::move(c));
  if (gpu_index) p.annotations["gpu-tenancy.io/gpu-index"] = absl::StrCat(*gpu_index);
  return p;
}

// The model the audit reads, owning what it points to.
struct AuditModel {
  std::shared_ptr<const topology::Policy> policy;
  std::shared_ptr<topology::ModelState> state = std::make_shared<topology::ModelState>();

  AuditModel(std::vector<topology::NodeFacts> nodes, std::vector<topology::PodFacts> pods,
             topology::Policy p = AuditDemoPolicy())
      : AuditModel(Data(std::move(nodes), std::move(pods)), std::move(p)) {}
  static topology::ClusterData Data(std::vector<topology::NodeFacts> nodes,
                                    std::vector<topology::PodFacts> pods) {
    topology::ClusterData data;
    data.nodes = std::move(nodes);
    data.pods = std::move(pods);
    return data;
  }
  // A cluster with DRA objects too.
  AuditModel(topology::ClusterData data, topology::Policy p) {
    for (const char* ns : {"acme", "research", "research-dev", "gpu-ops"}) {
      data.namespace_labels[ns] = {{"kubernetes.io/metadata.name", ns}};
    }
    data.namespace_labels["bank-prod"] = {{"gpu-tenancy.io/tenant", "bank"}};
    policy = std::make_shared<const topology::Policy>(std::move(p));
    state->policy = policy;
    state->catalog = &common::BuiltinCatalog();
    state->snapshot = std::make_shared<const topology::ClusterSnapshot>(
        topology::BuildSnapshot(data, common::BuiltinCatalog(), *policy));
  }
  AuditInputs Inputs() const {
    AuditInputs in;
    in.state = state.get();
    return in;
  }
};

}  // namespace views::testing

#endif  // GPU_TENANCY_TEST_VIEWS_AUDIT_FIXTURE_H_
