// AssumeCache: the placements bind has decided that the watch has not confirmed yet. Each
// counts on its node like a bound pod until the watch shows the pod bound, bind forgets it (the
// Binding POST was refused), a pod list that began after its Binding landed does not name the
// pod (it was deleted meanwhile), or its expiry passes (the bind never landed), so the next
// filter sees the GPU as taken before the watch delivers the pod. It never expires while its
// Binding POST is under way, and one whose POST got no answer outlives the bind's Forget: the
// Binding may land yet.
//
// A plain container: ClusterState holds it under its own lock, together with the store it
// corrects, and publishes the nodes whose assumptions changed.
#ifndef GPU_TENANCY_KUBE_ASSUME_CACHE_H_
#define GPU_TENANCY_KUBE_ASSUME_CACHE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "kube/clock.h"
#include "topology/occupancy.h"

namespace kube {

class AssumeCache {
 public:
  struct Assumption {
    std::string node;
    std::shared_ptr<const topology::PodHold> hold;  // shared with the published node states
    Clock::TimePoint expiry;
    // ClusterState's commit mark once the Binding POST succeeded; 0 until then.
    uint64_t committed = 0;
    bool posting = false;     // the Binding POST is under way: no expiry meanwhile
    bool unresolved = false;  // the POST got no answer: it may land yet, so Forget keeps it
  };

  // Records the assumption for `uid`, replacing an earlier one.
  void Add(const std::string& uid, Assumption assumption);
  // Removes the assumption for `uid` and returns it; nullopt when there was none.
  std::optional<Assumption> Take(const std::string& uid);
  // Removes every assumption whose expiry is at or before `now`, unless its Binding POST is under
  // way; returns them with their uids.
  std::vector<std::pair<std::string, Assumption>> TakeExpired(Clock::TimePoint now);

  const Assumption* Find(const std::string& uid) const;
  Assumption* Find(const std::string& uid);
  bool Contains(const std::string& uid) const { return by_uid_.contains(uid); }
  size_t size() const { return by_uid_.size(); }

  template <typename Visit>  // Visit(const std::string& uid, const Assumption&)
  void ForEach(Visit visit) const {
    for (const auto& [uid, assumption] : by_uid_) visit(uid, assumption);
  }

 private:
  absl::flat_hash_map<std::string, Assumption> by_uid_;
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_ASSUME_CACHE_H_
