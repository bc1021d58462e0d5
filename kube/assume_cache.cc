#include "kube/assume_cache.h"

namespace kube {

void AssumeCache::Add(const std::string& uid, Assumption assumption) {
  by_uid_.insert_or_assign(uid, std::move(assumption));
}

std::optional<AssumeCache::Assumption> AssumeCache::Take(const std::string& uid) {
  auto it = by_uid_.find(uid);
  if (it == by_uid_.end()) return std::nullopt;
  Assumption taken = std::move(it->second);
  by_uid_.erase(it);
  return taken;
}

std::vector<std::pair<std::string, AssumeCache::Assumption>> AssumeCache::TakeExpired(
    Clock::TimePoint now) {
  std::vector<std::pair<std::string, Assumption>> expired;
  for (auto it = by_uid_.begin(); it != by_uid_.end();) {
    if (it->second.expiry <= now && !it->second.posting) {
      expired.emplace_back(it->first, std::move(it->second));
      by_uid_.erase(it++);
    } else {
      ++it;
    }
  }
  return expired;
}

const AssumeCache::Assumption* AssumeCache::Find(const std::string& uid) const {
  auto it = by_uid_.find(uid);
  return it == by_uid_.end() ? nullptr : &it->second;
}

AssumeCache::Assumption* AssumeCache::Find(const std::string& uid) {
  auto it = by_uid_.find(uid);
  return it == by_uid_.end() ? nullptr : &it->second;
}

}  // namespace kube
