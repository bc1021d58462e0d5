#include "kube/dra_store.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace kube {
namespace {

std::string ClaimKey(const std::string& namespace_name, const std::string& name) {
  return absl::StrCat(namespace_name, "/", name);
}

template <typename T, typename KeyOf>
std::map<std::string, T> Keyed(std::vector<T> objects, KeyOf key_of) {
  std::map<std::string, T> out;
  for (T& object : objects) {
    std::string key = key_of(object);
    out.insert_or_assign(std::move(key), std::move(object));
  }
  return out;
}

template <typename T>
std::vector<T> Values(const std::map<std::string, T>& objects) {
  std::vector<T> out;
  out.reserve(objects.size());
  for (const auto& [key, object] : objects) out.push_back(object);
  return out;
}

}  // namespace

std::vector<ClaimTransition> ClaimTransitions(const topology::DraClaim* before,
                                              const topology::DraClaim* after) {
  const bool held_before = before && before->allocated;
  const bool held_after = after && after->allocated;
  std::vector<ClaimTransition> out;
  if (held_before && held_after) {
    if (before->uid == after->uid && before->results == after->results) return out;
    out.push_back({ClaimTransition::Kind::kReleased, *before, before->uid != after->uid});
    out.push_back({ClaimTransition::Kind::kAllocated, *after, false});
  } else if (held_before) {
    out.push_back(
        {ClaimTransition::Kind::kReleased, *before, after == nullptr || before->uid != after->uid});
  } else if (held_after) {
    out.push_back({ClaimTransition::Kind::kAllocated, *after, false});
  }
  return out;
}

void DraStore::ReplaceSlices(std::vector<topology::DraSlice> slices) {
  device_set_.reset();
  slices_ = Keyed(std::move(slices), [](const topology::DraSlice& s) { return s.name; });
}

void DraStore::UpsertSlice(topology::DraSlice slice) {
  std::string key = slice.name;
  device_set_.reset();
  slices_.insert_or_assign(std::move(key), std::move(slice));
}

void DraStore::DeleteSlice(const std::string& name) {
  if (slices_.erase(name)) device_set_.reset();
}

std::vector<ClaimTransition> DraStore::ReplaceClaims(std::vector<topology::DraClaim> claims) {
  std::map<std::string, topology::DraClaim> next =
      Keyed(std::move(claims),
            [](const topology::DraClaim& c) { return ClaimKey(c.namespace_name, c.name); });
  std::vector<ClaimTransition> out;
  auto append = [&out](std::vector<ClaimTransition> more) {
    for (ClaimTransition& t : more) out.push_back(std::move(t));
  };
  // Both maps are in key order: walk them together.
  auto old_it = claims_.begin();
  auto new_it = next.begin();
  while (old_it != claims_.end() || new_it != next.end()) {
    if (new_it == next.end() || (old_it != claims_.end() && old_it->first < new_it->first)) {
      append(ClaimTransitions(&old_it->second, nullptr));
      ++old_it;
    } else if (old_it == claims_.end() || new_it->first < old_it->first) {
      append(ClaimTransitions(nullptr, &new_it->second));
      ++new_it;
    } else {
      append(ClaimTransitions(&old_it->second, &new_it->second));
      ++old_it;
      ++new_it;
    }
  }
  claims_ = std::move(next);
  return out;
}

std::vector<ClaimTransition> DraStore::UpsertClaim(topology::DraClaim claim) {
  std::string key = ClaimKey(claim.namespace_name, claim.name);
  auto it = claims_.find(key);
  std::vector<ClaimTransition> out =
      ClaimTransitions(it == claims_.end() ? nullptr : &it->second, &claim);
  claims_.insert_or_assign(std::move(key), std::move(claim));
  return out;
}

std::vector<ClaimTransition> DraStore::DeleteClaim(const std::string& namespace_name,
                                                   const std::string& name) {
  auto it = claims_.find(ClaimKey(namespace_name, name));
  if (it == claims_.end()) return {};
  std::vector<ClaimTransition> out = ClaimTransitions(&it->second, nullptr);
  claims_.erase(it);
  return out;
}

void DraStore::ReplaceClasses(std::vector<topology::DraDeviceClass> classes) {
  device_set_.reset();
  classes_ = Keyed(std::move(classes), [](const topology::DraDeviceClass& c) { return c.name; });
}

void DraStore::UpsertClass(topology::DraDeviceClass device_class) {
  std::string key = device_class.name;
  device_set_.reset();
  classes_.insert_or_assign(std::move(key), std::move(device_class));
}

void DraStore::DeleteClass(const std::string& name) {
  if (classes_.erase(name)) device_set_.reset();
}

void DraStore::ReplaceTemplates(std::vector<topology::DraClaim> templates) {
  templates_ = Keyed(std::move(templates), [](const topology::DraClaim& t) {
    return ClaimKey(t.namespace_name, t.name);
  });
}

void DraStore::UpsertTemplate(topology::DraClaim claim_template) {
  std::string key = ClaimKey(claim_template.namespace_name, claim_template.name);
  templates_.insert_or_assign(std::move(key), std::move(claim_template));
}

void DraStore::DeleteTemplate(const std::string& namespace_name, const std::string& name) {
  templates_.erase(ClaimKey(namespace_name, name));
}

topology::DraState DraStore::Build() const {
  if (!device_set_) device_set_ = topology::MakeDraDeviceSet(Values(slices_), Values(classes_));
  return topology::MakeDraState(device_set_, Values(claims_), Values(templates_));
}

}  // namespace kube
