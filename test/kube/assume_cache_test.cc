// AssumeCache: what bind assumed until the watch confirms it, bind forgets it, or it expires.
#include "kube/assume_cache.h"

#include <chrono>
#include <memory>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace {

using kube::AssumeCache;
using kube::Clock;
using std::chrono::seconds;

const Clock::TimePoint kT0 = Clock::TimePoint() + seconds(1000);

AssumeCache::Assumption On(const std::string& node, Clock::TimePoint expiry,
                           const std::string& uid = "u") {
  auto hold = std::make_shared<topology::PodHold>();
  hold->uid = uid;
  hold->assumed = true;
  return {node, std::move(hold), expiry};
}

TEST(AssumeCacheTest, AddFindAndTake) {
  AssumeCache cache;
  EXPECT_EQ(cache.Find("u1"), nullptr);
  EXPECT_FALSE(cache.Take("u1").has_value());
  cache.Add("u1", On("node-a", kT0 + seconds(30), "u1"));
  ASSERT_NE(cache.Find("u1"), nullptr);
  EXPECT_EQ(cache.Find("u1")->node, "node-a");
  EXPECT_TRUE(cache.Contains("u1"));
  EXPECT_EQ(cache.size(), 1u);

  std::optional<AssumeCache::Assumption> taken = cache.Take("u1");
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->node, "node-a");
  EXPECT_EQ(taken->hold->uid, "u1");
  EXPECT_FALSE(cache.Contains("u1"));
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.Take("u1").has_value()) << "taken once only";
}

TEST(AssumeCacheTest, ARetriedBindReplacesTheEarlierAssumption) {
  AssumeCache cache;
  cache.Add("u1", On("node-a", kT0 + seconds(30)));
  cache.Add("u1", On("node-b", kT0 + seconds(60)));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Find("u1")->node, "node-b");
  EXPECT_EQ(cache.Find("u1")->expiry, kT0 + seconds(60));
}

TEST(AssumeCacheTest, TakeExpiredRemovesThoseDueAtOrBeforeNow) {
  AssumeCache cache;
  cache.Add("early", On("node-a", kT0 - seconds(1)));
  cache.Add("due", On("node-b", kT0));
  cache.Add("later", On("node-c", kT0 + seconds(1)));

  std::set<std::string> expired;
  for (const auto& [uid, a] : cache.TakeExpired(kT0)) expired.insert(uid + "@" + a.node);
  EXPECT_EQ(expired, (std::set<std::string>{"early@node-a", "due@node-b"}));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.Contains("later"));
  EXPECT_TRUE(cache.TakeExpired(kT0).empty()) << "each expires once";
  EXPECT_EQ(cache.TakeExpired(kT0 + seconds(1)).size(), 1u);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(AssumeCacheTest, ForEachVisitsEveryAssumption) {
  AssumeCache cache;
  cache.Add("u1", On("node-a", kT0));
  cache.Add("u2", On("node-a", kT0));
  cache.Add("u3", On("node-b", kT0));
  std::set<std::string> seen;
  cache.ForEach([&](const std::string& uid, const AssumeCache::Assumption& a) {
    seen.insert(uid + "@" + a.node);
  });
  EXPECT_EQ(seen, (std::set<std::string>{"u1@node-a", "u2@node-a", "u3@node-b"}));
}

}  // namespace
