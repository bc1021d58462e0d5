// topology/policy: mode names and sets, Policy lookups, Policy::Validate's cross-reference checks
// on policies built in code (the YAML path is config_loader_test's), AllowAll and ResolveTenant.
#include "topology/policy.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace topology {
namespace {

constexpr SharingMode kAllModes[] = {SharingMode::kExclusive, SharingMode::kMig,
                                     SharingMode::kMigShared, SharingMode::kMps,
                                     SharingMode::kTimeslice};

TEST(PolicyTest, ModeNamesRoundTrip) {
  struct Row {
    SharingMode mode;
    std::string name;
    bool shared;
  };
  const std::vector<Row> rows = {
      {SharingMode::kExclusive, "exclusive", false}, {SharingMode::kMig, "mig", false},
      {SharingMode::kMigShared, "mig-shared", true}, {SharingMode::kMps, "mps", true},
      {SharingMode::kTimeslice, "timeslice", true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(ModeName(row.mode), row.name);
    EXPECT_EQ(ParseMode(row.name), row.mode);
    EXPECT_EQ(IsSharedMode(row.mode), row.shared);
  }
  for (absl::string_view bad : {"", "MIG", "Exclusive", "mig_shared", "shared", " mps"}) {
    EXPECT_EQ(ParseMode(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ModeName(static_cast<SharingMode>(42)), "unknown");
}

TEST(PolicyTest, ModeSets) {
  struct Row {
    std::vector<SharingMode> add;
    std::string text;
    bool has_shared;
  };
  const std::vector<Row> rows = {
      {{}, "none", false},
      {{SharingMode::kMig, SharingMode::kExclusive}, "exclusive, mig", false},
      {{SharingMode::kTimeslice, SharingMode::kTimeslice}, "timeslice", true},
      {{SharingMode::kMps, SharingMode::kMig}, "mig, mps", true},
      {{SharingMode::kMigShared}, "mig-shared", true},
      {{SharingMode::kTimeslice, SharingMode::kMps, SharingMode::kMigShared, SharingMode::kMig,
        SharingMode::kExclusive},
       "exclusive, mig, mig-shared, mps, timeslice",
       true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    ModeSet set;
    for (SharingMode m : row.add) set.Add(m);
    EXPECT_EQ(set.ToString(), row.text);
    EXPECT_EQ(set.HasShared(), row.has_shared);
    for (SharingMode m : kAllModes) {
      const bool added = std::find(row.add.begin(), row.add.end(), m) != row.add.end();
      EXPECT_EQ(set.Has(m), added) << ModeName(m);
    }
  }
}

Policy TwoTenants() {
  Policy p;
  p.tiers = {{"trusted", {}, true, {}}, {"untrusted", {}, false, {}}};
  p.tiers[0].modes.Add(SharingMode::kMps);
  p.tiers[1].modes.Add(SharingMode::kMig);
  p.tenants.push_back({"bank", "untrusted", {"bank-prod", "bank-dev"}, {}, {}, {}, {}});
  p.tenants.push_back({"research", "trusted", {"research"}, {{"team", "ml"}}, {}, {}, {}});
  p.tenants.push_back({"labs", "trusted", {}, {{"team", "ml"}, {"env", "lab"}}, {}, {}, {}});
  p.pools = {{"mig-pool", SharingMode::kMig, Taint{"gpu", "mig", "NoSchedule"}},
             {"mps-pool", SharingMode::kMps, std::nullopt}};
  return p;
}

TEST(PolicyTest, Lookups) {
  const Policy p = TwoTenants();
  ASSERT_NE(p.FindTier("trusted"), nullptr);
  EXPECT_TRUE(p.FindTier("trusted")->device_access);
  EXPECT_EQ(p.FindTier("untrusted"), &p.tiers[1]);
  EXPECT_EQ(p.FindTier("Trusted"), nullptr);
  EXPECT_EQ(p.FindTier(""), nullptr);
  EXPECT_EQ(p.FindTenant("research"), &p.tenants[1]);
  EXPECT_EQ(p.FindTenant("bank-prod"), nullptr);
  EXPECT_EQ(p.FindPool("mps-pool"), &p.pools[1]);
  EXPECT_EQ(p.FindPool("mig"), nullptr);

  struct Row {
    std::string resource;
    bool memory;
    bool shared;
  };
  Policy q = p;
  q.shared_resources = {"example.com/shared-gpu"};
  const std::vector<Row> rows = {
      {"nvidia.com/gpu.memory", true, false},  {"nvidia.com/gpumem", true, false},
      {"nvidia.com/gpu", false, false},        {"example.com/shared-gpu", false, true},
      {"nvidia.com/gpu.shared", false, false}, {"", false, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.resource);
    EXPECT_EQ(q.IsMemoryResource(row.resource), row.memory);
    EXPECT_EQ(q.IsConfiguredShared(row.resource), row.shared);
  }
  q.memory_resources.clear();
  EXPECT_FALSE(q.IsMemoryResource("nvidia.com/gpu.memory"));
}

TEST(PolicyTest, Defaults) {
  const Policy p;
  EXPECT_TRUE(p.tiers.empty());
  EXPECT_EQ(p.unknown_tenant_tier, std::nullopt);
  EXPECT_EQ(p.pool_label, "gpu-tenancy.io/pool");
  EXPECT_EQ(p.memory_annotation, "gpu-tenancy.io/gpu-memory");
  EXPECT_TRUE(p.fail_requests_greater_than_one);
  EXPECT_EQ(p.scoring, ScoringStrategy::kBinpack);
  EXPECT_EQ(Canary().pod_label, "gpu-tenancy.io/canary");
  EXPECT_TRUE(p.Validate().ok()) << p.Validate();
  EXPECT_TRUE(TwoTenants().Validate().ok()) << TwoTenants().Validate();
}

TEST(PolicyTest, ValidateNamesTheOffendingEntry) {
  struct Row {
    std::string name;
    void (*edit)(Policy&);
    std::string message;
  };
  const std::vector<Row> rows = {
      {"empty tier name", [](Policy& p) { p.tiers.push_back({}); }, "tiers[2].name: empty"},
      {"duplicate tier",
       [](Policy& p) {
         p.tiers.push_back({"trusted", {}, false, {}});
       },
       "tiers[2].name: duplicate tier \"trusted\""},
      {"unknown tenant tier missing", [](Policy& p) { p.unknown_tenant_tier = "guest"; },
       "unknownTenant: tier \"guest\" is not defined"},
      {"empty tenant name", [](Policy& p) { p.tenants[1].name.clear(); }, "tenants[1].name: empty"},
      {"duplicate tenant", [](Policy& p) { p.tenants[2].name = "bank"; },
       "tenants[2].name: duplicate tenant \"bank\""},
      {"tenant tier missing", [](Policy& p) { p.tenants[0].tier = "gold"; },
       "tenants[0].tier: tier \"gold\" of tenant \"bank\" is not defined"},
      {"tenant without namespaces or selector",
       [](Policy& p) { p.tenants[2].namespace_selector.clear(); },
       "tenants[2]: tenant \"labs\" needs namespaces or namespaceSelector"},
      {"namespace claimed twice", [](Policy& p) { p.tenants[1].namespaces.push_back("bank-dev"); },
       "tenants[1].namespaces: \"bank-dev\" already belongs to tenant \"bank\""},
      {"namespace twice in one tenant",
       [](Policy& p) { p.tenants[0].namespaces.push_back("bank-prod"); },
       "tenants[0].namespaces: \"bank-prod\" already belongs to tenant \"bank\""},
      {"empty pool name", [](Policy& p) { p.pools[0].name.clear(); }, "pools[0].name: empty"},
      {"duplicate pool", [](Policy& p) { p.pools[1].name = "mig-pool"; },
       "pools[1].name: duplicate pool \"mig-pool\""},
      {"negative canary reserve",
       [](Policy& p) {
         p.canary = Canary{"1g.10gb", -1};
       },
       "canary.reserve: must not be negative"},
      {"tiers are checked before tenants",
       [](Policy& p) {
         p.tenants[0].tier = "gold";
         p.tiers.push_back({});
       },
       "tiers[2].name: empty"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Policy p = TwoTenants();
    row.edit(p);
    absl::Status s = p.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_EQ(s.message(), row.message);
  }
  Policy zero = TwoTenants();
  zero.canary = Canary{"1g.10gb", 0};
  EXPECT_TRUE(zero.Validate().ok()) << zero.Validate();
}

TEST(PolicyTest, AllowAll) {
  const Policy p = Policy::AllowAll();
  ASSERT_EQ(p.tiers.size(), 1u);
  EXPECT_EQ(p.tiers[0].name, "default");
  EXPECT_FALSE(p.tiers[0].device_access);
  for (SharingMode m : kAllModes) EXPECT_TRUE(p.tiers[0].modes.Has(m)) << ModeName(m);
  EXPECT_EQ(p.unknown_tenant_tier, "default");
  EXPECT_TRUE(p.tenants.empty());
  EXPECT_TRUE(p.Validate().ok());
  const TenantRef ref = ResolveTenant(p, "anything", {{"team", "ml"}});
  EXPECT_EQ(ref.name, "unknown");
  EXPECT_EQ(ref.tenant, nullptr);
  EXPECT_EQ(ref.tier, &p.tiers[0]);
  EXPECT_FALSE(ref.Denied());
}

TEST(PolicyTest, ResolveTenant) {
  Policy p = TwoTenants();
  struct Row {
    std::string name;
    std::string ns;
    Labels labels;
    std::optional<std::string> unknown_tier;
    std::string tenant;  // "unknown" for none
    std::string tier;    // "" when denied
  };
  const std::vector<Row> rows = {
      {"listed namespace", "bank-dev", {}, std::nullopt, "bank", "untrusted"},
      {"listed beats a selector match",
       "bank-prod",
       {{"team", "ml"}},
       std::nullopt,
       "bank",
       "untrusted"},
      {"selector, first in policy order",
       "x",
       {{"team", "ml"}, {"env", "lab"}},
       std::nullopt,
       "research",
       "trusted"},
      {"selector needs every label", "x", {{"env", "lab"}}, std::nullopt, "unknown", ""},
      {"selector value must match", "x", {{"team", "ops"}}, std::nullopt, "unknown", ""},
      {"namespace names are exact", "Bank-Dev", {}, std::nullopt, "unknown", ""},
      {"unknown, denied", "default", {}, std::nullopt, "unknown", ""},
      {"unknown, admitted", "default", {}, "untrusted", "unknown", "untrusted"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    p.unknown_tenant_tier = row.unknown_tier;
    const TenantRef ref = ResolveTenant(p, row.ns, row.labels);
    EXPECT_EQ(ref.name, row.tenant);
    if (row.tenant == "unknown") {
      EXPECT_EQ(ref.tenant, nullptr);
    } else {
      ASSERT_NE(ref.tenant, nullptr);
      EXPECT_EQ(ref.tenant->name, row.tenant);
    }
    EXPECT_EQ(ref.Denied(), row.tier.empty());
    EXPECT_EQ(ref.tier ? ref.tier->name : "", row.tier);
  }
}

TEST(PolicyTest, EmptySelectorMatchesNothing) {
  Policy p;
  p.tiers = {{"t", {}, false, {}}};
  p.tenants.push_back({"only-ns", "t", {"a"}, {}, {}, {}, {}});
  EXPECT_EQ(ResolveTenant(p, "b", {}).name, "unknown");
  EXPECT_EQ(ResolveTenant(p, "b", {{"any", "label"}}).name, "unknown");
  EXPECT_EQ(ResolveTenant(p, "a", {}).name, "only-ns");
}

}  // namespace
}  // namespace topology
