#include "topology/dra/store.h"

#include <memory>
#include <utility>

namespace topology {
namespace {

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

std::vector<ClaimTransition> ClaimTransitions(const std::shared_ptr<const DraClaim>& before,
                                              const std::shared_ptr<const DraClaim>& after) {
  const bool held_before = before && before->allocated;
  const bool held_after = after && after->allocated;
  std::vector<ClaimTransition> out;
  if (held_before && held_after) {
    if (before->uid == after->uid && before->results == after->results) return out;
    out.push_back({ClaimTransition::Kind::kReleased, before, before->uid != after->uid});
    out.push_back({ClaimTransition::Kind::kAllocated, after, false});
  } else if (held_before) {
    out.push_back(
        {ClaimTransition::Kind::kReleased, before, after == nullptr || before->uid != after->uid});
  } else if (held_after) {
    out.push_back({ClaimTransition::Kind::kAllocated, after, false});
  }
  return out;
}

void DraStore::ReplaceSlices(std::vector<DraSlice> slices) {
  device_set_current_ = false;
  slices_ = Keyed(std::move(slices), [](const DraSlice& s) { return s.name; });
}

void DraStore::UpsertSlice(DraSlice slice) {
  std::string key = slice.name;
  device_set_current_ = false;
  slices_.insert_or_assign(std::move(key), std::move(slice));
}

void DraStore::DeleteSlice(const std::string& name) {
  if (slices_.erase(name)) device_set_current_ = false;
}

std::vector<ClaimTransition> DraStore::ReplaceClaims(std::vector<DraClaim> claims) {
  DraClaimSet next = DraClaimSet::Of(std::move(claims));
  std::vector<ClaimTransition> out;
  auto append = [&out](std::vector<ClaimTransition> more) {
    for (ClaimTransition& t : more) out.push_back(std::move(t));
  };
  // Both lists in key order: walk them together.
  const std::vector<std::shared_ptr<const DraClaim>> before = state_.claims.SortedShared();
  const std::vector<std::shared_ptr<const DraClaim>> after = next.SortedShared();
  const DraClaimKeyLess key_less;
  auto old_it = before.begin();
  auto new_it = after.begin();
  while (old_it != before.end() || new_it != after.end()) {
    if (new_it == after.end() || (old_it != before.end() && key_less(*old_it, *new_it))) {
      append(ClaimTransitions(*old_it++, nullptr));
    } else if (old_it == before.end() || key_less(*new_it, *old_it)) {
      append(ClaimTransitions(nullptr, *new_it++));
    } else {
      append(ClaimTransitions(*old_it++, *new_it++));
    }
  }
  state_.claims = std::move(next);
  recount_ = true;  // a relist: every claim may have changed, count them all once
  return out;
}

std::vector<ClaimTransition> DraStore::UpsertClaim(DraClaim claim) {
  auto after = std::make_shared<const DraClaim>(std::move(claim));
  std::shared_ptr<const DraClaim> before =
      recount_ || !device_set_current_ ? state_.claims.Put(after) : state_.PutClaim(after);
  return ClaimTransitions(before, after);
}

std::vector<ClaimTransition> DraStore::DeleteClaim(const std::string& namespace_name,
                                                   const std::string& name) {
  std::shared_ptr<const DraClaim> before = recount_ || !device_set_current_
                                               ? state_.claims.Erase(namespace_name, name)
                                               : state_.EraseClaim(namespace_name, name);
  if (!before) return {};
  return ClaimTransitions(before, nullptr);
}

void DraStore::ReplaceClasses(std::vector<DraDeviceClass> classes) {
  device_set_current_ = false;
  classes_ = Keyed(std::move(classes), [](const DraDeviceClass& c) { return c.name; });
}

void DraStore::UpsertClass(DraDeviceClass device_class) {
  std::string key = device_class.name;
  device_set_current_ = false;
  classes_.insert_or_assign(std::move(key), std::move(device_class));
}

void DraStore::DeleteClass(const std::string& name) {
  if (classes_.erase(name)) device_set_current_ = false;
}

void DraStore::ReplaceTemplates(std::vector<DraClaim> templates) {
  state_.templates = DraClaimSet::Of(std::move(templates));
}

void DraStore::UpsertTemplate(DraClaim claim_template) {
  state_.templates.Put(std::make_shared<const DraClaim>(std::move(claim_template)));
}

void DraStore::DeleteTemplate(const std::string& namespace_name, const std::string& name) {
  state_.templates.Erase(namespace_name, name);
}

std::shared_ptr<const DraState> DraStore::Build() {
  if (!device_set_current_) {
    state_.device_set = topology::MakeDraDeviceSet(Values(slices_), Values(classes_));
    device_set_current_ = true;
    recount_ = true;
  }
  if (recount_) {
    state_ = topology::MakeDraState(state_.device_set, state_.claims, std::move(state_.templates));
    recount_ = false;
  }
  return std::make_shared<const DraState>(state_);
}

}  // namespace topology
