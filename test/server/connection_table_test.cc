// ConnectionTable: who is evicted, or refused, when a limit is reached.
#include "server/connection_table.h"

#include <chrono>
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

using std::chrono::seconds;
const ConnectionTable::Time kT0 = ConnectionTable::Time() + std::chrono::hours(1);

TEST(ConnectionTableTest, AnEvictionSaysWhetherItsConnectionWasIdleAfterAReply) {
  ConnectionTable t({.total = 100, .per_peer = 2});
  t.Admit(1, "a", kT0);
  t.Admit(2, "a", kT0);
  t.MarkIdle(1, kT0);  // served a request: now the newest, and reusable
  ConnectionTable::Admission a = t.Admit(3, "a", kT0);
  ASSERT_EQ(a.evict.size(), 1u);
  EXPECT_EQ(a.evict[0].id, 2u);
  EXPECT_FALSE(a.evict[0].idle);  // never used
  ConnectionTable::Admission b = t.Admit(4, "a", kT0 + seconds(1));
  ASSERT_EQ(b.evict.size(), 1u);
  EXPECT_EQ(b.evict[0].id, 1u);
  EXPECT_TRUE(b.evict[0].idle);
  EXPECT_EQ(b.evict[0].reason, Reason::kPerPeerLimit);
  t.MarkBusy(4);
  t.MarkIdle(3, kT0);
  t.MarkEvictable(3);  // began its next request: no longer waiting
  ConnectionTable::Admission c = t.Admit(5, "a", kT0 + seconds(2));
  ASSERT_EQ(c.evict.size(), 1u);
  EXPECT_EQ(c.evict[0].id, 3u);
  EXPECT_FALSE(c.evict[0].idle);
}

TEST(ConnectionTableTest, AtTheTotalLimitAFreshlyIdleConnectionIsPassedOver) {
  ConnectionTable t({.total = 6, .per_peer = 5, .settled = seconds(10)});
  for (ConnectionTable::Id id : {1, 2, 3}) t.Admit(id, "busy-caller", kT0);
  t.Admit(4, "quiet-caller", kT0);
  t.Admit(9, "quiet-caller", kT0);
  t.Admit(5, "other", kT0);
  t.MarkIdle(4, kT0);  // idle for 30 s when the newcomer arrives
  for (ConnectionTable::Id id : {1, 2, 3, 9}) t.MarkIdle(id, kT0 + seconds(25));
  ConnectionTable::Admission a = t.Admit(6, "newcomer", kT0 + seconds(30));
  EXPECT_EQ(Evicted(a), std::vector<ConnectionTable::Id>{4});
  EXPECT_TRUE(a.evict[0].idle);
  EXPECT_EQ(a.evict[0].reason, Reason::kTotalLimit);
  t.MarkBusy(6);
  // Next, a connection never used goes before anyone's freshly idle ones.
  EXPECT_EQ(Evicted(t.Admit(7, "newcomer", kT0 + seconds(30))),
            std::vector<ConnectionTable::Id>{5});
  // Once they settle, the biggest holder gives way again, oldest first.
  EXPECT_EQ(Evicted(t.Admit(8, "newcomer", kT0 + seconds(35))),
            std::vector<ConnectionTable::Id>{1});
}

TEST(ConnectionTableTest, WhenEveryOldestIsFreshTheBiggestHolderStillGivesWay) {
  ConnectionTable t({.total = 4, .per_peer = 4, .settled = seconds(10)});
  for (ConnectionTable::Id id : {1, 2, 3}) t.Admit(id, "big", kT0);
  t.Admit(4, "small", kT0);
  for (ConnectionTable::Id id : {4, 1, 2, 3}) t.MarkIdle(id, kT0 + seconds(1));
  EXPECT_EQ(Evicted(t.Admit(5, "new", kT0 + seconds(2))), std::vector<ConnectionTable::Id>{1});
  // The per-address limit is the address's own affair: its oldest goes, however fresh.
  ConnectionTable u({.total = 100, .per_peer = 2, .settled = seconds(10)});
  u.Admit(1, "a", kT0);
  u.Admit(2, "a", kT0);
  u.MarkIdle(1, kT0 + seconds(1));
  EXPECT_EQ(Evicted(u.Admit(3, "a", kT0 + seconds(1))), std::vector<ConnectionTable::Id>{2});
  EXPECT_EQ(Evicted(u.Admit(4, "a", kT0 + seconds(1))), std::vector<ConnectionTable::Id>{1});
}

TEST(ConnectionTableTest, TheSearchForASettledConnectionIsBounded) {
  // Ten addresses with two freshly idle connections each, and a smaller one with a settled
  // connection: reaching it means passing over all ten, more than the search does.
  ConnectionTable t({.total = 21, .per_peer = 2, .settled = seconds(10)});
  ConnectionTable::Id id = 1;
  for (int p = 0; p < 10; ++p) {
    for (int k = 0; k < 2; ++k) {
      t.Admit(id, absl::StrCat("fresh", p), kT0);
      t.MarkIdle(id, kT0 + seconds(29));
      ++id;
    }
  }
  t.Admit(id, "settled", kT0);
  t.MarkIdle(id, kT0);
  ConnectionTable::Admission a = t.Admit(100, "newcomer", kT0 + seconds(30));
  ASSERT_EQ(a.evict.size(), 1u);
  EXPECT_NE(a.evict[0].id, id);  // gave up after passing over a few
  EXPECT_EQ(t.peer_count("settled"), 1u);
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
