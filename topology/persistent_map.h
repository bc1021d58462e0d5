// A hash map whose copies share structure: copying one costs 16 pointer copies, whatever its
// size, and a change to a copy copies only the path it touches: two tables of 16 pointers and
// one of 4,096 buckets, 1/4096th of the entries. The live state publishes a new immutable value
// on every watch event; with this map an event for one object costs what that object changes,
// not what the cluster holds.
//
//   PersistentMap<std::string, int> a;
//   a.Put("x", 1);
//   PersistentMap<std::string, int> b = a;   // shares every bucket with a
//   b.Put("y", 2);                           // copies one bucket; a is unchanged
//   if (const int* v = b.Find("x")) ...;
//
// Iteration order is unspecified (by hash): callers that show entries sort them. Values should
// be cheap to copy (ints, small structs, shared_ptr), since a change copies a bucket's values.
// A value is immutable once shared; copies are safe to read from any thread, and one instance
// is not safe to change from two.
#ifndef GPU_TENANCY_TOPOLOGY_PERSISTENT_MAP_H_
#define GPU_TENANCY_TOPOLOGY_PERSISTENT_MAP_H_

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace topology {

template <typename K, typename V>
class PersistentMap {
 public:
  static constexpr size_t kFanout = 16;

  // String keys are looked up by view, as flat_hash_map does, with the same hash.
  using Lookup = std::conditional_t<std::is_same_v<K, std::string>, absl::string_view, K>;

  // The value under `key`, or null. The pointer is valid until this instance changes.
  const V* Find(const Lookup& key) const {
    const Bucket* bucket = BucketFor(absl::Hash<Lookup>{}(key));
    if (!bucket) return nullptr;
    auto it = bucket->find(key);
    return it == bucket->end() ? nullptr : &it->second;
  }
  bool contains(const Lookup& key) const { return Find(key) != nullptr; }

  // Sets `key` to `value`.
  void Put(K key, V value) {
    Bucket& bucket = MutableBucket(absl::Hash<Lookup>{}(key));
    auto [it, inserted] = bucket.insert_or_assign(std::move(key), std::move(value));
    if (inserted) ++size_;
  }

  // Calls change(value) on this instance's own copy of the value under `key`, made
  // default-constructed first when absent.
  template <typename F>
  void Update(const K& key, F change) {
    Bucket& bucket = MutableBucket(absl::Hash<Lookup>{}(key));
    auto [it, inserted] = bucket.try_emplace(key);
    if (inserted) ++size_;
    change(it->second);
  }

  // Removes `key`; false when it was absent.
  bool Erase(const Lookup& key) {
    const size_t hash = absl::Hash<Lookup>{}(key);
    const Bucket* shared = BucketFor(hash);
    if (!shared || !shared->contains(key)) return false;
    MutableBucket(hash).erase(key);
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Calls f(key, value) for every entry, in unspecified order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const auto& middle : roots_) {
      if (!middle) continue;
      for (const auto& inner : *middle) {
        if (!inner) continue;
        for (const auto& bucket : *inner) {
          if (!bucket) continue;
          for (const auto& [key, value] : *bucket) f(key, value);
        }
      }
    }
  }

 private:
  using Bucket = absl::flat_hash_map<K, V>;
  template <typename Child>
  using Level = std::array<std::shared_ptr<const Child>, kFanout>;
  using Inner = Level<Bucket>;
  using Middle = Level<Inner>;

  // Each level takes 4 bits from the top of the hash: flat_hash_map itself uses the low bits.
  static size_t IndexAt(size_t hash, int level) { return (hash >> (60 - 4 * level)) & 15; }

  const Bucket* BucketFor(size_t hash) const {
    const auto& middle = roots_[IndexAt(hash, 0)];
    if (!middle) return nullptr;
    const auto& inner = (*middle)[IndexAt(hash, 1)];
    if (!inner) return nullptr;
    return (*inner)[IndexAt(hash, 2)].get();
  }

  // `p`'s value, copied first unless this instance is its only holder (or made when absent).
  // A value with use_count 1 is reachable only through this instance, so changing it in place
  // changes no copy.
  template <typename T>
  static T& Own(std::shared_ptr<const T>& p) {
    if (!p) {
      p = std::make_shared<const T>();
    } else if (p.use_count() > 1) {
      p = std::make_shared<const T>(*p);
    }
    return const_cast<T&>(*p);
  }

  Bucket& MutableBucket(size_t hash) {
    Middle& middle = Own(roots_[IndexAt(hash, 0)]);
    Inner& inner = Own(middle[IndexAt(hash, 1)]);
    return Own(inner[IndexAt(hash, 2)]);
  }

  Level<Middle> roots_;
  size_t size_ = 0;
};

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_PERSISTENT_MAP_H_
