#include "cmd/explain_claims.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "topology/dra/capacity.h"
#include "webhook/claim_selectors.h"

namespace cmd {
namespace {

// The tenant's limits as the webhook writes them into claims of each device class in this
// cluster, so that explain can say which limit kept a device from a claim, and which the claim
// does not carry.
topology::RequestLimitsFor TenantLimits(const topology::TenantRef& tenant,
                                        const topology::DraState& dra) {
  std::shared_ptr<const topology::DraDeviceSet> devices = dra.device_set;
  auto plan = std::make_shared<const webhook::TenantSelectorPlan>(webhook::PlanTenantSelectors(
      tenant, devices != nullptr && devices->publishes_shared_devices));
  if (plan->selectors.empty()) return nullptr;
  return [plan, devices](const std::string& device_class) {
    topology::RequestLimits out;
    auto names = [&](const webhook::TenantSelectorPlan::ForClass& written) {
      std::vector<std::string> limits;
      for (size_t i : written.limits) limits.push_back(plan->selectors[i].limit);
      return limits;
    };
    for (const webhook::TenantSelector& s : plan->selectors) {
      out.own.push_back({s.limit, s.expression});
    }
    const webhook::TenantSelectorPlan::ForClass& whole = plan->For(device_class);
    out.required = names(whole);
    for (bool without_memory : {false, true}) {
      const webhook::TenantSelectorPlan::ForClass& written =
          plan->For(device_class, without_memory);
      if (!written.expression.empty()) out.joined.push_back({written.expression, names(written)});
    }
    if (plan->MemoryImplied(device_class, devices.get())) {
      // The limits the request may go without: those the expression without memory leaves out.
      const std::vector<std::string> kept = names(plan->For(device_class, true));
      for (const std::string& limit : out.required) {
        if (std::find(kept.begin(), kept.end(), limit) == kept.end()) out.implied.push_back(limit);
      }
    }
    return out;
  };
}

// The claim's devices; for the multi-allocatable ones, who holds them.
std::vector<ClaimDevice> HeldDevices(
    const topology::DraClaim& claim, const topology::ClusterSnapshot& snapshot,
    const topology::Policy& policy,
    const std::map<topology::DraDeviceId, std::vector<topology::DraHolder>>& holders,
    size_t& unpublished) {
  const topology::DraState& dra = snapshot.dra();
  topology::DraAllocatedDevices held = topology::AllocatedDevices(claim, dra.devices());
  unpublished = held.missing.size();
  std::vector<ClaimDevice> out;
  for (const topology::DraDevice* device : held.devices) {
    ClaimDevice row{device, {}, {}};
    auto found = holders.find(device->Id());
    if (device->allow_multiple_allocations && found != holders.end()) {
      for (const topology::DraHolder& h : found->second) {
        const std::string& ns = h.claim->namespace_name;
        DeviceShare share{ns,
                          h.claim->name,
                          topology::ResolveTenant(policy, ns, snapshot.NamespaceLabels(ns)).name,
                          topology::IsShare(*device, *h.result) ? h.result->share_id : "",
                          h.result->consumed_capacity,
                          h.claim == &claim};
        topology::AddCapacity(row.consumed, share.consumed, +1);
        row.shares.push_back(std::move(share));
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::string DeviceText(const ClaimDevice& c) {
  const topology::DraDevice& d = *c.device;
  std::string what = d.profile.empty() ? d.type : absl::StrCat(d.type, " ", d.profile);
  if (!d.uuid.empty()) absl::StrAppend(&what, ", ", d.uuid);
  if (d.allow_multiple_allocations) {
    // "shared: memory 20Gi of 81559Mi consumed"
    std::vector<std::string> capacity;
    for (const topology::DraPublishedCapacity& p : d.published_capacity) {
      auto consumed = c.consumed.find(p.name);
      capacity.push_back(
          absl::StrCat(p.name, " ",
                       topology::CapacityText(consumed == c.consumed.end() ? topology::Quantity()
                                                                           : consumed->second),
                       " of ", topology::CapacityText(p.value)));
    }
    absl::StrAppend(
        &what, ", shared",
        capacity.empty() ? "" : absl::StrCat(": ", absl::StrJoin(capacity, ", "), " consumed"));
  }
  return absl::StrCat(d.driver, "/", d.pool, "/", d.name, " (", what, ")");
}

// "share of research/shared-a (tenant research): memory 10Gi"
std::string ShareText(const DeviceShare& s) {
  return absl::StrCat(s.share_id.empty() ? "held whole by " : "share of ", s.namespace_name, "/",
                      s.claim, " (tenant ", s.tenant, s.this_claim ? ", this claim" : "", ")",
                      s.consumed.empty() ? "" : ": ", topology::CapacityText(s.consumed));
}

void WriteAmounts(rapidjson::PrettyWriter<rapidjson::StringBuffer>& w,
                  const topology::DraCapacity& amounts) {
  w.StartObject();
  for (const auto& [name, amount] : amounts) {
    w.Key(name.c_str());
    w.String(topology::CapacityText(amount).c_str());
  }
  w.EndObject();
}

// Per node, whether a pending claim's requests could be met there, and why not.
void WriteCandidates(rapidjson::PrettyWriter<rapidjson::StringBuffer>& w,
                     const std::vector<topology::ClaimOnNode>& candidates) {
  w.StartArray();
  for (const topology::ClaimOnNode& n : candidates) {
    w.StartObject();
    w.Key("name");
    w.String(n.node.c_str());
    w.Key("answer");
    w.String(topology::AnswerName(n.answer));
    w.Key("requests");
    w.StartArray();
    for (const topology::RequestOnNode& r : n.requests) {
      w.StartObject();
      w.Key("request");
      w.String(r.request.c_str());
      w.Key("deviceClass");
      w.String(r.device_class.c_str());
      w.Key("answer");
      w.String(topology::AnswerName(r.answer()));
      for (auto [key, value] : {std::pair{"freeMatching", r.free_matching},
                                {"sharedMatching", r.shared_matching},
                                {"heldMatching", r.held_matching},
                                {"fullMatching", r.full_matching},
                                {"capacityShort", r.capacity_short}}) {
        w.Key(key);
        w.Int64(value);
      }
      w.Key("excludedByLimit");
      w.StartObject();
      for (const auto& [limit, count] : r.excluded_by_limit) {
        w.Key(limit.c_str());
        w.Int64(count);
      }
      w.EndObject();
      for (auto [key, limits] : {std::pair{"limitsNotInClaim", &r.limits_not_in_claim},
                                 {"limitsImpliedByDevices", &r.limits_implied}}) {
        w.Key(key);
        w.StartArray();
        for (const std::string& limit : *limits) w.String(limit.c_str());
        w.EndArray();
      }
      w.Key("notDecided");
      w.Int64(r.not_evaluated);
      w.Key("reason");
      w.String(topology::RequestOnNodeText(r).c_str());
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace

std::vector<ClaimRow> ClaimRows(const topology::PodFacts& pod,
                                const topology::ClusterSnapshot& snapshot,
                                const topology::Policy& policy) {
  const topology::DraState& dra = snapshot.dra();
  const topology::RequestLimitsFor limits =
      TenantLimits(topology::ResolveTenant(policy, pod.namespace_name,
                                           snapshot.NamespaceLabels(pod.namespace_name)),
                   dra);
  std::map<topology::DraDeviceId, std::vector<topology::DraHolder>> holders;
  bool holders_read = false;
  std::vector<ClaimRow> rows;
  for (const topology::PodClaimRef& ref : pod.resource_claims) {
    ClaimRow row{ref.name, ref.claim, "", "", {}, 0, {}};
    const topology::DraClaim* found = dra.claims.Find(pod.namespace_name, ref.claim);
    if (ref.claim.empty()) {
      row.state = absl::StrCat("not made yet (template ", ref.template_name, ")");
      const topology::DraClaim* stamp = dra.templates.Find(pod.namespace_name, ref.template_name);
      if (stamp) {
        row.candidates = topology::ClaimCandidates(*stamp, dra, limits);
      } else {
        absl::StrAppend(&row.state, "; the template is not in the cluster");
      }
    } else if (!found) {
      row.state = "not in the cluster";
    } else if (!found->allocated) {
      row.state = "pending: kube-scheduler's DRA allocator has not placed it";
      row.candidates = topology::ClaimCandidates(*found, dra, limits);
    } else {
      row.state = "allocated";
      row.node = found->allocated_node;
      if (!holders_read) {
        holders = topology::HoldersByDevice(dra);
        holders_read = true;
      }
      row.devices = HeldDevices(*found, snapshot, policy, holders, row.unpublished);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void PrintClaimRows(const std::vector<ClaimRow>& rows, std::ostream& out) {
  for (const ClaimRow& c : rows) {
    out << "claim   " << c.pod_claim << (c.claim.empty() ? "" : absl::StrCat(" = ", c.claim))
        << ": " << c.state << (c.node.empty() ? "" : absl::StrCat(" on ", c.node)) << "\n";
    for (const ClaimDevice& device : c.devices) {
      out << "          " << DeviceText(device) << "\n";
      for (const DeviceShare& share : device.shares) {
        out << "            " << ShareText(share) << "\n";
      }
    }
    if (c.unpublished > 0) {
      out << "          " << c.unpublished << " device(s) no current slice publishes\n";
    }
    size_t width = 4;
    for (const topology::ClaimOnNode& n : c.candidates) width = std::max(width, n.node.size());
    for (const topology::ClaimOnNode& n : c.candidates) {
      for (size_t i = 0; i < n.requests.size(); ++i) {
        out << absl::StrFormat("          %-*s  %-7s  %s\n", width, i == 0 ? n.node : "",
                               i == 0 ? topology::AnswerName(n.answer) : "",
                               topology::RequestOnNodeText(n.requests[i]));
      }
    }
  }
}

void WriteClaimRows(rapidjson::PrettyWriter<rapidjson::StringBuffer>& w,
                    const std::vector<ClaimRow>& rows) {
  w.StartArray();
  for (const ClaimRow& c : rows) {
    w.StartObject();
    w.Key("podClaim");
    w.String(c.pod_claim.c_str());
    w.Key("claim");
    w.String(c.claim.c_str());
    w.Key("state");
    w.String(c.state.c_str());
    w.Key("node");
    w.String(c.node.c_str());
    w.Key("devices");
    w.StartArray();
    for (const ClaimDevice& held : c.devices) {
      const topology::DraDevice& device = *held.device;
      w.StartObject();
      w.Key("device");
      w.String(device.Id().ToString().c_str());
      w.Key("type");
      w.String(device.type.c_str());
      w.Key("migProfile");
      w.String(device.profile.c_str());
      w.Key("uuid");
      w.String(device.uuid.c_str());
      w.Key("allowMultipleAllocations");
      w.Bool(device.allow_multiple_allocations);
      w.Key("shares");
      w.StartArray();
      for (const DeviceShare& s : held.shares) {
        w.StartObject();
        w.Key("namespace");
        w.String(s.namespace_name.c_str());
        w.Key("claim");
        w.String(s.claim.c_str());
        w.Key("tenant");
        w.String(s.tenant.c_str());
        w.Key("shareID");
        w.String(s.share_id.c_str());
        w.Key("consumedCapacity");
        WriteAmounts(w, s.consumed);
        w.Key("thisClaim");
        w.Bool(s.this_claim);
        w.EndObject();
      }
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.Key("unpublishedDevices");
    w.Uint64(c.unpublished);
    if (!c.candidates.empty()) {
      w.Key("nodes");
      WriteCandidates(w, c.candidates);
    }
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace cmd
