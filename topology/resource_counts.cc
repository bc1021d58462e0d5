#include "topology/resource_counts.h"

#include <algorithm>

#include "absl/hash/hash.h"

namespace topology {

size_t ResourceKey(absl::string_view name) { return absl::Hash<absl::string_view>{}(name); }

ResourceCounts::ResourceCounts(
    std::initializer_list<std::pair<absl::string_view, int64_t>> counts) {
  for (const auto& [name, count] : counts) Add(name, count);
}

const ResourceCount* ResourceCounts::Find(absl::string_view name, size_t key) const {
  for (const ResourceCount& e : entries_) {
    if (e.key == key && e.name == name) return &e;
  }
  return nullptr;
}

int64_t ResourceCounts::Get(absl::string_view name) const {
  const ResourceCount* e = Find(name);
  return e ? e->count : 0;
}

int64_t ResourceCounts::Get(const ResourceCount& like) const {
  const ResourceCount* e = Find(like);
  return e ? e->count : 0;
}

void ResourceCounts::Set(absl::string_view name, int64_t count) {
  auto it =
      std::lower_bound(entries_.begin(), entries_.end(), name,
                       [](const ResourceCount& e, absl::string_view n) { return e.name < n; });
  const bool present = it != entries_.end() && it->name == name;
  if (count == 0) {
    if (present) entries_.erase(it);
  } else if (present) {
    it->count = count;
  } else {
    entries_.insert(it, ResourceCount{std::string(name), count, ResourceKey(name)});
  }
}

void ResourceCounts::Add(absl::string_view name, int64_t delta) {
  if (delta != 0) Set(name, Get(name) + delta);
}

bool ResourceCounts::operator==(const ResourceCounts& other) const {
  return std::equal(begin(), end(), other.begin(), other.end(),
                    [](const ResourceCount& a, const ResourceCount& b) {
                      return a.count == b.count && a.name == b.name;
                    });
}

}  // namespace topology
