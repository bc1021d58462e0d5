// A hash map whose copies share structure: copying one costs one pointer copy, whatever its
// size, and a change to a copy copies only the path it touches: one table of 16 pointers per
// level and the leaf that holds the key, a handful of entries. The live state publishes a new
// immutable value on every watch event; with this map an event for one object costs what that
// object changes, not what the cluster holds.
//
//   PersistentMap<std::string, int> a;
//   a.Put("x", 1);
//   PersistentMap<std::string, int> b = a;   // shares everything with a
//   b.Put("y", 2);                           // copies one path; a is unchanged
//   if (const int* v = b.Find("x")) ...;
//
// The trie is as deep as the map needs: a map of up to 8 entries is one leaf, and each level
// of 16 tables takes 16 times as many (up to 4 levels), so a path is as short as the entries
// allow. Growing a level remakes the map once, at 8, 128, 2,048 and 32,768 entries.
//
// Iteration order is unspecified (by hash): callers that show entries sort them. Values should
// be cheap to copy (ints, small structs, shared_ptr), since a change copies a leaf's values.
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

#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace topology {

template <typename K, typename V>
class PersistentMap {
 public:
  static constexpr size_t kFanout = 16;

  PersistentMap() = default;
  PersistentMap(const PersistentMap& other)
      : root_(other.root_), depth_(other.depth_), size_(other.size_), owner_(NewOwner()) {
    other.owner_.store(NewOwner(), std::memory_order_relaxed);
  }
  PersistentMap(PersistentMap&& other) noexcept
      : root_(std::move(other.root_)),
        depth_(std::exchange(other.depth_, 0)),
        size_(std::exchange(other.size_, 0)),
        owner_(other.owner_.load(std::memory_order_relaxed)) {
    other.owner_.store(NewOwner(), std::memory_order_relaxed);
  }
  PersistentMap& operator=(const PersistentMap& other) {
    if (this != &other) {
      root_ = other.root_;
      depth_ = other.depth_;
      size_ = other.size_;
      owner_.store(NewOwner(), std::memory_order_relaxed);
      other.owner_.store(NewOwner(), std::memory_order_relaxed);
    }
    return *this;
  }
  PersistentMap& operator=(PersistentMap&& other) noexcept {
    if (this != &other) {
      root_ = std::move(other.root_);
      depth_ = std::exchange(other.depth_, 0);
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
    const size_t hash = Hash(key);
    const Leaf* leaf = LeafFor(hash);
    if (!leaf) return nullptr;
    for (const Entry& e : leaf->value) {
      if (e.hash == hash && Lookup(e.key) == key) return &e.value;
    }
    return nullptr;
  }
  bool contains(const Lookup& key) const { return Find(key) != nullptr; }

  // Sets `key` to `value`.
  void Put(K key, V value) {
    const size_t hash = Hash(key);
    bool added = false;
    Entry& e = OwnEntry(hash, key, [&] {
      added = true;
      return Entry{hash, std::move(key), std::move(value)};
    });
    if (!added) e.value = std::move(value);
  }

  // Calls change(value) on this instance's own copy of the value under `key`, made
  // default-constructed first when absent.
  template <typename F>
  void Update(const K& key, F change) {
    const size_t hash = Hash(key);
    change(OwnEntry(hash, key, [&] { return Entry{hash, key, V()}; }).value);
  }

  // Removes `key`; false when it was absent.
  bool Erase(const Lookup& key) {
    const size_t hash = Hash(key);
    if (!Find(key)) return false;
    Entries& entries = MutableLeaf(hash);
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      if (it->hash == hash && Lookup(it->key) == key) {
        if (it != entries.end() - 1) *it = std::move(entries.back());
        entries.pop_back();
        break;
      }
    }
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Calls f(key, value) for every entry, in unspecified order.
  template <typename F>
  void ForEach(F&& f) const {
    Visit(root_.get(), 0, f);
  }

  // Calls f(key, before_value, after_value) for every key whose value differs between `before`
  // and this map (values compared with ==; a pointer is null where the key is absent), in
  // unspecified order. What the two share is skipped unvisited, so comparing a map with an
  // earlier version of itself costs what changed since, not what it holds (a level added in
  // between makes it one full pass).
  template <typename F>
  void ForEachDifference(const PersistentMap& before, F&& f) const {
    if (depth_ != before.depth_) {
      ForEach([&](const K& key, const V& value) {
        const V* old = before.Find(key);
        if (!old || !(*old == value)) f(key, old, &value);
      });
      before.ForEach([&](const K& key, const V& value) {
        if (!Find(key)) f(key, &value, static_cast<const V*>(nullptr));
      });
      return;
    }
    Differ(before.root_.get(), root_.get(), 0, f);
  }

 private:
  static constexpr int kMaxDepth = 4;
  static constexpr size_t kLeafLoad = 8;  // entries per leaf, on average, before a level is added

  struct Entry {
    size_t hash;
    K key;
    V value;
  };
  using Entries = absl::InlinedVector<Entry, 4>;
  using Children = std::array<std::shared_ptr<const void>, kFanout>;

  // Each table and leaf records the instance that made it. An instance changes in place only
  // what it made since it was last copied: copying gives both sides new owner tokens, so
  // whatever they share is copied before either changes it. Ownership never depends on
  // reference counts, so no reader on another thread is ever raced.
  template <typename T>
  struct Owned {
    uint64_t owner = 0;
    T value;
  };
  using Leaf = Owned<Entries>;
  using Table = Owned<Children>;  // a level above the leaves: children are Tables or Leaves

  static size_t Hash(const Lookup& key) { return absl::Hash<Lookup>{}(key); }

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

  // Each level takes 4 bits from the top of the hash.
  static size_t IndexAt(size_t hash, int level) { return (hash >> (60 - 4 * level)) & 15; }

  const Leaf* LeafFor(size_t hash) const {
    const void* node = root_.get();
    for (int level = 0; level < depth_ && node; ++level) {
      node = static_cast<const Table*>(node)->value[IndexAt(hash, level)].get();
    }
    return static_cast<const Leaf*>(node);
  }

  // `slot`'s node as a T this instance may change: made, or copied first, unless this
  // instance made it since its last copy.
  template <typename T>
  static T& Own(std::shared_ptr<const void>& slot, uint64_t owner) {
    const T* shared = static_cast<const T*>(slot.get());
    if (shared && shared->owner == owner) return const_cast<T&>(*shared);
    auto fresh = shared ? std::make_shared<T>(*shared) : std::make_shared<T>();
    fresh->owner = owner;
    T& out = *fresh;
    slot = std::move(fresh);
    return out;
  }

  Entries& MutableLeaf(size_t hash) {
    const uint64_t owner = owner_.load(std::memory_order_relaxed);
    std::shared_ptr<const void>* slot = &root_;
    for (int level = 0; level < depth_; ++level) {
      slot = &Own<Table>(*slot, owner).value[IndexAt(hash, level)];
    }
    return Own<Leaf>(*slot, owner).value;
  }

  // This instance's own copy of the entry for `key`, added as make() returns it when absent
  // (a level is added first when the map is full for its depth). `key` is not read after make().
  template <typename Make>
  Entry& OwnEntry(size_t hash, const Lookup& key, Make make) {
    if (size_ >= (kLeafLoad << (4 * depth_)) && depth_ < kMaxDepth && !Find(key)) Grow();
    Entries& entries = MutableLeaf(hash);
    for (Entry& e : entries) {
      if (e.hash == hash && Lookup(e.key) == key) return e;
    }
    entries.push_back(make());
    ++size_;
    return entries.back();
  }

  // Remakes the map one level deeper: a new path for every entry, shared with no one.
  void Grow() {
    PersistentMap deeper;
    deeper.depth_ = depth_ + 1;
    ForEach([&](const K& key, const V& value) {
      const size_t hash = Hash(key);
      deeper.MutableLeaf(hash).push_back(Entry{hash, key, value});
    });
    deeper.size_ = size_;
    *this = std::move(deeper);
  }

  template <typename F>
  void Differ(const void* before, const void* after, int level, F& f) const {
    if (before == after) return;
    if (level == depth_) {
      static const Entries kNone;
      const Entries& old = before ? static_cast<const Leaf*>(before)->value : kNone;
      const Entries& now = after ? static_cast<const Leaf*>(after)->value : kNone;
      auto find = [](const Entries& entries, const Entry& e) -> const Entry* {
        for (const Entry& x : entries) {
          if (x.hash == e.hash && x.key == e.key) return &x;
        }
        return nullptr;
      };
      for (const Entry& e : now) {
        const Entry* was = find(old, e);
        if (!was || !(was->value == e.value)) f(e.key, was ? &was->value : nullptr, &e.value);
      }
      for (const Entry& e : old) {
        if (!find(now, e)) f(e.key, &e.value, static_cast<const V*>(nullptr));
      }
      return;
    }
    for (size_t i = 0; i < kFanout; ++i) {
      const void* b = before ? static_cast<const Table*>(before)->value[i].get() : nullptr;
      const void* a = after ? static_cast<const Table*>(after)->value[i].get() : nullptr;
      Differ(b, a, level + 1, f);
    }
  }

  template <typename F>
  void Visit(const void* node, int level, F& f) const {
    if (!node) return;
    if (level == depth_) {
      for (const Entry& e : static_cast<const Leaf*>(node)->value) f(e.key, e.value);
      return;
    }
    for (const auto& child : static_cast<const Table*>(node)->value)
      Visit(child.get(), level + 1, f);
  }

  std::shared_ptr<const void> root_;  // a Leaf when depth_ is 0, else a Table
  int depth_ = 0;                     // levels of Tables above the leaves
  size_t size_ = 0;
  // Atomic only so that readers may copy a published instance at the same time: each copy
  // takes the source's ownership away, which no reader needs to see in any order.
  mutable std::atomic<uint64_t> owner_{NewOwner()};
};

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_PERSISTENT_MAP_H_
