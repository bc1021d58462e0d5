// Tenant quotas: a pod's demand in quota units on MIG, whole-GPU and shared nodes, and the check
// of holdings plus one pod against every kind of quota, at, under and over it.
#include "topology/quota.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace topology {
namespace {

const Labels kPlainNode = {};
const Labels kTimeSlicedNode = {{"nvidia.com/gpu.replicas", "4"},
                                {"nvidia.com/gpu.sharing-strategy", "time-slicing"}};
const Labels kSingleMigNode = {{"nvidia.com/mig.strategy", "single"},
                               {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}};

GpuDemand Demand(ResourceCounts devices, int64_t memory_mib = 0) {
  GpuDemand d;
  d.devices = std::move(devices);
  d.memory_mib = memory_mib;
  return d;
}

TEST(MigComputeSlicesTest, IsTheCountBeforeG) {
  EXPECT_EQ(MigComputeSlices("1g.10gb"), 1);
  EXPECT_EQ(MigComputeSlices("3g.40gb"), 3);
  EXPECT_EQ(MigComputeSlices("7g.80gb"), 7);
  EXPECT_EQ(MigComputeSlices("1g.10gb+me"), 1);
  EXPECT_EQ(MigComputeSlices("1g.10gb.me"), 1);
  EXPECT_EQ(MigComputeSlices("1c.3g.20gb"), 3);
  EXPECT_EQ(MigComputeSlices("gpu"), 0);
  EXPECT_EQ(MigComputeSlices(""), 0);
}

TEST(UsageOfTest, CountsEachDeviceKindOnTheNodeItLandsOn) {
  const Policy policy = Policy::AllowAll();
  QuotaUsage whole = UsageOf(Demand({{"nvidia.com/gpu", 2}}, 163840), kPlainNode, policy);
  EXPECT_EQ(whole.gpus, 2);
  EXPECT_EQ(whole.gpu_memory_mib, 163840);
  EXPECT_EQ(whole.gpu_pods, 1);
  EXPECT_TRUE(whole.mig_instances.empty());

  QuotaUsage mig = UsageOf(Demand({{"nvidia.com/mig-3g.40gb", 2}, {"nvidia.com/mig-1g.10gb", 1}}),
                           kPlainNode, policy);
  EXPECT_EQ(mig.gpus, 0);
  EXPECT_EQ(mig.mig_instances.at("3g.40gb"), 2);
  EXPECT_EQ(mig.mig_instances.at("1g.10gb"), 1);
  EXPECT_EQ(mig.mig_compute_slices, 7);

  // Under the single strategy nvidia.com/gpu is a MIG device of the product's profile.
  QuotaUsage single = UsageOf(Demand({{"nvidia.com/gpu", 1}}), kSingleMigNode, policy);
  EXPECT_EQ(single.gpus, 0);
  EXPECT_EQ(single.mig_instances.at("1g.5gb"), 1);
  EXPECT_EQ(single.mig_compute_slices, 1);

  QuotaUsage shared = UsageOf(Demand({{"nvidia.com/gpu.shared", 1}}, 8192), kPlainNode, policy);
  EXPECT_EQ(shared.shared_replicas, 1);
  EXPECT_EQ(shared.gpus, 0);
  // Where the node time-slices, plain nvidia.com/gpu is a replica too.
  EXPECT_EQ(UsageOf(Demand({{"nvidia.com/gpu", 1}}), kTimeSlicedNode, policy).shared_replicas, 1);

  EXPECT_EQ(UsageOf(GpuDemand{}, kPlainNode, policy), QuotaUsage{});
}

TEST(QuotaUsageTest, AddSumsEveryItemAndProfile) {
  QuotaUsage a;
  a.gpus = 1;
  a.mig_instances = {{"3g.40gb", 1}};
  a.mig_compute_slices = 3;
  a.gpu_pods = 2;
  QuotaUsage b;
  b.mig_instances = {{"3g.40gb", 1}, {"1g.10gb", 2}};
  b.mig_compute_slices = 5;
  b.shared_replicas = 4;
  b.gpu_memory_mib = 1024;
  b.gpu_pods = 3;
  a.Add(b);
  EXPECT_EQ(a.gpus, 1);
  EXPECT_EQ(a.mig_instances,
            (std::map<std::string, int64_t, std::less<>>{{"1g.10gb", 2}, {"3g.40gb", 2}}));
  EXPECT_EQ(a.mig_compute_slices, 8);
  EXPECT_EQ(a.shared_replicas, 4);
  EXPECT_EQ(a.gpu_memory_mib, 1024);
  EXPECT_EQ(a.gpu_pods, 5);
}

struct QuotaRow {
  std::string name;
  void (*set_quota)(TenantQuota&);  // null: no quota
  QuotaUsage held;
  QuotaUsage requested;
  std::string reason;  // "" when the pod fits the quota
};

QuotaUsage Gpus(int64_t n) {
  QuotaUsage u;
  u.gpus = n;
  u.gpu_pods = n > 0 ? 1 : 0;
  return u;
}
QuotaUsage Mig(std::map<std::string, int64_t, std::less<>> profiles) {
  QuotaUsage u;
  for (const auto& [profile, count] : profiles)
    u.mig_compute_slices += count * MigComputeSlices(profile);
  u.mig_instances = std::move(profiles);
  u.gpu_pods = 1;
  return u;
}
QuotaUsage Pods(int64_t n) {
  QuotaUsage u;
  u.gpu_pods = n;
  return u;
}
QuotaUsage Replicas(int64_t n, int64_t memory_mib = 0) {
  QuotaUsage u;
  u.shared_replicas = n;
  u.gpu_memory_mib = memory_mib;
  u.gpu_pods = 1;
  return u;
}

TEST(CheckQuotaTest, EveryKindAtUnderAndOver) {
  const std::vector<QuotaRow> rows = {
      {"no quota", nullptr, Gpus(100), Gpus(8), ""},
      {"gpus under", [](TenantQuota& q) { q.gpus = 3; }, Gpus(1), Gpus(1), ""},
      {"gpus reaching it", [](TenantQuota& q) { q.gpus = 3; }, Gpus(2), Gpus(1), ""},
      {"gpus over", [](TenantQuota& q) { q.gpus = 3; }, Gpus(3), Gpus(1),
       "tenant acme quota: nvidia.com/gpu 3 of 3 held, 1 requested"},
      {"gpus: one pod asking more than the quota", [](TenantQuota& q) { q.gpus = 3; }, Gpus(0),
       Gpus(4), "tenant acme quota: nvidia.com/gpu 0 of 3 held, 4 requested"},
      {"zero gpus allowed", [](TenantQuota& q) { q.gpus = 0; }, Gpus(0), Gpus(1),
       "tenant acme quota: nvidia.com/gpu 0 of 0 held, 1 requested"},
      {"mig profile at quota",
       [](TenantQuota& q) {
         q.mig_instances = {{"3g.40gb", 2}};
       },
       Mig({{"3g.40gb", 2}}), Mig({{"3g.40gb", 1}}),
       "tenant acme quota: nvidia.com/mig-3g.40gb 2 of 2 held, 1 requested"},
      {"mig: another profile is not limited by it",
       [](TenantQuota& q) {
         q.mig_instances = {{"3g.40gb", 2}};
       },
       Mig({{"3g.40gb", 2}}), Mig({{"1g.10gb", 3}}), ""},
      {"mig under",
       [](TenantQuota& q) {
         q.mig_instances = {{"3g.40gb", 2}};
       },
       Mig({{"3g.40gb", 1}}), Mig({{"3g.40gb", 1}}), ""},
      {"compute slices mixing profiles within the budget",
       [](TenantQuota& q) { q.mig_compute_slices = 7; }, Mig({{"3g.40gb", 1}, {"1g.10gb", 2}}),
       Mig({{"2g.20gb", 1}}), ""},
      {"compute slices over across profiles", [](TenantQuota& q) { q.mig_compute_slices = 7; },
       Mig({{"3g.40gb", 1}, {"1g.10gb", 2}}), Mig({{"3g.40gb", 1}}),
       "tenant acme quota: MIG compute slices 5 of 7 held, 3 requested"},
      {"shared replicas at quota", [](TenantQuota& q) { q.shared_replicas = 4; }, Replicas(4),
       Replicas(1), "tenant acme quota: shared GPU replicas 4 of 4 held, 1 requested"},
      {"shared replicas under", [](TenantQuota& q) { q.shared_replicas = 4; }, Replicas(3),
       Replicas(1), ""},
      {"memory in Gi", [](TenantQuota& q) { q.gpu_memory_mib = 160 * 1024; },
       Replicas(1, 150 * 1024), Replicas(1, 20 * 1024),
       "tenant acme quota: GPU memory 150Gi of 160Gi held, 20Gi requested"},
      {"memory reaching it exactly", [](TenantQuota& q) { q.gpu_memory_mib = 160 * 1024; },
       Replicas(1, 150 * 1024), Replicas(1, 10 * 1024), ""},
      {"memory not a whole Gi", [](TenantQuota& q) { q.gpu_memory_mib = 1000; }, Replicas(1, 512),
       Replicas(1, 600), "tenant acme quota: GPU memory 512Mi of 1000Mi held, 600Mi requested"},
      {"gpu pods", [](TenantQuota& q) { q.gpu_pods = 2; }, Pods(2), Replicas(1),
       "tenant acme quota: GPU pods 2 of 2 held, 1 requested"},
      {"above a lowered quota, a pod adding nothing to it passes",
       [](TenantQuota& q) { q.gpus = 1; }, Gpus(3), Replicas(1), ""},
      {"the first exceeded item is named, in field order",
       [](TenantQuota& q) {
         q.gpus = 1;
         q.gpu_pods = 1;
       },
       Gpus(1), Gpus(1), "tenant acme quota: nvidia.com/gpu 1 of 1 held, 1 requested"},
  };
  for (const QuotaRow& row : rows) {
    SCOPED_TRACE(row.name);
    TenantQuota quota;
    if (row.set_quota != nullptr) row.set_quota(quota);
    QuotaVerdict v = CheckQuota(quota, row.held, row.requested);
    EXPECT_EQ(v.ok, row.reason.empty());
    EXPECT_EQ(QuotaReason("acme", v), row.reason);
  }
}

TEST(CheckQuotaTest, TheVerdictCarriesHeldRequestedAndQuota) {
  TenantQuota quota;
  quota.mig_instances = {{"1g.10gb", 4}, {"3g.40gb", 2}};
  QuotaVerdict v = CheckQuota(quota, Mig({{"3g.40gb", 2}}), Mig({{"3g.40gb", 1}}));
  EXPECT_EQ(v, (QuotaVerdict{false, QuotaItem::kMigInstances, "3g.40gb", 2, 1, 2}));
  FitResult fit = QuotaRejection("acme", v);
  EXPECT_EQ(fit.verdict, Verdict::kUnresolvable);
  EXPECT_EQ(fit.code(), "tenant-quota");
  EXPECT_EQ(fit.Reason(), "tenant acme quota: nvidia.com/mig-3g.40gb 2 of 2 held, 1 requested");
}

TEST(QuotaUsageTest, RemovingWhatWasAddedRestoresAnEqualValue) {
  QuotaUsage total = Gpus(2);
  QuotaUsage pod = Mig({{"3g.40gb", 1}, {"1g.10gb", 2}});
  pod.gpu_memory_mib = 4096;
  total.Add(pod);
  EXPECT_EQ(total.mig_instances.at("1g.10gb"), 2);
  total.Add(pod, -1);
  EXPECT_EQ(total, Gpus(2));
  EXPECT_TRUE(total.mig_instances.empty());
  total.Add(Gpus(2), -1);
  EXPECT_TRUE(total.empty());
}

TEST(QuotaLinesTest, ListOnlyTheItemsTheQuotaSetsInFieldOrder) {
  TenantQuota quota;
  quota.gpu_pods = 10;
  quota.gpus = 3;
  quota.mig_instances = {{"3g.40gb", 2}, {"1g.10gb", 4}};
  quota.gpu_memory_mib = 160 * 1024;
  QuotaUsage used = Mig({{"3g.40gb", 1}});
  used.gpu_memory_mib = 40 * 1024;
  used.gpu_pods = 1;
  std::vector<QuotaLine> lines = QuotaLines(quota, used);
  ASSERT_EQ(lines.size(), 5u);
  auto line = [](const QuotaLine& l) {
    return l.resource + " " + std::to_string(l.used) + "/" + std::to_string(l.quota);
  };
  EXPECT_EQ(line(lines[0]), "nvidia.com/gpu 0/3");
  EXPECT_EQ(line(lines[1]), "nvidia.com/mig-1g.10gb 0/4");
  EXPECT_EQ(line(lines[2]), "nvidia.com/mig-3g.40gb 1/2");
  EXPECT_EQ(line(lines[3]), "gpu-memory-mib 40960/163840");
  EXPECT_EQ(line(lines[4]), "gpu-pods 1/10");
  EXPECT_TRUE(QuotaLines(TenantQuota{}, used).empty());
}

}  // namespace
}  // namespace topology
