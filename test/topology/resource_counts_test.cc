#include "topology/resource_counts.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace topology {
namespace {

std::vector<std::string> Names(const ResourceCounts& counts) {
  std::vector<std::string> out;
  for (const ResourceCount& e : counts) out.push_back(e.name);
  return out;
}

TEST(ResourceCountsTest, KeepsNamesInOrderWhateverTheInsertionOrder) {
  ResourceCounts counts;
  counts.Set("nvidia.com/mig-3g.40gb", 1);
  counts.Set("nvidia.com/gpu", 2);
  counts.Set("nvidia.com/mig-1g.10gb", 3);
  EXPECT_EQ(Names(counts), (std::vector<std::string>{"nvidia.com/gpu", "nvidia.com/mig-1g.10gb",
                                                     "nvidia.com/mig-3g.40gb"}));
  EXPECT_EQ(counts.size(), 3u);
}

TEST(ResourceCountsTest, GetIsZeroForAnAbsentName) {
  ResourceCounts counts{{"nvidia.com/gpu", 2}};
  EXPECT_EQ(counts.Get("nvidia.com/gpu"), 2);
  EXPECT_EQ(counts.Get("nvidia.com/gpu.shared"), 0);
  EXPECT_EQ(counts.Get(""), 0);
  EXPECT_EQ(counts.Find("nvidia.com/gpu.shared"), nullptr);
}

TEST(ResourceCountsTest, SetReplacesAndZeroRemoves) {
  ResourceCounts counts{{"nvidia.com/gpu", 2}};
  counts.Set("nvidia.com/gpu", 5);
  EXPECT_EQ(counts.Get("nvidia.com/gpu"), 5);
  counts.Set("nvidia.com/gpu", 0);
  EXPECT_TRUE(counts.empty());
  counts.Set("nvidia.com/gpu", 0);  // removing what is not there is no entry either
  EXPECT_TRUE(counts.empty());
}

TEST(ResourceCountsTest, AddSumsAndRemovesTheNameWhenItReachesZero) {
  ResourceCounts counts;
  counts.Add("nvidia.com/gpu.shared", 3);
  counts.Add("nvidia.com/gpu.shared", 2);
  EXPECT_EQ(counts.Get("nvidia.com/gpu.shared"), 5);
  counts.Add("nvidia.com/gpu.shared", -5);
  EXPECT_EQ(counts.Find("nvidia.com/gpu.shared"), nullptr);
  counts.Add("nvidia.com/gpu", 0);
  EXPECT_TRUE(counts.empty());
  // A removal below zero is kept as a negative count rather than hidden: callers pair adds and
  // removals, and a negative number makes a mismatch visible.
  counts.Add("nvidia.com/gpu", -1);
  EXPECT_EQ(counts.Get("nvidia.com/gpu"), -1);
}

TEST(ResourceCountsTest, TheInitializerListAddsRepeatedNames) {
  ResourceCounts counts{{"nvidia.com/gpu", 1}, {"nvidia.com/gpu", 2}};
  EXPECT_EQ(counts.Get("nvidia.com/gpu"), 3);
  EXPECT_EQ(counts.size(), 1u);
}

TEST(ResourceCountsTest, FindsByAnotherEntryWithoutHashingAgain) {
  const ResourceCounts demand{{"nvidia.com/mig-3g.40gb", 1}};
  const ResourceCounts held{{"nvidia.com/mig-1g.10gb", 4}, {"nvidia.com/mig-3g.40gb", 2}};
  const ResourceCount& wanted = *demand.begin();
  EXPECT_EQ(wanted.key, ResourceKey("nvidia.com/mig-3g.40gb"));
  const ResourceCount* found = held.Find(wanted);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->name, "nvidia.com/mig-3g.40gb");
  EXPECT_EQ(held.Get(wanted), 2);
  EXPECT_EQ(ResourceCounts().Get(wanted), 0);
}

TEST(ResourceCountsTest, AMatchingKeyIsNotEnoughTheNameMustMatchToo) {
  ResourceCounts held{{"nvidia.com/gpu", 4}};
  // An entry that claims the stored key for another name, as a hash collision would.
  ResourceCount impostor{"nvidia.com/gpu.shared", 1, ResourceKey("nvidia.com/gpu")};
  EXPECT_EQ(held.Find(impostor), nullptr);
  EXPECT_EQ(held.Get(impostor), 0);
}

TEST(ResourceCountsTest, EqualityComparesNamesAndCounts) {
  ResourceCounts a{{"nvidia.com/gpu", 1}, {"nvidia.com/mig-1g.10gb", 2}};
  ResourceCounts b;
  b.Set("nvidia.com/mig-1g.10gb", 2);
  b.Set("nvidia.com/gpu", 1);
  EXPECT_EQ(a, b);
  b.Add("nvidia.com/gpu", 1);
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a == (ResourceCounts{{"nvidia.com/gpu", 1}}));
  EXPECT_EQ(ResourceCounts(), ResourceCounts());
}

}  // namespace
}  // namespace topology
