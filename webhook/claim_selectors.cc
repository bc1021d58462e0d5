#include "webhook/claim_selectors.h"

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cel/parse.h"
#include "common/json.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "topology/dra/class_offer.h"

namespace webhook {
namespace {

using common::FindNonNull;
using common::JsonValue;
using topology::SharingMode;

constexpr absl::string_view kAttributes = "device.attributes[\"gpu.nvidia.com\"]";
constexpr absl::string_view kCapacity = "device.capacity[\"gpu.nvidia.com\"]";
constexpr absl::string_view kGpuMemoryLimit = "gpu-memory";

// TenantSelectorPlan::by_class_type's order: a class of no well-known device type, then the
// types topology::WellKnownClassDeviceType names.
constexpr std::array<absl::string_view, 4> kClassTypes = {"", "gpu", "mig", "vfio"};

std::string Quoted(absl::string_view text) { return absl::StrCat("\"", text, "\""); }

std::string QuotedList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back(Quoted(item));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

// The NVIDIA device types a tier's modes allow, in a fixed order.
std::vector<std::string> AllowedTypes(const topology::ModeSet& modes) {
  std::vector<std::string> types;
  if (modes.Has(SharingMode::kExclusive) || modes.Has(SharingMode::kTimeslice) ||
      modes.Has(SharingMode::kMps)) {
    types.push_back("gpu");
  }
  if (modes.Has(SharingMode::kMig) || modes.Has(SharingMode::kMigShared)) types.push_back("mig");
  if (modes.Has(SharingMode::kExclusive)) types.push_back("vfio");
  return types;
}

bool HasExpression(const JsonValue& holder, absl::string_view expression) {
  const JsonValue* selectors = FindNonNull(holder, "selectors");
  if (!selectors || !selectors->IsArray()) return false;
  for (const JsonValue& s : selectors->GetArray()) {
    const JsonValue* cel = FindNonNull(s, "cel");
    if (cel && common::StringOr(*cel, "expression") == expression) return true;
  }
  return false;
}

rapidjson::Value CelSelector(absl::string_view expression,
                             rapidjson::Document::AllocatorType& alloc) {
  rapidjson::Value cel(rapidjson::kObjectType);
  cel.AddMember("expression",
                rapidjson::Value(expression.data(),
                                 static_cast<rapidjson::SizeType>(expression.size()), alloc),
                alloc);
  rapidjson::Value selector(rapidjson::kObjectType);
  selector.AddMember("cel", cel, alloc);
  return selector;
}

// The annotation's JSON: the tenant, its tier, the GPU requests, and per limit its reason,
// expression and the requests it went into (`written`, by limit); gpu-memory also lists the
// requests the published devices implied it for (`memory_implied`), when there are any.
std::string Annotation(const TenantSelectorPlan& plan,
                       const std::vector<std::vector<absl::string_view>>& written,
                       const std::vector<absl::string_view>& requests,
                       const std::vector<absl::string_view>& memory_implied) {
  rapidjson::StringBuffer buffer;
  common::JsonWriter w(buffer);
  auto text = [&w](absl::string_view key, absl::string_view value) {
    common::WriteKey(w, key);
    common::WriteString(w, value);
  };
  auto names = [&w](absl::string_view key, const std::vector<absl::string_view>& list) {
    common::WriteKey(w, key);
    w.StartArray();
    for (absl::string_view name : list) common::WriteString(w, name);
    w.EndArray();
  };
  w.StartObject();
  text("tenant", plan.tenant);
  text("tier", plan.tier);
  names("requests", requests);
  common::WriteKey(w, "selectors");
  w.StartArray();
  for (size_t i = 0; i < plan.selectors.size(); ++i) {
    const TenantSelector& s = plan.selectors[i];
    w.StartObject();
    text("limit", s.limit);
    text("why", s.why);
    text("expression", s.expression);
    names("requests", written[i]);
    if (s.limit == kGpuMemoryLimit && !memory_implied.empty()) {
      names("impliedBySlices", memory_implied);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

// True for the NVIDIA driver's MIG profile attribute, in either spelling:
// device.attributes["gpu.nvidia.com"].profile or device.attributes["gpu.nvidia.com"]["profile"].
bool IsProfileAttribute(const cel::CelAst& ast, int node) {
  using Kind = cel::CelNode::Kind;
  auto is_string = [&](int i, absl::string_view text) {
    return ast.nodes[i].kind == Kind::kString && ast.nodes[i].text == text;
  };
  const cel::CelNode& n = ast.nodes[node];
  int domain = -1;
  if (n.kind == Kind::kSelect && n.text == "profile") {
    domain = n.args[0];
  } else if (n.kind == Kind::kIndex && is_string(n.args[1], "profile")) {
    domain = n.args[0];
  } else {
    return false;
  }
  const cel::CelNode& d = ast.nodes[domain];
  return d.kind == Kind::kIndex && ast.nodes[d.args[0]].kind == Kind::kAttributes &&
         is_string(d.args[1], "gpu.nvidia.com");
}

// The profiles one conjunct pins: `profile == "x"` (either side) or `profile in ["x", ...]`.
std::optional<std::vector<std::string>> PinnedBy(const cel::CelAst& ast, int node) {
  using Kind = cel::CelNode::Kind;
  const cel::CelNode& n = ast.nodes[node];
  if (n.kind == Kind::kCompare && n.op == cel::CelCompareOp::kEq) {
    for (auto [attribute, literal] :
         {std::pair(n.args[0], n.args[1]), std::pair(n.args[1], n.args[0])}) {
      if (IsProfileAttribute(ast, attribute) && ast.nodes[literal].kind == Kind::kString) {
        return std::vector<std::string>{ast.nodes[literal].text};
      }
    }
  }
  if (n.kind == Kind::kIn && IsProfileAttribute(ast, n.args[0]) &&
      ast.nodes[n.args[1]].kind == Kind::kList && !ast.nodes[n.args[1]].args.empty()) {
    std::vector<std::string> out;
    for (int element : ast.nodes[n.args[1]].args) {
      if (ast.nodes[element].kind != Kind::kString) return std::nullopt;
      out.push_back(ast.nodes[element].text);
    }
    return out;
  }
  return std::nullopt;
}

// The first conjunct of the expression (the root, or any operand of a top-level && chain,
// parenthesized chains included) that pins profiles.
std::optional<std::vector<std::string>> FirstPinned(const cel::CelAst& ast, int node) {
  if (ast.nodes[node].kind != cel::CelNode::Kind::kAnd) return PinnedBy(ast, node);
  for (int operand : ast.nodes[node].args) {
    if (auto pinned = FirstPinned(ast, operand)) return pinned;
  }
  return std::nullopt;
}

// A limit the class's device type already implies: "" (a class of no well-known type)
// implies none.
bool MootFor(const TenantSelector& selector, absl::string_view type) {
  return !type.empty() && std::find(selector.moot_for_types.begin(), selector.moot_for_types.end(),
                                    type) != selector.moot_for_types.end();
}

// The limits a request of a class of device type `type` gets (indices into `selectors`): those
// the type does not imply, without limit `left_out`.
std::vector<size_t> KeptLimits(const std::vector<TenantSelector>& selectors, absl::string_view type,
                               absl::string_view left_out = "") {
  std::vector<size_t> kept;
  for (size_t i = 0; i < selectors.size(); ++i) {
    if (!MootFor(selectors[i], type) && selectors[i].limit != left_out) kept.push_back(i);
  }
  return kept;
}

// The kept limits' expressions as one, joined with &&; "" when none is kept.
std::string JoinedExpression(const std::vector<TenantSelector>& selectors,
                             const std::vector<size_t>& kept) {
  if (kept.size() == 1) return selectors[kept[0]].expression;
  std::string out;
  for (size_t i : kept) {
    const std::string& expression = selectors[i].expression;
    if (!out.empty()) out += " && ";
    // && binds tighter than ||: a disjunction joins the chain in parentheses.
    const bool disjunction = absl::StrContains(expression, "||");
    absl::StrAppend(&out, disjunction ? "(" : "", expression, disjunction ? ")" : "");
  }
  return out;
}

}  // namespace

std::vector<TenantSelector> TenantSelectors(const topology::TenantRef& tenant,
                                            bool shared_devices_published) {
  std::vector<TenantSelector> out;
  if (!tenant.tier) return out;
  const topology::Tier& tier = *tenant.tier;
  const std::vector<std::string> types = AllowedTypes(tier.modes);
  const std::string tier_phrase =
      absl::StrCat("tier ", tier.name, " may use ", tier.modes.ToString());
  if (types.size() < 3) {
    // `in` on the attribute map guards the key: a device without `type` is no match.
    // One allowed type: `==`, not `in` over a one-element list.
    out.push_back({"device-types",
                   absl::StrCat(tier_phrase, ": device types ", absl::StrJoin(types, ", ")),
                   absl::StrCat("device.driver == \"gpu.nvidia.com\" && \"type\" in ", kAttributes,
                                " && ", kAttributes, ".type",
                                types.size() == 1 ? absl::StrCat(" == ", Quoted(types[0]))
                                                  : absl::StrCat(" in ", QuotedList(types))),
                   types});
  }
  // A device several claims hold at once is one fault domain and one memory heap. The field
  // exists in the apiserver's CEL only with DRAConsumableCapacity on, which a published
  // multi-allocatable device proves; elsewhere no device can be shared this way.
  const bool whole_shared =
      tier.modes.Has(SharingMode::kTimeslice) || tier.modes.Has(SharingMode::kMps);
  const bool mig_shared = tier.modes.Has(SharingMode::kMigShared);
  if (shared_devices_published && !(whole_shared && mig_shared)) {
    std::string expression = "!device.allowMultipleAllocations";
    std::vector<std::string> moot;
    if (whole_shared) {
      moot = {"gpu", "vfio"};
      absl::StrAppend(&expression, " || (\"type\" in ", kAttributes, " && ", kAttributes,
                      ".type != \"mig\")");
    } else if (mig_shared) {
      moot = {"mig"};
      absl::StrAppend(&expression, " || (\"type\" in ", kAttributes, " && ", kAttributes,
                      ".type == \"mig\")");
    }
    out.push_back(
        {"device-sharing",
         absl::StrCat(tier_phrase, ": no device that other claims may hold at the same time"),
         std::move(expression), std::move(moot)});
  }
  if (!tenant.tenant) return out;
  const topology::TenantLimits& limits = tenant.tenant->limits;
  if (!limits.mig_profiles.empty() && std::find(types.begin(), types.end(), "mig") != types.end()) {
    out.push_back({"mig-profiles",
                   absl::StrCat("tenant ", tenant.name, " may use MIG profiles ",
                                absl::StrJoin(limits.mig_profiles, ", ")),
                   absl::StrCat("(\"type\" in ", kAttributes, " && ", kAttributes,
                                ".type != \"mig\") || ", "(\"profile\" in ", kAttributes, " && ",
                                kAttributes, ".profile in ", QuotedList(limits.mig_profiles), ")"),
                   {"gpu", "vfio"}});
  }
  if (limits.gpu_memory_mib_per_pod) {
    const std::string cap = absl::StrCat(*limits.gpu_memory_mib_per_pod, "Mi");
    out.push_back(
        {std::string(kGpuMemoryLimit),
         absl::StrCat("tenant ", tenant.name, " may use at most ", cap, " of GPU memory per pod"),
         absl::StrCat("\"memory\" in ", kCapacity, " && ", kCapacity, ".memory.compareTo(quantity(",
                      Quoted(cap), ")) <= 0"),
         {}});
  }
  return out;
}

std::string RequestExpression(const std::vector<TenantSelector>& selectors,
                              absl::string_view device_class) {
  return JoinedExpression(selectors,
                          KeptLimits(selectors, topology::WellKnownClassDeviceType(device_class)));
}

bool MemoryCapImplied(const topology::DraDeviceSet& devices, absl::string_view type,
                      int64_t cap_mib) {
  auto found = devices.nvidia_max_memory_milli.find(type);
  if (found == devices.nvidia_max_memory_milli.end() || !found->second) return false;
  // In whole MiB rounded up, as the guard's claim-device check reads a device.
  return topology::Quantity::FromMilli(*found->second).ValueMiB() <= cap_mib;
}

const TenantSelectorPlan::ForClass& TenantSelectorPlan::For(absl::string_view device_class,
                                                            bool without_memory) const {
  const absl::string_view type = topology::WellKnownClassDeviceType(device_class);
  size_t t = 0;
  for (size_t i = 1; i < kClassTypes.size(); ++i) {
    if (type == kClassTypes[i]) t = i;
  }
  return by_class_type[t][without_memory ? 1 : 0];
}

bool TenantSelectorPlan::MemoryImplied(absl::string_view device_class,
                                       const topology::DraDeviceSet* devices) const {
  const absl::string_view type = topology::WellKnownClassDeviceType(device_class);
  return memory_cap_mib && devices && !type.empty() &&
         MemoryCapImplied(*devices, type, *memory_cap_mib);
}

TenantSelectorPlan PlanTenantSelectors(const topology::TenantRef& tenant,
                                       bool shared_devices_published) {
  TenantSelectorPlan plan;
  plan.tenant = tenant.name;
  if (tenant.tier) plan.tier = tenant.tier->name;
  plan.selectors = TenantSelectors(tenant, shared_devices_published);
  // TenantSelectors writes gpu-memory for every tenant of a tier with the limit.
  if (tenant.tier && tenant.tenant) {
    plan.memory_cap_mib = tenant.tenant->limits.gpu_memory_mib_per_pod;
  }
  for (size_t t = 0; t < kClassTypes.size(); ++t) {
    for (size_t without_memory = 0; without_memory < 2; ++without_memory) {
      TenantSelectorPlan::ForClass& for_class = plan.by_class_type[t][without_memory];
      for_class.limits =
          KeptLimits(plan.selectors, kClassTypes[t], without_memory ? kGpuMemoryLimit : "");
      for_class.expression = JoinedExpression(plan.selectors, for_class.limits);
    }
  }
  return plan;
}

TenantSelectorPlans::TenantSelectorPlans(std::shared_ptr<const topology::Policy> policy)
    : policy_(std::move(policy)) {
  auto add = [this](topology::TenantRef tenant) {
    std::array<TenantSelectorPlan, 2> plans = {PlanTenantSelectors(tenant, false),
                                               PlanTenantSelectors(tenant, true)};
    entries_.push_back({std::move(tenant), std::move(plans)});
  };
  for (const topology::Tenant& t : policy_->tenants) add(topology::TenantRefOf(*policy_, t));
  add(topology::UnknownTenantRef(*policy_));
}

const TenantSelectorPlan* TenantSelectorPlans::For(const topology::TenantRef& tenant,
                                                   bool shared_devices_published) const {
  // Found by address (std::less orders any two pointers): a tenant of another policy is none
  // of these.
  const topology::Tenant* first = policy_->tenants.data();
  const topology::Tenant* end = first + policy_->tenants.size();
  size_t index = policy_->tenants.size();  // the unknown tenant
  if (tenant.tenant) {
    if (std::less<>()(tenant.tenant, first) || !std::less<>()(tenant.tenant, end)) return nullptr;
    index = static_cast<size_t>(tenant.tenant - first);
  }
  const Entry& e = entries_[index];
  if (e.tenant.tenant != tenant.tenant || e.tenant.tier != tenant.tier ||
      e.tenant.name != tenant.name) {
    return nullptr;
  }
  return &e.plans[shared_devices_published ? 1 : 0];
}

bool InjectTenantSelectors(const JsonValue& object, const ClaimView& claim,
                           const TenantSelectorPlan& plan, const topology::DraDeviceSet* devices,
                           JsonPatch& patch) {
  if (claim.extended_resource_claim || plan.selectors.empty()) return false;
  const size_t before = patch.size();
  std::vector<absl::string_view> requests;
  // The requests gpu-memory was left out of, the published devices implying it.
  std::vector<absl::string_view> memory_implied;
  // Per limit, the requests it was written into.
  std::vector<std::vector<absl::string_view>> written(plan.selectors.size());
  for (const ClaimRequest& r : claim.requests) {
    if (r.class_kind != topology::DeviceClassKind::kGpu) continue;
    requests.push_back(r.name);
    const bool without_memory = plan.MemoryImplied(r.device_class, devices);
    if (without_memory) memory_implied.push_back(r.name);
    const TenantSelectorPlan::ForClass& for_class = plan.For(r.device_class, without_memory);
    if (for_class.expression.empty()) continue;  // the class implies every limit
    for (size_t i : for_class.limits) written[i].push_back(r.name);
    const JsonValue* existing = FindNonNull(*r.holder, "selectors");
    if (existing && !existing->IsArray()) continue;  // not ours to repair
    if (HasExpression(*r.holder, for_class.expression)) continue;
    const std::string pointer = absl::StrCat(r.holder_pointer, "/selectors");
    if (existing) {
      patch.Add(absl::StrCat(pointer, "/-"), CelSelector(for_class.expression, patch.allocator()));
    } else {
      rapidjson::Value added(rapidjson::kArrayType);
      added.PushBack(CelSelector(for_class.expression, patch.allocator()), patch.allocator());
      patch.Add(pointer, added);
    }
  }
  if (requests.empty()) return false;
  const JsonValue* metadata = FindNonNull(object, "metadata");
  if (metadata && metadata->IsObject()) {
    EnsureMapEntries(
        *metadata, "/metadata", "annotations",
        {{std::string(kSelectorsAnnotation), Annotation(plan, written, requests, memory_implied)}},
        patch);
  }
  return patch.size() != before;
}

std::optional<std::vector<std::string>> PinnedProfiles(absl::string_view expression) {
  // The tree, even when it calls a function outside the evaluated subset: only its shape is
  // read here. An expression that does not parse pins nothing.
  const cel::CelAst ast = cel::ParseCel(expression);
  if (ast.root < 0) return std::nullopt;
  return FirstPinned(ast, ast.root);
}

std::vector<Violation> CheckClaimLiterals(const ClaimView& claim, const topology::TenantRef& tenant,
                                          absl::string_view namespace_name) {
  std::vector<Violation> out;
  if (!tenant.tier || claim.extended_resource_claim) return out;
  const std::vector<std::string> types = AllowedTypes(tenant.tier->modes);
  const std::vector<std::string>* profiles =
      tenant.tenant && !tenant.tenant->limits.mig_profiles.empty()
          ? &tenant.tenant->limits.mig_profiles
          : nullptr;
  for (const ClaimRequest& r : claim.requests) {
    const std::string subject =
        absl::StrCat(claim.kind, " \"", claim.name, "\" request \"", r.name, "\"");
    absl::string_view type = topology::WellKnownClassDeviceType(r.device_class);
    if (!type.empty() && std::find(types.begin(), types.end(), type) == types.end()) {
      out.push_back(
          MakeViolation("claim-device-class",
                        absl::StrCat(subject, " asks for device class ", r.device_class, " (", type,
                                     " devices), but ", TenantPhrase(tenant, namespace_name),
                                     " may use only ", tenant.tier->modes.ToString(),
                                     " (device types ", absl::StrJoin(types, ", "), ")",
                                     std::find(types.begin(), types.end(), "mig") != types.end()
                                         ? "; claim a MIG device with device class mig.nvidia.com"
                                         : "")));
      continue;
    }
    if (!profiles || r.class_kind != topology::DeviceClassKind::kGpu) continue;
    const JsonValue* selectors = FindNonNull(*r.holder, "selectors");
    if (!selectors || !selectors->IsArray()) continue;
    for (const JsonValue& s : selectors->GetArray()) {
      const JsonValue* cel = FindNonNull(s, "cel");
      if (!cel) continue;
      std::optional<std::vector<std::string>> pinned =
          PinnedProfiles(common::StringOr(*cel, "expression"));
      if (!pinned) continue;
      const bool any_allowed = std::any_of(pinned->begin(), pinned->end(), [&](const auto& p) {
        return std::find(profiles->begin(), profiles->end(), p) != profiles->end();
      });
      if (any_allowed) continue;
      out.push_back(MakeViolation(
          "claim-mig-profile",
          absl::StrCat(subject, " selects MIG profile ", absl::StrJoin(*pinned, " or "), ", but ",
                       TenantPhrase(tenant, namespace_name), " may use only ",
                       absl::StrJoin(*profiles, ", "), "; select one of those")));
      break;
    }
  }
  return out;
}

}  // namespace webhook
