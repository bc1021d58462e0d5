// Device counts by resource name ("nvidia.com/mig-3g.40gb" -> 2), for what a pod asks and what a
// node's pods hold. Each name is hashed once, when it is stored: a request looks the pod's one or
// two resources up on hundreds of nodes, and comparing a word first means a lookup reads a
// name's characters only for the entry that matches. A few entries live inline, so a node's
// counts sit in its state object rather than behind more pointers.
#ifndef GPU_TENANCY_TOPOLOGY_RESOURCE_COUNTS_H_
#define GPU_TENANCY_TOPOLOGY_RESOURCE_COUNTS_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"

namespace topology {

// The hash lookups compare before names. Stable within a process only: keys are never stored.
size_t ResourceKey(absl::string_view name);

struct ResourceCount {
  std::string name;
  int64_t count = 0;
  size_t key = 0;  // ResourceKey(name)
};

class ResourceCounts {
 public:
  using const_iterator = absl::InlinedVector<ResourceCount, 2>::const_iterator;

  ResourceCounts() = default;
  ResourceCounts(std::initializer_list<std::pair<absl::string_view, int64_t>> counts);

  // The entry for a name, or null. The second form takes another entry's name and key (a
  // demand's resource looked up in a node's counts) and hashes nothing.
  const ResourceCount* Find(absl::string_view name) const { return Find(name, ResourceKey(name)); }
  const ResourceCount* Find(const ResourceCount& like) const { return Find(like.name, like.key); }
  // 0 for a name not present.
  int64_t Get(absl::string_view name) const;
  int64_t Get(const ResourceCount& like) const;

  // Set stores `count` (0 removes the name); Add adds to it, removing the name when it reaches 0.
  // Entries stay in name order.
  void Set(absl::string_view name, int64_t count);
  void Add(absl::string_view name, int64_t delta);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  // Same names with the same counts.
  bool operator==(const ResourceCounts& other) const;

 private:
  const ResourceCount* Find(absl::string_view name, size_t key) const;
  absl::InlinedVector<ResourceCount, 2> entries_;
};

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_RESOURCE_COUNTS_H_
