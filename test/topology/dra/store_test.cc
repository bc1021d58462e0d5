// DraStore: claim allocations and releases from each change (watch events and relists that
// missed some), and the DraState built from what is stored.
#include "topology/dra/store.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dra_store_test {
namespace {

using topology::ClaimTransition;
using topology::DraStore;
using Kind = ClaimTransition::Kind;

topology::DraClaim Claim(const std::string& name, const std::string& device = "",
                         const std::string& uid = "") {
  topology::DraClaim c;
  c.namespace_name = "team-a";
  c.name = name;
  c.uid = uid.empty() ? "uid-" + name : uid;
  if (!device.empty()) {
    c.allocated = true;
    c.allocated_node = "node-a";
    topology::DraAllocationResult r;
    r.request = "mig";
    r.driver = "gpu.nvidia.com";
    r.pool = "node-a";
    r.device = device;
    c.results.push_back(r);
  }
  return c;
}

topology::DraSlice Slice(const std::string& name, const std::vector<std::string>& devices) {
  topology::DraSlice s;
  s.name = name;
  s.driver = "gpu.nvidia.com";
  s.pool = "node-a";
  s.node = "node-a";
  s.generation = 1;
  for (const std::string& d : devices) {
    topology::DraDevice device;
    device.driver = s.driver;
    device.pool = s.pool;
    device.node = s.node;
    device.name = d;
    device.type = "mig";
    device.uuid = "MIG-" + d;
    s.devices.push_back(device);
  }
  return s;
}

// "allocated team-a/a" / "released team-a/a (deleted)" per transition.
std::vector<std::string> Describe(const std::vector<ClaimTransition>& ts) {
  std::vector<std::string> out;
  for (const ClaimTransition& t : ts) {
    std::string line = t.kind == Kind::kAllocated ? "allocated " : "released ";
    line += t.claim->namespace_name + "/" + t.claim->name + " " + t.claim->uid;
    if (t.deleted) line += " (deleted)";
    out.push_back(line);
  }
  return out;
}

TEST(DraStoreTest, TransitionsOfOneClaim) {
  using Shared = std::shared_ptr<const topology::DraClaim>;
  const Shared pending = std::make_shared<const topology::DraClaim>(Claim("a"));
  const Shared held = std::make_shared<const topology::DraClaim>(Claim("a", "gpu-0"));
  const Shared moved = std::make_shared<const topology::DraClaim>(Claim("a", "gpu-1"));
  const Shared recreated =
      std::make_shared<const topology::DraClaim>(Claim("a", "gpu-0", "uid-other"));
  struct Case {
    const char* name;
    Shared before;
    Shared after;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"created unallocated", nullptr, pending, {}},
      {"created allocated", nullptr, held, {"allocated team-a/a uid-a"}},
      {"allocated by the scheduler", pending, held, {"allocated team-a/a uid-a"}},
      {"unchanged allocation", held, held, {}},
      {"deallocated", held, pending, {"released team-a/a uid-a"}},
      {"deleted while allocated", held, nullptr, {"released team-a/a uid-a (deleted)"}},
      {"deleted unallocated", pending, nullptr, {}},
      {"reallocated in one step",
       held,
       moved,
       {"released team-a/a uid-a", "allocated team-a/a uid-a"}},
      {"recreated under the same name",
       held,
       recreated,
       {"released team-a/a uid-a (deleted)", "allocated team-a/a uid-other"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Describe(topology::ClaimTransitions(c.before, c.after)), c.want);
  }
}

TEST(DraStoreTest, WatchEventsAndRelistsReportEachAllocationOnce) {
  DraStore store;
  EXPECT_TRUE(store.ReplaceClaims({Claim("a"), Claim("b", "gpu-1")}).size() == 1);
  EXPECT_EQ(Describe(store.UpsertClaim(Claim("a", "gpu-0"))),
            std::vector<std::string>{"allocated team-a/a uid-a"});
  EXPECT_TRUE(store.UpsertClaim(Claim("a", "gpu-0")).empty()) << "a repeated event";
  EXPECT_EQ(Describe(store.DeleteClaim("team-a", "a")),
            std::vector<std::string>{"released team-a/a uid-a (deleted)"});
  EXPECT_TRUE(store.DeleteClaim("team-a", "a").empty());

  // A relist that missed events: b was released and deleted, c allocated, d created pending.
  EXPECT_EQ(
      Describe(store.ReplaceClaims({Claim("d"), Claim("c", "gpu-2")})),
      (std::vector<std::string>{"released team-a/b uid-b (deleted)", "allocated team-a/c uid-c"}));
  EXPECT_EQ(store.claim_count(), 2u);
  EXPECT_TRUE(store.ReplaceClaims({Claim("d"), Claim("c", "gpu-2")}).empty());
}

TEST(DraStoreTest, BuildsTheStateFromEverythingStored) {
  DraStore store;
  store.ReplaceSlices({Slice("s1", {"gpu-0", "gpu-1"})});
  (void)store.ReplaceClaims({Claim("a", "gpu-0")});
  topology::DraDeviceClass mig;
  mig.name = "mig.nvidia.com";
  store.ReplaceClasses({mig});
  topology::DraClaim tmpl = Claim("template");
  tmpl.uid.clear();
  store.UpsertTemplate(tmpl);

  const topology::DraState state = *store.Build();
  ASSERT_EQ(state.devices().size(), 2u);
  ASSERT_EQ(state.claims.size(), 1u);
  ASSERT_EQ(state.classes().size(), 1u);
  ASSERT_EQ(state.templates.size(), 1u);
  const topology::DraDevice* held = state.Find(state.claims.Sorted()[0]->results[0]);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->uuid, "MIG-gpu-0");

  // A second slice, then the first one gone: its devices go with it.
  store.UpsertSlice(Slice("s2", {"gpu-2"}));
  EXPECT_EQ(store.Build()->devices().size(), 3u);
  store.DeleteSlice("s1");
  const topology::DraState after = *store.Build();
  ASSERT_EQ(after.devices().size(), 1u);
  EXPECT_EQ(after.Find(after.claims.Sorted()[0]->results[0]), nullptr) << "its slice is gone";
  store.DeleteClass("mig.nvidia.com");
  store.DeleteTemplate("team-a", "template");
  EXPECT_TRUE(store.Build()->classes().empty());
  EXPECT_TRUE(store.Build()->templates.empty());
}

// A claim event rebuilds only what claims give: the devices, their index and the per-class
// selector counts are shared with the state before, until a slice or a class changes.
TEST(DraStoreTest, ClaimEventsShareTheDeviceSet) {
  DraStore store;
  store.ReplaceSlices({Slice("s1", {"gpu-0", "gpu-1"})});
  topology::DraDeviceClass mig;
  mig.name = "mig.nvidia.com";
  mig.selectors = {"device.driver == 'gpu.nvidia.com'"};
  store.ReplaceClasses({mig});
  store.ReplaceClaims({});
  const topology::DraState before = *store.Build();
  ASSERT_NE(before.ClassesOnNode("node-a"), nullptr);
  ASSERT_EQ(before.ClassesOnNode("node-a")->at(0).devices, 2);
  EXPECT_EQ(before.ClassesOnNode("node-a")->at(0).allocated, 0);

  store.UpsertClaim(Claim("a", "gpu-0"));
  const topology::DraState after = *store.Build();
  EXPECT_EQ(after.device_set, before.device_set) << "shared, not rebuilt";
  ASSERT_NE(after.ClassesOnNode("node-a"), nullptr);
  EXPECT_EQ(after.ClassesOnNode("node-a")->at(0).allocated, 1);
  EXPECT_EQ(before.ClassesOnNode("node-a")->at(0).allocated, 0) << "the state before stays";

  store.UpsertSlice(Slice("s1", {"gpu-0", "gpu-1", "gpu-2"}));
  const topology::DraState resliced = *store.Build();
  EXPECT_NE(resliced.device_set, after.device_set);
  ASSERT_NE(resliced.ClassesOnNode("node-a"), nullptr);
  EXPECT_EQ(resliced.ClassesOnNode("node-a")->at(0).devices, 3);
  EXPECT_EQ(resliced.ClassesOnNode("node-a")->at(0).allocated, 1);
  store.DeleteClass("mig.nvidia.com");
  EXPECT_EQ(store.Build()->ClassesOnNode("node-a"), nullptr);
}

}  // namespace
}  // namespace dra_store_test
