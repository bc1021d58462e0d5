// Fair sharing's load-time checks (topology/fair_share.h): the groups' tree and whether the
// guarantees it promises fit in each group and in the cluster.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "topology/fair_share.h"

namespace topology {
namespace {

// A member of a group (or of the top level, ""): a tenant or a group, with its YAML path.
struct Member {
  std::string name;
  std::string path;  // "tenants[2]" or "groups[0]"
  const Tenant* tenant = nullptr;
  const TenantGroup* group = nullptr;
};

std::vector<Member> MembersOf(const Policy& policy, absl::string_view group) {
  std::vector<Member> out;
  for (size_t i = 0; i < policy.groups.size(); ++i) {
    const TenantGroup& g = policy.groups[i];
    if (g.parent == group) out.push_back({g.name, absl::StrCat("groups[", i, "]"), nullptr, &g});
  }
  for (size_t i = 0; i < policy.tenants.size(); ++i) {
    const Tenant& t = policy.tenants[i];
    if (t.fair_share && t.fair_share->group == group) {
      out.push_back({t.name, absl::StrCat("tenants[", i, "]"), &t, nullptr});
    }
  }
  return out;
}

// A member's guarantee per item: a tenant's own, a group's own where it sets one and else the
// sum of its members'. Validation has refused cycles before this is called.
ItemAmounts GuaranteeOf(const Policy& policy, const Member& m) {
  if (m.tenant) return QuotaItems(m.tenant->fair_share->guaranteed);
  ItemAmounts sum;
  for (const Member& child : MembersOf(policy, m.group->name)) {
    for (const auto& [item, n] : GuaranteeOf(policy, child)) sum[item] += n;
  }
  for (const auto& [item, n] : QuotaItems(m.group->guaranteed)) sum[item] = n;
  return sum;
}

// "nvidia.com/gpu add up to 10 (vision 4, speech 6)" when the members' guarantees of an item
// pass `bound`; "" when every item fits.
std::string Overcommitted(const Policy& policy, const std::vector<Member>& members,
                          const ItemAmounts& bound, std::string* item_out) {
  for (const auto& [item, limit] : bound) {
    int64_t sum = 0;
    std::vector<std::string> parts;
    for (const Member& m : members) {
      const ItemAmounts g = GuaranteeOf(policy, m);
      auto it = g.find(item);
      if (it == g.end() || it->second == 0) continue;
      sum += it->second;
      parts.push_back(absl::StrCat(m.name, " ", ItemAmountText(item, it->second)));
    }
    if (sum > limit) {
      *item_out = item;
      return absl::StrCat(item, " add up to ", ItemAmountText(item, sum), " (",
                          absl::StrJoin(parts, ", "), ")");
    }
  }
  return "";
}

// A guarantee above the same member's own limit.
std::string AboveOwnLimit(const TenantQuota& guaranteed, const TenantQuota& limit) {
  const ItemAmounts limits = QuotaItems(limit);
  for (const auto& [item, n] : QuotaItems(guaranteed)) {
    auto it = limits.find(item);
    if (it != limits.end() && n > it->second) {
      return absl::StrCat("guaranteed ", item, " ", ItemAmountText(item, n), " is above its limit ",
                          ItemAmountText(item, it->second));
    }
  }
  return "";
}

}  // namespace

absl::Status ValidateFairShare(const Policy& policy) {
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < policy.groups.size(); ++i) {
    const TenantGroup& g = policy.groups[i];
    const std::string path = absl::StrCat("groups[", i, "]");
    if (g.name.empty()) return absl::InvalidArgumentError(path + ".name: empty");
    if (!names.insert(g.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".name: duplicate group \"", g.name, "\""));
    }
    if (policy.FindTenant(g.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".name: group \"", g.name,
                       "\" has a tenant's name; give groups names of their own"));
    }
    if (g.weight < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".weight: group \"", g.name, "\": must be at least 1"));
    }
  }
  for (size_t i = 0; i < policy.groups.size(); ++i) {
    const TenantGroup& g = policy.groups[i];
    const std::string path = absl::StrCat("groups[", i, "]");
    if (!g.parent.empty() && !policy.FindGroup(g.parent)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".parent: group \"", g.name,
                                                     "\" names parent \"", g.parent,
                                                     "\", which is not defined"));
    }
    // Walking up from each group must reach the top within as many steps as there are groups.
    absl::string_view up = g.parent;
    for (size_t steps = 0; !up.empty(); ++steps) {
      if (steps >= policy.groups.size() || up == g.name) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ".parent: group \"", g.name, "\" is its own ancestor"));
      }
      up = policy.FindGroup(up)->parent;
    }
    if (std::string why = AboveOwnLimit(g.guaranteed, g.limit); !why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": group \"", g.name, "\": ", why));
    }
  }
  for (size_t i = 0; i < policy.tenants.size(); ++i) {
    const Tenant& t = policy.tenants[i];
    if (!t.fair_share) continue;
    const std::string path = absl::StrCat("tenants[", i, "]");
    if (!t.fair_share->group.empty() && !policy.FindGroup(t.fair_share->group)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".group: tenant \"", t.name,
                                                     "\" names group \"", t.fair_share->group,
                                                     "\", which is not defined"));
    }
    if (t.fair_share->weight < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".weight: tenant \"", t.name, "\": must be at least 1"));
    }
    if (std::string why = AboveOwnLimit(t.fair_share->guaranteed, t.fair_share->limit);
        !why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tenant \"", t.name, "\": ", why));
    }
  }
  // Each group's members must fit in what the group itself is guaranteed and limited to.
  for (size_t i = 0; i < policy.groups.size(); ++i) {
    const TenantGroup& g = policy.groups[i];
    const std::vector<Member> members = MembersOf(policy, g.name);
    for (const auto& [what, bound] :
         {std::pair<absl::string_view, const TenantQuota*>{"guaranteed", &g.guaranteed},
          {"limit", &g.limit}}) {
      ItemAmounts own = QuotaItems(*bound);
      std::string item;
      if (std::string sum = Overcommitted(policy, members, own, &item); !sum.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("groups[", i, "]: group \"", g.name, "\" overcommits its ", what,
                         ": its members' guarantees of ", sum, ", above the group's ", what, " of ",
                         ItemAmountText(item, own[item])));
      }
    }
  }
  if (policy.fair_share_capacity) {
    absl::Status fits = CheckGuarantees(policy, QuotaItems(*policy.fair_share_capacity));
    if (!fits.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("fairSharing.capacity: ", fits.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGuarantees(const Policy& policy, const ItemAmounts& capacity) {
  std::string item;
  std::string sum = Overcommitted(policy, MembersOf(policy, ""), capacity, &item);
  if (sum.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("the top level's guarantees of ", sum,
                                                    ", above the cluster's capacity of ",
                                                    ItemAmountText(item, capacity.at(item))));
}

}  // namespace topology
