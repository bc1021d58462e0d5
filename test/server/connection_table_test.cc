// ConnectionTable: who is evicted, or refused, when a limit is reached.
#include "server/connection_table.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace server {
namespace {

using Reason = ConnectionTable::EvictReason;

std::vector<ConnectionTable::Id> Evicted(const ConnectionTable::Admission& a) {
  std::vector<ConnectionTable::Id> ids;
  for (const auto& e : a.evict) ids.push_back(e.id);
  return ids;
}

TEST(ConnectionTableTest, AdmitsUnderTheLimitsWithoutEvicting) {
  ConnectionTable t({.total = 4, .per_peer = 2});
  for (ConnectionTable::Id id : {1, 2}) {
    ConnectionTable::Admission a = t.Admit(id, "10.0.0.1");
    EXPECT_TRUE(a.admitted);
    EXPECT_TRUE(a.evict.empty());
  }
  EXPECT_TRUE(t.Admit(3, "10.0.0.2").admitted);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.peer_count("10.0.0.1"), 2u);
  EXPECT_EQ(t.peer_count("10.0.0.2"), 1u);
  EXPECT_EQ(t.peer_count("10.0.0.3"), 0u);
}

TEST(ConnectionTableTest, APeerAtItsLimitGivesUpItsOwnOldestEvictable) {
  ConnectionTable t({.total = 100, .per_peer = 3});
  t.Admit(1, "a");
  t.Admit(2, "a");
  t.Admit(3, "a");
  t.Admit(9, "b");
  t.MarkEvictable(1);  // 1 began a request just now: 2 is the oldest
  ConnectionTable::Admission a = t.Admit(4, "a");
  EXPECT_TRUE(a.admitted);
  ASSERT_EQ(a.evict.size(), 1u);
  EXPECT_EQ(a.evict[0].id, 2u);
  EXPECT_EQ(a.evict[0].reason, Reason::kPerPeerLimit);
  EXPECT_EQ(t.peer_count("a"), 3u);
  EXPECT_EQ(t.peer_count("b"), 1u);  // another peer is never evicted for this one
}

TEST(ConnectionTableTest, BusyConnectionsAreNeverEvicted) {
  ConnectionTable t({.total = 100, .per_peer = 2});
  t.Admit(1, "a");
  t.Admit(2, "a");
  t.MarkBusy(1);
  EXPECT_EQ(Evicted(t.Admit(3, "a")), std::vector<ConnectionTable::Id>{2});
  t.MarkBusy(3);
  ConnectionTable::Admission refused = t.Admit(4, "a");
  EXPECT_FALSE(refused.admitted);
  EXPECT_TRUE(refused.evict.empty());
  EXPECT_EQ(t.peer_count("a"), 2u);
  t.MarkEvictable(1);  // its request finished: evictable again
  EXPECT_EQ(Evicted(t.Admit(5, "a")), std::vector<ConnectionTable::Id>{1});
}

TEST(ConnectionTableTest, AtTheTotalLimitThePeerHoldingMostGivesUpItsOldest) {
  ConnectionTable t({.total = 5, .per_peer = 5});
  t.Admit(1, "small");
  t.Admit(2, "big");
  t.Admit(3, "big");
  t.Admit(4, "big");
  t.Admit(5, "other");
  ConnectionTable::Admission a = t.Admit(6, "newcomer");
  EXPECT_TRUE(a.admitted);
  ASSERT_EQ(a.evict.size(), 1u);
  EXPECT_EQ(a.evict[0].id, 2u);
  EXPECT_EQ(a.evict[0].reason, Reason::kTotalLimit);
  EXPECT_EQ(t.size(), 5u);
  EXPECT_EQ(t.peer_count("small"), 1u);  // the oldest connection overall, but not the big holder
}

TEST(ConnectionTableTest, AtTheTotalLimitABusyBigHolderIsPassedOver) {
  ConnectionTable t({.total = 3, .per_peer = 3});
  t.Admit(1, "big");
  t.Admit(2, "big");
  t.Admit(3, "small");
  t.MarkBusy(1);
  t.MarkBusy(2);
  EXPECT_EQ(Evicted(t.Admit(4, "new")), std::vector<ConnectionTable::Id>{3});
  t.MarkBusy(4);
  ConnectionTable::Admission refused = t.Admit(5, "new");
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(t.size(), 3u);
}

TEST(ConnectionTableTest, RemovingForgetsAndEmptyPeersVanish) {
  ConnectionTable t({.total = 2, .per_peer = 2});
  t.Admit(1, "a");
  t.Admit(2, "b");
  t.Remove(1);
  t.Remove(1);   // again: ignored
  t.Remove(77);  // unknown: ignored
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.peers(), 1u);
  EXPECT_EQ(t.peer_count("a"), 0u);
  EXPECT_TRUE(t.Admit(3, "b").admitted);
  EXPECT_EQ(Evicted(t.Admit(4, "d")), std::vector<ConnectionTable::Id>{2});
}

TEST(ConnectionTableTest, APerPeerLimitOfOneReplacesThePeersOnlyConnection) {
  ConnectionTable t({.total = 10, .per_peer = 1});
  t.Admit(1, "a");
  ConnectionTable::Admission a = t.Admit(2, "a");
  EXPECT_TRUE(a.admitted);
  EXPECT_EQ(Evicted(a), std::vector<ConnectionTable::Id>{1});
  EXPECT_EQ(t.peer_count("a"), 1u);
  EXPECT_EQ(t.peers(), 1u);
}

// Many peers and evictions in a row keep the counts consistent with what is admitted.
TEST(ConnectionTableTest, CountsStayConsistentUnderChurn) {
  ConnectionTable t({.total = 50, .per_peer = 7});
  size_t open = 0;
  uint64_t seed = 7;
  for (ConnectionTable::Id id = 1; id <= 5000; ++id) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    std::string peer = absl::StrCat("p", (seed >> 33) % 13);
    ConnectionTable::Admission a = t.Admit(id, peer);
    open -= a.evict.size();
    open += a.admitted ? 1 : 0;
    if ((seed >> 20) % 3 == 0) t.MarkBusy(id);
    if ((seed >> 24) % 5 == 0) t.MarkEvictable(id);
    if ((seed >> 28) % 4 == 0 && a.admitted) {
      t.Remove(id);
      --open;
    }
    ASSERT_EQ(t.size(), open);
    ASSERT_LE(t.size(), 50u);
    ASSERT_LE(t.peer_count(peer), 7u);
  }
}

}  // namespace
}  // namespace server
