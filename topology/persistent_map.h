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
// What two instances share is never changed: an instance changes in place only the tables it
// made since it was last copied. Instances are safe to read and to copy from any thread; one
// instance is not safe to change from two, or while another thread reads it.
#ifndef GPU_TENANCY_TOPOLOGY_PERSISTENT_MAP_H_
#define GPU_TENANCY_TOPOLOGY_PERSISTENT_MAP_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
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

  PersistentMap() = default;
  PersistentMap(const PersistentMap& other)
      : roots_(other.roots_), size_(other.size_), owner_(NewOwner()) {
    other.owner_.store(NewOwner(), std::memory_order_relaxed);
  }
  PersistentMap(PersistentMap&& other) noexcept
      : roots_(std::move(other.roots_)),
        size_(std::exchange(other.size_, 0)),
        owner_(other.owner_.load(std::memory_order_relaxed)) {
    other.roots_ = {};
    other.owner_.store(NewOwner(), std::memory_order_relaxed);
  }
  PersistentMap& operator=(const PersistentMap& other) {
    if (this != &other) {
      roots_ = other.roots_;
      size_ = other.size_;
      owner_.store(NewOwner(), std::memory_order_relaxed);
      other.owner_.store(NewOwner(), std::memory_order_relaxed);
    }
    return *this;
  }
  PersistentMap& operator=(PersistentMap&& other) noexcept {
    if (this != &other) {
      roots_ = std::move(other.roots_);
      other.roots_ = {};
      size_ = std::exchange(other.size_, 0);
      owner_.store(other.owner_.load(std::memory_order_relaxed), std::memory_order_relaxed);
      other.owner_.store(NewOwner(), std::memory_order_relaxed);
    }
    return *this;
  }

  // String keys are looked up by view, as flat_hash_map does, with the same hash.
  using Lookup = std::conditional_t<std::is_same_v<K, std::string>, absl::string_view, K>;

  // The value under `key`, or null. The pointer is valid until this instance changes.
  const V* Find(const Lookup& key) const {
    const absl::flat_hash_map<K, V>* bucket = BucketFor(absl::Hash<Lookup>{}(key));
    if (!bucket) return nullptr;
    auto it = bucket->find(key);
    return it == bucket->end() ? nullptr : &it->second;
  }
  bool contains(const Lookup& key) const { return Find(key) != nullptr; }

  // Sets `key` to `value`.
  void Put(K key, V value) {
    absl::flat_hash_map<K, V>& bucket = MutableBucket(absl::Hash<Lookup>{}(key));
    auto [it, inserted] = bucket.insert_or_assign(std::move(key), std::move(value));
    if (inserted) ++size_;
  }

  // Calls change(value) on this instance's own copy of the value under `key`, made
  // default-constructed first when absent.
  template <typename F>
  void Update(const K& key, F change) {
    absl::flat_hash_map<K, V>& bucket = MutableBucket(absl::Hash<Lookup>{}(key));
    auto [it, inserted] = bucket.try_emplace(key);
    if (inserted) ++size_;
    change(it->second);
  }

  // Removes `key`; false when it was absent.
  bool Erase(const Lookup& key) {
    const size_t hash = absl::Hash<Lookup>{}(key);
    const absl::flat_hash_map<K, V>* shared = BucketFor(hash);
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
      for (const auto& inner : middle->value) {
        if (!inner) continue;
        for (const auto& bucket : inner->value) {
          if (!bucket) continue;
          for (const auto& [key, value] : bucket->value) f(key, value);
        }
      }
    }
  }

 private:
  // Each table and bucket records the instance that made it. An instance changes in place only
  // what it made since it was last copied: copying gives both sides new owner tokens, so
  // whatever they share is copied before either changes it. Ownership never depends on
  // reference counts, so no reader on another thread is ever raced.
  template <typename T>
  struct Owned {
    uint64_t owner = 0;
    T value;
  };
  using Bucket = Owned<absl::flat_hash_map<K, V>>;
  using Inner = Owned<std::array<std::shared_ptr<const Bucket>, kFanout>>;
  using Middle = Owned<std::array<std::shared_ptr<const Inner>, kFanout>>;

  // Every copy takes two tokens; a thread draws them from a block of its own, so copies on
  // different threads neither collide nor contend for one counter.
  static uint64_t NewOwner() {
    constexpr uint64_t kBlock = uint64_t{1} << 16;
    static std::atomic<uint64_t> next_block{1};
    thread_local uint64_t next = 0;
    thread_local uint64_t end = 0;
    if (next == end) {
      next = next_block.fetch_add(kBlock, std::memory_order_relaxed);
      end = next + kBlock;
    }
    return next++;
  }

  // Each level takes 4 bits from the top of the hash: flat_hash_map itself uses the low bits.
  static size_t IndexAt(size_t hash, int level) { return (hash >> (60 - 4 * level)) & 15; }

  const absl::flat_hash_map<K, V>* BucketFor(size_t hash) const {
    const auto& middle = roots_[IndexAt(hash, 0)];
    if (!middle) return nullptr;
    const auto& inner = middle->value[IndexAt(hash, 1)];
    if (!inner) return nullptr;
    const auto& bucket = inner->value[IndexAt(hash, 2)];
    return bucket ? &bucket->value : nullptr;
  }

  // `p`'s value, made or copied first unless this instance made it since its last copy.
  template <typename T>
  static decltype(T::value)& Own(std::shared_ptr<const T>& p, uint64_t owner) {
    if (!p || p->owner != owner) {
      auto fresh = std::make_shared<T>();  // not const: this instance changes it until shared
      fresh->owner = owner;
      if (p) fresh->value = p->value;
      p = std::move(fresh);
    }
    return const_cast<T&>(*p).value;
  }

  absl::flat_hash_map<K, V>& MutableBucket(size_t hash) {
    const uint64_t owner = owner_.load(std::memory_order_relaxed);
    auto& middle = Own(roots_[IndexAt(hash, 0)], owner);
    auto& inner = Own(middle[IndexAt(hash, 1)], owner);
    return Own(inner[IndexAt(hash, 2)], owner);
  }

  std::array<std::shared_ptr<const Middle>, kFanout> roots_;
  size_t size_ = 0;
  // Atomic only so that readers may copy a published instance at the same time: each copy
  // takes the source's ownership away, which no reader needs to see in any order.
  mutable std::atomic<uint64_t> owner_{NewOwner()};
};

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_PERSISTENT_MAP_H_
