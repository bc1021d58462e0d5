// Tenant quotas at admission, through Review: a pod that would pass its tenant's quota is
// admitted with a warning saying it will stay Pending and why, or denied with
// `quotaEnforcement: admission`; under quota, for other tenants, for pods without GPUs and on
// the mutating webhook nothing is said.
#include "webhook/quota_rules.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/webhook/webhook_test_util.h"

namespace {

using webhook::ReviewKind;
using webhook_test::Reply;
using webhook_test::ReviewOptions;
using webhook_test::RunReview;
using webhook_test::TestPolicy;
using webhook_test::Yaml;

rapidjson::Document GpuPodYaml(const std::string& ns, const std::string& resource, int count) {
  return Yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: train, namespace: " + ns +
              "}\nspec:\n  containers:\n  - name: main\n    image: x\n    resources:\n"
              "      limits: {" +
              resource + ": " + std::to_string(count) + "}\n");
}

// acme holds `held` whole GPUs on an exclusive node.
topology::ClusterSnapshot AcmeHolding(const topology::Policy& policy, int held) {
  topology::ClusterData data;
  topology::NodeFacts node;
  node.name = "h100-1";
  node.labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}};
  node.allocatable = {{"nvidia.com/gpu", topology::Quantity::FromUnits(8)}};
  data.nodes.push_back(node);
  for (int i = 0; i < held; ++i) {
    topology::PodFacts pod;
    pod.namespace_name = "acme";
    pod.name = "held-" + std::to_string(i);
    pod.uid = "uid-held-" + std::to_string(i);
    pod.node_name = "h100-1";
    pod.phase = "Running";
    topology::ContainerFacts c;
    c.name = "main";
    c.limits = {{"nvidia.com/gpu", topology::Quantity::FromUnits(1)}};
    pod.containers.push_back(c);
    data.pods.push_back(pod);
  }
  data.namespace_labels["acme"] = {};
  return topology::BuildSnapshot(data, common::BuiltinCatalog(), policy);
}

topology::Policy QuotaPolicy(topology::QuotaEnforcement enforcement) {
  topology::Policy policy = TestPolicy();
  for (topology::Tenant& t : policy.tenants) {
    if (t.name == "acme") t.quota.gpus = 3;
  }
  policy.quota_enforcement = enforcement;
  return policy;
}

constexpr char kAtQuota[] = "tenant acme quota: nvidia.com/gpu 3 of 3 held, 1 requested";

TEST(TenantQuotaAdmissionTest, AtQuotaThePodIsAdmittedWithAWarning) {
  topology::Policy policy = QuotaPolicy(topology::QuotaEnforcement::kScheduling);
  Reply r = RunReview(GpuPodYaml("acme", "nvidia.com/gpu", 1), ReviewKind::kValidate, policy, {},
                      AcmeHolding(policy, 3));
  ASSERT_EQ(r.http_status, 200);
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.warnings,
            std::vector<std::string>{std::string(kAtQuota) +
                                     "; the pod will stay Pending until the tenant's other GPU "
                                     "pods release enough"});
}

TEST(TenantQuotaAdmissionTest, WithAdmissionEnforcementThePodIsDenied) {
  topology::Policy policy = QuotaPolicy(topology::QuotaEnforcement::kAdmission);
  Reply r = RunReview(GpuPodYaml("acme", "nvidia.com/gpu", 1), ReviewKind::kValidate, policy, {},
                      AcmeHolding(policy, 3));
  ASSERT_EQ(r.http_status, 200);
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.message, std::string("[tenant-quota] ") + kAtQuota);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(TenantQuotaAdmissionTest, NothingIsSaidWhereTheQuotaHasRoomOrDoesNotApply) {
  for (auto enforcement :
       {topology::QuotaEnforcement::kScheduling, topology::QuotaEnforcement::kAdmission}) {
    topology::Policy policy = QuotaPolicy(enforcement);
    struct Row {
      const char* name;
      rapidjson::Document pod;
      int held;
      ReviewKind kind;
      std::string ns;
    };
    std::vector<Row> rows;
    rows.push_back(
        {"under quota", GpuPodYaml("acme", "nvidia.com/gpu", 1), 2, ReviewKind::kValidate, "acme"});
    rows.push_back({"reaching it exactly", GpuPodYaml("acme", "nvidia.com/gpu", 2), 1,
                    ReviewKind::kValidate, "acme"});
    rows.push_back({"an item the quota does not limit",
                    GpuPodYaml("acme", "nvidia.com/mig-1g.10gb", 1), 3, ReviewKind::kValidate,
                    "acme"});
    rows.push_back({"another tenant", GpuPodYaml("research", "nvidia.com/gpu", 1), 3,
                    ReviewKind::kValidate, "research"});
    rows.push_back({"no GPU", GpuPodYaml("acme", "cpu", 1), 3, ReviewKind::kValidate, "acme"});
    rows.push_back({"the mutating webhook", GpuPodYaml("acme", "nvidia.com/gpu", 1), 3,
                    ReviewKind::kMutate, "acme"});
    for (const Row& row : rows) {
      SCOPED_TRACE(row.name);
      ReviewOptions o;
      o.ns = row.ns;
      Reply r = RunReview(row.pod, row.kind, policy, o, AcmeHolding(policy, row.held));
      ASSERT_EQ(r.http_status, 200);
      EXPECT_TRUE(r.allowed) << r.message;
      for (const std::string& w : r.warnings) EXPECT_EQ(w.find("quota"), std::string::npos) << w;
    }
  }
}

TEST(TenantQuotaAdmissionTest, AnUpdateIsNotJudgedAgain) {
  topology::Policy policy = QuotaPolicy(topology::QuotaEnforcement::kAdmission);
  rapidjson::Document pod = GpuPodYaml("acme", "nvidia.com/gpu", 1);
  ReviewOptions o;
  o.operation = "UPDATE";
  o.old_object = &pod;
  Reply r = RunReview(pod, ReviewKind::kValidate, policy, o, AcmeHolding(policy, 3));
  EXPECT_TRUE(r.allowed) << r.message;
}

}  // namespace
