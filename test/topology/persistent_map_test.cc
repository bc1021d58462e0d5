// PersistentMap: a random sequence of changes agrees with std::map, and a copy taken at any
// point keeps what it held while the original goes on changing.
#include "topology/persistent_map.h"

#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace topology {
namespace {

template <typename K, typename V>
std::map<K, V> Contents(const PersistentMap<K, V>& m) {
  std::map<K, V> out;
  m.ForEach([&](const K& k, const V& v) {
    EXPECT_TRUE(out.emplace(k, v).second) << "a key is visited once";
  });
  return out;
}

TEST(PersistentMapTest, FindPutUpdateErase) {
  PersistentMap<std::string, int> m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.Find("a"), nullptr);
  m.Put("a", 1);
  m.Put("a", 2);
  ASSERT_NE(m.Find("a"), nullptr);
  EXPECT_EQ(*m.Find("a"), 2);
  EXPECT_EQ(m.size(), 1u);
  m.Update("b", [](int& v) { v += 5; });
  EXPECT_EQ(*m.Find("b"), 5) << "an absent key starts from a default value";
  EXPECT_TRUE(m.contains("b"));
  EXPECT_TRUE(m.Erase("a"));
  EXPECT_FALSE(m.Erase("a"));
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(Contents(m), (std::map<std::string, int>{{"b", 5}}));
}

TEST(PersistentMapTest, NeitherSideOfACopyOrAssignmentChangesTheOther) {
  PersistentMap<std::string, int> a;
  a.Put("x", 1);
  PersistentMap<std::string, int> b;
  b = a;
  a.Put("x", 2);  // the source, changed after the copy
  b.Update("x", [](int& v) { v += 10; });
  EXPECT_EQ(*a.Find("x"), 2);
  EXPECT_EQ(*b.Find("x"), 11);
  PersistentMap<std::string, int> c = std::move(b);
  c.Put("y", 3);
  EXPECT_EQ(*c.Find("x"), 11);
  EXPECT_TRUE(b.empty()) << "moved from";
  b.Put("z", 4);
  EXPECT_EQ(c.Find("z"), nullptr);
  EXPECT_EQ(a.Find("y"), nullptr);
}

TEST(PersistentMapTest, IntegerKeys) {
  PersistentMap<uint32_t, int> m;
  for (uint32_t i = 0; i < 1000; ++i) m.Put(i, static_cast<int>(i) * 2);
  EXPECT_EQ(m.size(), 1000u);
  EXPECT_EQ(*m.Find(999), 1998);
  EXPECT_EQ(m.Find(1000), nullptr);
}

TEST(PersistentMapTest, GrowingALevelKeepsEveryEntryAndLeavesCopiesAlone) {
  // The trie deepens past 8, 128, 2,048 and 32,768 entries; a copy taken just before each
  // growth keeps its entries, and so does the map that grew.
  PersistentMap<uint32_t, int> m;
  std::vector<std::pair<PersistentMap<uint32_t, int>, size_t>> before_growth;
  for (uint32_t i = 0; i < 40000; ++i) {
    if (i == 8 || i == 128 || i == 2048 || i == 32768) before_growth.emplace_back(m, i);
    m.Put(i, static_cast<int>(i));
  }
  ASSERT_EQ(m.size(), 40000u);
  for (uint32_t i = 0; i < 40000; i += 97) {
    ASSERT_NE(m.Find(i), nullptr) << i;
    EXPECT_EQ(*m.Find(i), static_cast<int>(i));
  }
  EXPECT_EQ(Contents(m).size(), 40000u);
  for (auto& [copy, size] : before_growth) {
    EXPECT_EQ(copy.size(), size);
    std::map<uint32_t, int> want;
    for (uint32_t i = 0; i < size; ++i) want[i] = static_cast<int>(i);
    EXPECT_EQ(Contents(copy), want);
    copy.Put(99999, 1);  // the copy changes on its own
    EXPECT_EQ(m.Find(99999), nullptr);
  }
  for (uint32_t i = 0; i < 40000; ++i) ASSERT_TRUE(m.Erase(i)) << i;
  EXPECT_TRUE(m.empty());
  EXPECT_TRUE(Contents(m).empty());
}

TEST(PersistentMapTest, RandomChangesAgreeWithStdMapAndCopiesStayAsTheyWere) {
  std::mt19937 random(7);
  PersistentMap<std::string, int> m;
  std::map<std::string, int> model;
  std::vector<std::pair<PersistentMap<std::string, int>, std::map<std::string, int>>> copies;
  for (int step = 0; step < 20000; ++step) {
    const std::string key = "k" + std::to_string(random() % 600);
    switch (random() % 4) {
      case 0:
      case 1:
        m.Put(key, step);
        model[key] = step;
        break;
      case 2:
        m.Update(key, [](int& v) { ++v; });
        ++model[key];
        break;
      case 3:
        EXPECT_EQ(m.Erase(key), model.erase(key) == 1) << key;
        break;
    }
    ASSERT_EQ(m.size(), model.size());
    const int* found = m.Find(key);
    auto it = model.find(key);
    ASSERT_EQ(found != nullptr, it != model.end()) << key;
    if (found) {
      ASSERT_EQ(*found, it->second) << key;
    }
    if (step % 2000 == 0) copies.emplace_back(m, model);
  }
  EXPECT_EQ(Contents(m), model);
  for (const auto& [copy, held] : copies) EXPECT_EQ(Contents(copy), held);
}

}  // namespace
// A version compared with an earlier one: exactly the keys put, changed or erased in between,
// across growth too; a random sequence checked against the two std::maps.
TEST(PersistentMapTest, ForEachDifferenceNamesExactlyWhatChanged) {
  std::mt19937 random(7);
  PersistentMap<std::string, int> map;
  std::map<std::string, int> model;
  for (int round = 0; round < 60; ++round) {
    const PersistentMap<std::string, int> before = map;
    const std::map<std::string, int> model_before = model;
    const int changes = static_cast<int>(random() % (round < 30 ? 40 : 5));
    for (int i = 0; i < changes; ++i) {
      const std::string key = absl::StrCat("k", random() % 3000);
      if (random() % 4 == 0) {
        map.Erase(key);
        model.erase(key);
      } else {
        const int value = static_cast<int>(random() % 3);
        map.Put(key, value);
        model[key] = value;
      }
    }
    std::map<std::string, std::pair<std::optional<int>, std::optional<int>>> seen;
    map.ForEachDifference(before, [&](const std::string& key, const int* was, const int* now) {
      EXPECT_TRUE(seen.emplace(key, std::pair{was ? std::optional<int>(*was) : std::nullopt,
                                              now ? std::optional<int>(*now) : std::nullopt})
                      .second)
          << key << " named twice";
    });
    std::map<std::string, std::pair<std::optional<int>, std::optional<int>>> want;
    for (const auto& [key, value] : model) {
      auto it = model_before.find(key);
      if (it == model_before.end() || it->second != value) {
        want[key] = {it == model_before.end() ? std::nullopt : std::optional<int>(it->second),
                     value};
      }
    }
    for (const auto& [key, value] : model_before) {
      if (!model.count(key)) want[key] = {value, std::nullopt};
    }
    ASSERT_EQ(seen, want) << "round " << round;
  }
  // Equal versions have no difference, whatever their size.
  const PersistentMap<std::string, int> copy = map;
  int differences = 0;
  map.ForEachDifference(copy, [&](const std::string&, const int*, const int*) { ++differences; });
  EXPECT_EQ(differences, 0);
}

}  // namespace topology
