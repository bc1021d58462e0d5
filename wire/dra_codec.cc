#include "wire/dra_codec.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "common/json_path.h"
#include "topology/quantity.h"
#include "wire/k8s_codec.h"

namespace wire {

using common::AsStringView;
using common::FindMember;
using common::FindNonNull;
using common::JsonPath;
using common::JsonValue;
using common::OptionalArray;
using common::OptionalObject;
using common::RequireObject;
using common::RequireString;
namespace {

using topology::DraClaim;
using topology::DraDevice;
using topology::DraDeviceClass;
using topology::DraSlice;

absl::Status Invalid(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}
absl::Status Invalid(const JsonPath& path, absl::string_view what) {
  return Invalid(path.str(), what);
}

// "" when absent or null; an error when present with another type.
absl::StatusOr<absl::string_view> OptionalString(const JsonValue& object, absl::string_view key,
                                                 const JsonPath& path) {
  const JsonValue* v = FindNonNull(object, key);
  if (!v) return absl::string_view();
  if (v->IsString()) return AsStringView(*v);
  return RequireString(object, key, path);  // the error, worded as for a required string
}

// Copies object[key] into `out`: a string that must be present and non-empty when `required`,
// otherwise one that may be absent or null ("").
absl::Status ReadString(const JsonValue& object, absl::string_view key, const JsonPath& path,
                        std::string& out, bool required = false) {
  ASSIGN_OR_RETURN(absl::string_view value,
                   required ? RequireString(object, key, path) : OptionalString(object, key, path));
  if (required && value.empty()) return Invalid(JsonPath(path, key), "empty");
  out.assign(value.data(), value.size());
  return absl::OkStatus();
}
constexpr bool kRequired = true;

// Calls fn(element, its path) for each element of the optional array object[key], each of
// which must be an object.
template <typename Fn>
absl::Status ForEachObject(const JsonValue& object, absl::string_view key, const JsonPath& path,
                           Fn fn) {
  ASSIGN_OR_RETURN(const JsonValue* array, OptionalArray(object, key, path));
  const JsonPath array_path(path, key);
  for (rapidjson::SizeType i = 0; array && i < array->Size(); ++i) {
    const JsonPath item_path(array_path, i);
    if (!(*array)[i].IsObject()) return Invalid(item_path, "expected object");
    RETURN_IF_ERROR(fn((*array)[i], item_path));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> OptionalInt64(const JsonValue& object, absl::string_view key,
                                      const JsonPath& path, int64_t fallback) {
  const JsonValue* v = FindNonNull(object, key);
  if (!v) return fallback;
  if (!v->IsInt64()) return Invalid(JsonPath(path, key), "expected integer");
  return v->GetInt64();
}

// Checks the object's apiVersion and kind where present (see the header for why).
absl::Status CheckTypeMeta(const JsonValue& object, absl::string_view kind, const JsonPath& path) {
  if (!object.IsObject()) return Invalid(path, "expected object");
  ASSIGN_OR_RETURN(absl::string_view api_version, OptionalString(object, "apiVersion", path));
  if (!api_version.empty() && api_version != "resource.k8s.io/v1" &&
      api_version != "resource.k8s.io/v1beta2" && api_version != "resource.k8s.io/v1beta1") {
    return Invalid(JsonPath(path, "apiVersion"),
                   absl::StrCat("unsupported \"", api_version,
                                "\" (want resource.k8s.io/v1, v1beta2 or v1beta1)"));
  }
  ASSIGN_OR_RETURN(absl::string_view got, OptionalString(object, "kind", path));
  if (!got.empty() && got != kind) {
    return Invalid(JsonPath(path, "kind"), absl::StrCat("expected ", kind, ", got ", got));
  }
  return absl::OkStatus();
}

struct Meta {
  std::string name, namespace_name, uid;
  const JsonValue* annotations = nullptr;
};

absl::StatusOr<Meta> ParseMeta(const JsonValue& object, const JsonPath& path) {
  Meta m;
  ASSIGN_OR_RETURN(const JsonValue* meta, OptionalObject(object, "metadata", path));
  if (!meta) return m;
  const JsonPath meta_path(path, "metadata");
  RETURN_IF_ERROR(ReadString(*meta, "name", meta_path, m.name));
  RETURN_IF_ERROR(ReadString(*meta, "namespace", meta_path, m.namespace_name));
  RETURN_IF_ERROR(ReadString(*meta, "uid", meta_path, m.uid));
  ASSIGN_OR_RETURN(m.annotations, OptionalObject(*meta, "annotations", meta_path));
  return m;
}

// The attribute's one value member ("string", "int", "bool" or "version"), type-checked.
// Other members are ignored.
absl::StatusOr<const JsonValue::Member*> AttributeValue(const JsonValue& attribute,
                                                        const JsonPath& path) {
  if (!attribute.IsObject()) return Invalid(path, "expected object");
  const JsonValue::Member* found = nullptr;
  for (const JsonValue::Member& m : attribute.GetObject()) {
    absl::string_view kind = AsStringView(m.name);
    absl::string_view want;
    if (kind == "string" || kind == "version") {
      if (!m.value.IsString()) want = "expected string";
    } else if (kind == "int") {
      if (!m.value.IsInt64()) want = "expected integer";
    } else if (kind == "bool") {
      if (!m.value.IsBool()) want = "expected boolean";
    } else {
      continue;
    }
    if (found) return Invalid(path, "expected exactly one of string, int, bool, version");
    if (!want.empty()) return Invalid(JsonPath(path, kind), want);
    found = &m;
  }
  if (!found) return Invalid(path, "expected exactly one of string, int, bool, version");
  return found;
}

// The attribute or capacity name within the driver's domain ("uuid" for "uuid" and for
// "gpu.nvidia.com/uuid"), or "" for another domain's ("resource.kubernetes.io/pciBusID").
absl::string_view LocalName(absl::string_view key, absl::string_view driver) {
  absl::string_view rest = key;
  if (absl::ConsumePrefix(&rest, driver) && absl::ConsumePrefix(&rest, "/")) return rest;
  return absl::StrContains(key, '/') ? absl::string_view() : key;
}

// The key under its fully qualified name: an unqualified key is in the driver's domain.
std::string QualifiedName(absl::string_view key, absl::string_view driver) {
  return absl::StrContains(key, '/') ? std::string(key) : absl::StrCat(driver, "/", key);
}

absl::Status ParseAttributes(const JsonValue& attributes, const JsonPath& path, DraDevice& device) {
  for (const JsonValue::Member& m : attributes.GetObject()) {
    absl::string_view key = AsStringView(m.name);
    const JsonPath attr_path(path, key);
    ASSIGN_OR_RETURN(const JsonValue::Member* value, AttributeValue(m.value, attr_path));
    absl::string_view kind = AsStringView(value->name);
    topology::DraAttribute attribute;
    if (kind == "int") {
      attribute.kind = topology::DraAttribute::Kind::kInt;
      attribute.number = value->value.GetInt64();
    } else if (kind == "bool") {
      attribute.kind = topology::DraAttribute::Kind::kBool;
      attribute.flag = value->value.GetBool();
    } else {
      attribute.kind = kind == "version" ? topology::DraAttribute::Kind::kVersion
                                         : topology::DraAttribute::Kind::kString;
      attribute.text = std::string(AsStringView(value->value));
    }
    absl::string_view name = LocalName(key, device.driver);
    std::string* field = name == "type"          ? &device.type
                         : name == "uuid"        ? &device.uuid
                         : name == "parentUUID"  ? &device.parent_uuid
                         : name == "profile"     ? &device.profile
                         : name == "productName" ? &device.product
                                                 : nullptr;
    if (field) {
      if (kind != "string") {
        return Invalid(attr_path, absl::StrCat("expected a string attribute, got ", kind));
      }
      *field = attribute.text;
    }
    device.attributes[QualifiedName(key, device.driver)] = std::move(attribute);
  }
  return absl::OkStatus();
}

// A capacity or counter entry, {"value": <quantity>}.
absl::StatusOr<topology::Quantity> ParseValueEntry(const JsonValue& entry, const JsonPath& path) {
  const JsonPath value_path(path, "value");
  if (!entry.IsObject()) return Invalid(path, "expected object");
  const JsonValue* value = FindMember(entry, "value");
  if (!value) return Invalid(value_path, "missing");
  return ParseQuantityValue(*value, value_path.str());
}

// A quantity that is not negative, at object[key] when present and not null.
absl::StatusOr<std::optional<topology::Quantity>> OptionalAmount(const JsonValue& object,
                                                                 absl::string_view key,
                                                                 const JsonPath& path) {
  const JsonValue* v = FindNonNull(object, key);
  if (!v) return std::nullopt;
  const JsonPath v_path(path, key);
  ASSIGN_OR_RETURN(topology::Quantity q, ParseQuantityValue(*v, v_path.str()));
  if (q.IsNegative()) return Invalid(v_path, "negative");
  return q;
}

// A map of names to quantities that are not negative (capacity.requests, consumedCapacity).
absl::StatusOr<topology::DraCapacity> ParseAmounts(const JsonValue& object, const JsonPath& path) {
  if (!object.IsObject()) return Invalid(path, "expected object");
  topology::DraCapacity out;
  for (const JsonValue::Member& m : object.GetObject()) {
    const absl::string_view name = AsStringView(m.name);
    ASSIGN_OR_RETURN(std::optional<topology::Quantity> q, OptionalAmount(object, name, path));
    if (!q) return Invalid(JsonPath(path, name), "expected quantity");
    out.emplace(std::string(name), *q);
  }
  return out;
}

// A capacity's requestPolicy (DRAConsumableCapacity): default, and validValues (ascending) or
// validRange ({min, max, step}: min required, step positive).
absl::StatusOr<topology::DraCapacityPolicy> ParseRequestPolicy(const JsonValue& policy,
                                                               const JsonPath& path) {
  topology::DraCapacityPolicy out;
  ASSIGN_OR_RETURN(out.default_amount, OptionalAmount(policy, "default", path));
  ASSIGN_OR_RETURN(const JsonValue* values, OptionalArray(policy, "validValues", path));
  const JsonPath values_path(path, "validValues");
  for (rapidjson::SizeType i = 0; values && i < values->Size(); ++i) {
    const JsonPath v_path(values_path, i);
    ASSIGN_OR_RETURN(topology::Quantity q, ParseQuantityValue((*values)[i], v_path.str()));
    if (q.IsNegative()) return Invalid(v_path, "negative");
    if (!out.valid_values.empty() && q <= out.valid_values.back()) {
      return Invalid(v_path, "validValues must be in ascending order");
    }
    out.valid_values.push_back(q);
  }
  ASSIGN_OR_RETURN(const JsonValue* range, OptionalObject(policy, "validRange", path));
  if (!range) return out;
  const JsonPath range_path(path, "validRange");
  if (!out.valid_values.empty()) return Invalid(range_path, "set beside validValues");
  ASSIGN_OR_RETURN(out.min, OptionalAmount(*range, "min", range_path));
  if (!out.min) return Invalid(JsonPath(range_path, "min"), "missing");
  ASSIGN_OR_RETURN(out.max, OptionalAmount(*range, "max", range_path));
  ASSIGN_OR_RETURN(out.step, OptionalAmount(*range, "step", range_path));
  if (out.step && out.step->IsZero()) return Invalid(JsonPath(range_path, "step"), "zero");
  if (out.max && *out.max < *out.min) return Invalid(JsonPath(range_path, "max"), "below min");
  return out;
}

absl::Status ParseCapacity(const JsonValue& capacity, const JsonPath& path, DraDevice& device) {
  for (const JsonValue::Member& m : capacity.GetObject()) {
    absl::string_view key = AsStringView(m.name);
    const JsonPath cap_path(path, key);
    const JsonPath value_path(cap_path, "value");
    ASSIGN_OR_RETURN(topology::Quantity q, ParseValueEntry(m.value, cap_path));
    device.capacity[QualifiedName(key, device.driver)] = q;
    topology::DraPublishedCapacity published{std::string(key), q, std::nullopt};
    ASSIGN_OR_RETURN(const JsonValue* policy, OptionalObject(m.value, "requestPolicy", cap_path));
    if (policy) {
      ASSIGN_OR_RETURN(published.policy,
                       ParseRequestPolicy(*policy, JsonPath(cap_path, "requestPolicy")));
    }
    device.published_capacity.push_back(std::move(published));
    if (LocalName(key, device.driver) != "memory") continue;
    if (q.IsNegative()) return Invalid(value_path, "negative");
    constexpr int64_t kMilliPerMiB = int64_t{1000} << 20;
    device.memory_mib = q.milli() / kMilliPerMiB;  // round down: a partial MiB is not usable
  }
  return absl::OkStatus();
}

// A counter set ({name, counters}) or a device's consumption ({counterSet, counters}): the
// name under `name_key`, and the counters, each a quantity that is not negative.
absl::Status ParseNamedCounters(const JsonValue& item, const JsonPath& path,
                                absl::string_view name_key, std::string& name,
                                topology::DraCounters& counters) {
  RETURN_IF_ERROR(ReadString(item, name_key, path, name, kRequired));
  ASSIGN_OR_RETURN(const JsonValue* entries, RequireObject(item, "counters", path));
  const JsonPath counters_path(path, "counters");
  for (const JsonValue::Member& m : entries->GetObject()) {
    const absl::string_view counter = AsStringView(m.name);
    const JsonPath counter_path(counters_path, counter);
    ASSIGN_OR_RETURN(topology::Quantity q, ParseValueEntry(m.value, counter_path));
    if (q.IsNegative()) return Invalid(JsonPath(counter_path, "value"), "negative");
    counters.emplace(std::string(counter), q);
  }
  return absl::OkStatus();
}

absl::Status ParseDevice(const JsonValue& item, const JsonPath& path, DraSlice& slice) {
  DraDevice device;
  device.driver = slice.driver;
  device.pool = slice.pool;
  RETURN_IF_ERROR(ReadString(item, "name", path, device.name, kRequired));
  // v1beta1 (and v1alpha3) keep the device's fields in `basic`.
  ASSIGN_OR_RETURN(const JsonValue* basic, OptionalObject(item, "basic", path));
  const JsonValue* body = basic ? basic : &item;
  const JsonPath basic_path(path, "basic");
  const JsonPath& body_path = basic ? basic_path : path;
  RETURN_IF_ERROR(ReadString(*body, "nodeName", body_path, device.node));  // per-device nodes
  if (!slice.node.empty()) device.node = slice.node;
  ASSIGN_OR_RETURN(const JsonValue* attributes, OptionalObject(*body, "attributes", body_path));
  if (attributes) {
    RETURN_IF_ERROR(ParseAttributes(*attributes, JsonPath(body_path, "attributes"), device));
  }
  ASSIGN_OR_RETURN(const JsonValue* capacity, OptionalObject(*body, "capacity", body_path));
  if (capacity) RETURN_IF_ERROR(ParseCapacity(*capacity, JsonPath(body_path, "capacity"), device));
  RETURN_IF_ERROR(ForEachObject(
      *body, "consumesCounters", body_path, [&](const JsonValue& item, const JsonPath& c_path) {
        topology::DraCounterConsumption& c = device.consumes_counters.emplace_back();
        return ParseNamedCounters(item, c_path, "counterSet", c.counter_set, c.counters);
      }));
  if (const JsonValue* multiple = FindNonNull(*body, "allowMultipleAllocations")) {
    if (!multiple->IsBool()) {
      return Invalid(JsonPath(body_path, "allowMultipleAllocations"), "expected boolean");
    }
    device.allow_multiple_allocations = multiple->GetBool();
  }
  slice.devices.push_back(std::move(device));
  return absl::OkStatus();
}

// Appends each selectors[i].cel.expression of `holder` (a request or a DeviceClass spec).
absl::Status ReadSelectors(const JsonValue& holder, const JsonPath& path,
                           std::vector<std::string>& out) {
  return ForEachObject(
      holder, "selectors", path,
      [&](const JsonValue& selector, const JsonPath& s_path) -> absl::Status {
        ASSIGN_OR_RETURN(const JsonValue* cel, RequireObject(selector, "cel", s_path));
        ASSIGN_OR_RETURN(absl::string_view expression,
                         RequireString(*cel, "expression", JsonPath(s_path, "cel")));
        out.emplace_back(expression);
        return absl::OkStatus();
      });
}

// Reads one way of asking for devices: deviceClassName (required), selectors, allocationMode
// and count.
absl::StatusOr<topology::DraRequest> ParseDeviceAsk(const JsonValue& holder, const JsonPath& path,
                                                    std::string name) {
  topology::DraRequest ask;
  ask.name = std::move(name);
  RETURN_IF_ERROR(ReadString(holder, "deviceClassName", path, ask.device_class, kRequired));
  RETURN_IF_ERROR(ReadSelectors(holder, path, ask.selectors));
  ASSIGN_OR_RETURN(absl::string_view mode, OptionalString(holder, "allocationMode", path));
  ask.all = mode == "All";
  ASSIGN_OR_RETURN(ask.count, OptionalInt64(holder, "count", path, 1));
  ASSIGN_OR_RETURN(const JsonValue* capacity, OptionalObject(holder, "capacity", path));
  if (capacity) {
    const JsonPath capacity_path(path, "capacity");
    ASSIGN_OR_RETURN(const JsonValue* requests,
                     OptionalObject(*capacity, "requests", capacity_path));
    if (requests) {
      ASSIGN_OR_RETURN(ask.capacity_requests,
                       ParseAmounts(*requests, JsonPath(capacity_path, "requests")));
    }
  }
  return ask;
}

// Adds the request's asks and device classes: `exactly` (v1, v1beta2), the flat v1beta1
// request, and each firstAvailable subrequest (all three versions). Each class is added once.
absl::Status ParseRequest(const JsonValue& request, const JsonPath& path, DraClaim& claim) {
  std::string request_name;
  RETURN_IF_ERROR(ReadString(request, "name", path, request_name));
  bool named = false;
  auto add = [&](const JsonValue& holder, const JsonPath& holder_path,
                 std::string name) -> absl::Status {
    ASSIGN_OR_RETURN(topology::DraRequest ask,
                     ParseDeviceAsk(holder, holder_path, std::move(name)));
    std::vector<std::string>& classes = claim.device_classes;
    if (std::find(classes.begin(), classes.end(), ask.device_class) == classes.end()) {
      classes.push_back(ask.device_class);
    }
    claim.requests.push_back(std::move(ask));
    named = true;
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(const JsonValue* exactly, OptionalObject(request, "exactly", path));
  if (exactly) RETURN_IF_ERROR(add(*exactly, JsonPath(path, "exactly"), request_name));
  if (FindNonNull(request, "deviceClassName")) RETURN_IF_ERROR(add(request, path, request_name));
  RETURN_IF_ERROR(ForEachObject(
      request, "firstAvailable", path,
      [&](const JsonValue& sub, const JsonPath& sub_path) -> absl::Status {
        std::string sub_name;
        RETURN_IF_ERROR(ReadString(sub, "name", sub_path, sub_name));
        RETURN_IF_ERROR(add(sub, sub_path, absl::StrCat(request_name, "/", sub_name)));
        claim.requests.back().alternative = true;
        return absl::OkStatus();
      }));
  if (!named) return Invalid(path, "expected exactly, firstAvailable or deviceClassName");
  return absl::OkStatus();
}

// The node of a node-local allocation: a single term whose matchFields has metadata.name In
// [x]. Several terms are alternatives (OR), so they name no single node.
absl::StatusOr<std::string> AllocatedNode(const JsonValue& selector, const JsonPath& path) {
  std::string node;
  ASSIGN_OR_RETURN(const JsonValue* terms, OptionalArray(selector, "nodeSelectorTerms", path));
  if (!terms || terms->Size() != 1) return node;
  const JsonPath terms_path(path, "nodeSelectorTerms");
  const JsonPath term_path(terms_path, 0);
  if (!(*terms)[0].IsObject()) return Invalid(term_path, "expected object");
  auto match = [&](const JsonValue& field, const JsonPath& f_path) -> absl::Status {
    ASSIGN_OR_RETURN(absl::string_view key, OptionalString(field, "key", f_path));
    ASSIGN_OR_RETURN(absl::string_view op, OptionalString(field, "operator", f_path));
    ASSIGN_OR_RETURN(const JsonValue* values, OptionalArray(field, "values", f_path));
    if (key != "metadata.name" || op != "In" || !values || values->Size() != 1) {
      return absl::OkStatus();
    }
    if (!(*values)[0].IsString()) return Invalid(JsonPath(f_path, "values[0]"), "expected string");
    node = std::string(AsStringView((*values)[0]));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(ForEachObject((*terms)[0], "matchFields", term_path, match));
  return node;
}

absl::Status ParseStatus(const JsonValue& status, const JsonPath& path, DraClaim& claim) {
  ASSIGN_OR_RETURN(const JsonValue* allocation, OptionalObject(status, "allocation", path));
  if (allocation) {
    claim.allocated = true;
    const JsonPath a_path(path, "allocation");
    ASSIGN_OR_RETURN(const JsonValue* devices, OptionalObject(*allocation, "devices", a_path));
    if (devices) {
      RETURN_IF_ERROR(ForEachObject(
          *devices, "results", JsonPath(a_path, "devices"),
          [&](const JsonValue& r, const JsonPath& r_path) -> absl::Status {
            topology::DraAllocationResult result;
            RETURN_IF_ERROR(ReadString(r, "request", r_path, result.request, kRequired));
            RETURN_IF_ERROR(ReadString(r, "driver", r_path, result.driver, kRequired));
            RETURN_IF_ERROR(ReadString(r, "pool", r_path, result.pool, kRequired));
            RETURN_IF_ERROR(ReadString(r, "device", r_path, result.device, kRequired));
            RETURN_IF_ERROR(ReadString(r, "shareID", r_path, result.share_id));
            ASSIGN_OR_RETURN(const JsonValue* consumed,
                             OptionalObject(r, "consumedCapacity", r_path));
            if (consumed) {
              ASSIGN_OR_RETURN(result.consumed_capacity,
                               ParseAmounts(*consumed, JsonPath(r_path, "consumedCapacity")));
            }
            claim.results.push_back(std::move(result));
            return absl::OkStatus();
          }));
    }
    ASSIGN_OR_RETURN(const JsonValue* selector,
                     OptionalObject(*allocation, "nodeSelector", a_path));
    if (selector) {
      ASSIGN_OR_RETURN(claim.allocated_node,
                       AllocatedNode(*selector, JsonPath(a_path, "nodeSelector")));
    }
  }
  return ForEachObject(
      status, "reservedFor", path, [&](const JsonValue& r, const JsonPath& r_path) -> absl::Status {
        topology::DraReservation reservation;
        RETURN_IF_ERROR(ReadString(r, "resource", r_path, reservation.resource));
        RETURN_IF_ERROR(ReadString(r, "name", r_path, reservation.name, kRequired));
        RETURN_IF_ERROR(ReadString(r, "uid", r_path, reservation.uid));
        claim.reserved_for.push_back(std::move(reservation));
        return absl::OkStatus();
      });
}

// A claim's spec (a template's spec.spec): its requests.
absl::Status ParseClaimSpec(const JsonValue& spec, const JsonPath& path, DraClaim& out) {
  ASSIGN_OR_RETURN(const JsonValue* devices, OptionalObject(spec, "devices", path));
  if (!devices) return absl::OkStatus();
  return ForEachObject(*devices, "requests", JsonPath(path, "devices"),
                       [&](const JsonValue& request, const JsonPath& r_path) {
                         return ParseRequest(request, r_path, out);
                       });
}

}  // namespace

absl::StatusOr<DraSlice> ParseResourceSlice(const JsonValue& slice, absl::string_view root) {
  const JsonPath path(root);
  RETURN_IF_ERROR(CheckTypeMeta(slice, "ResourceSlice", path));
  ASSIGN_OR_RETURN(Meta meta, ParseMeta(slice, path));
  DraSlice out;
  out.name = std::move(meta.name);
  const JsonPath spec_path(path, "spec");
  ASSIGN_OR_RETURN(const JsonValue* spec, RequireObject(slice, "spec", path));
  RETURN_IF_ERROR(ReadString(*spec, "driver", spec_path, out.driver, kRequired));
  RETURN_IF_ERROR(ReadString(*spec, "nodeName", spec_path, out.node));
  const JsonPath pool_path(spec_path, "pool");
  ASSIGN_OR_RETURN(const JsonValue* pool, RequireObject(*spec, "pool", spec_path));
  RETURN_IF_ERROR(ReadString(*pool, "name", pool_path, out.pool, kRequired));
  ASSIGN_OR_RETURN(out.generation, OptionalInt64(*pool, "generation", pool_path, 0));
  ASSIGN_OR_RETURN(out.resource_slice_count,
                   OptionalInt64(*pool, "resourceSliceCount", pool_path, 1));
  if (out.resource_slice_count < 1) {
    return Invalid(JsonPath(pool_path, "resourceSliceCount"), "must be at least 1");
  }
  RETURN_IF_ERROR(ForEachObject(*spec, "devices", spec_path,
                                [&](const JsonValue& device, const JsonPath& device_path) {
                                  return ParseDevice(device, device_path, out);
                                }));
  RETURN_IF_ERROR(ForEachObject(
      *spec, "sharedCounters", spec_path, [&](const JsonValue& item, const JsonPath& set_path) {
        topology::DraCounterSet& set = out.shared_counters.emplace_back();
        return ParseNamedCounters(item, set_path, "name", set.name, set.counters);
      }));
  return out;
}

absl::StatusOr<DraClaim> ParseResourceClaim(const JsonValue& claim, absl::string_view root) {
  const JsonPath path(root);
  RETURN_IF_ERROR(CheckTypeMeta(claim, "ResourceClaim", path));
  ASSIGN_OR_RETURN(Meta meta, ParseMeta(claim, path));
  DraClaim out;
  out.namespace_name = std::move(meta.namespace_name);
  out.name = std::move(meta.name);
  out.uid = std::move(meta.uid);
  if (meta.annotations) {
    std::string marker;
    const JsonPath meta_path(path, "metadata");
    RETURN_IF_ERROR(ReadString(*meta.annotations, kExtendedResourceClaimAnnotation,
                               JsonPath(meta_path, "annotations"), marker));
    out.extended_resource_claim = marker == "true";
  }
  ASSIGN_OR_RETURN(const JsonValue* spec, RequireObject(claim, "spec", path));
  RETURN_IF_ERROR(ParseClaimSpec(*spec, JsonPath(path, "spec"), out));
  ASSIGN_OR_RETURN(const JsonValue* status, OptionalObject(claim, "status", path));
  if (status) RETURN_IF_ERROR(ParseStatus(*status, JsonPath(path, "status"), out));
  return out;
}

absl::StatusOr<DraClaim> ParseResourceClaimTemplate(const JsonValue& claim_template,
                                                    absl::string_view root) {
  const JsonPath path(root);
  RETURN_IF_ERROR(CheckTypeMeta(claim_template, "ResourceClaimTemplate", path));
  ASSIGN_OR_RETURN(Meta meta, ParseMeta(claim_template, path));
  DraClaim out;
  out.namespace_name = std::move(meta.namespace_name);
  out.name = std::move(meta.name);
  const JsonPath spec_path(path, "spec");
  ASSIGN_OR_RETURN(const JsonValue* spec, RequireObject(claim_template, "spec", path));
  ASSIGN_OR_RETURN(const JsonValue* claim_spec, RequireObject(*spec, "spec", spec_path));
  RETURN_IF_ERROR(ParseClaimSpec(*claim_spec, JsonPath(spec_path, "spec"), out));
  return out;
}

absl::StatusOr<DraDeviceClass> ParseDeviceClass(const JsonValue& device_class,
                                                absl::string_view root) {
  const JsonPath path(root);
  RETURN_IF_ERROR(CheckTypeMeta(device_class, "DeviceClass", path));
  DraDeviceClass out;
  ASSIGN_OR_RETURN(const JsonValue* meta, RequireObject(device_class, "metadata", path));
  RETURN_IF_ERROR(ReadString(*meta, "name", JsonPath(path, "metadata"), out.name, kRequired));
  ASSIGN_OR_RETURN(const JsonValue* spec, OptionalObject(device_class, "spec", path));
  if (!spec) return out;
  const JsonPath spec_path(path, "spec");
  RETURN_IF_ERROR(ReadString(*spec, "extendedResourceName", spec_path, out.extended_resource_name));
  RETURN_IF_ERROR(ReadSelectors(*spec, spec_path, out.selectors));
  return out;
}

absl::StatusOr<DraObjects> ParseDraList(const JsonValue& list) {
  if (!list.IsObject()) return Invalid("list", "expected object");
  ASSIGN_OR_RETURN(absl::string_view list_kind, OptionalString(list, "kind", JsonPath("list")));
  // Items of a typed list may omit their kind: ResourceSliceList holds ResourceSlices.
  absl::string_view default_kind = absl::EndsWith(list_kind, "List") && list_kind != "List"
                                       ? absl::StripSuffix(list_kind, "List")
                                       : absl::string_view();
  if (!FindMember(list, "items")) return Invalid("items", "missing");
  DraObjects out;
  RETURN_IF_ERROR(ForEachObject(
      list, "items", JsonPath(""),
      [&](const JsonValue& item, const JsonPath& item_path) -> absl::Status {
        ASSIGN_OR_RETURN(absl::string_view kind, OptionalString(item, "kind", item_path));
        const std::string path = item_path.str();  // one per item of a relist
        if (kind.empty()) kind = default_kind;
        if (kind == "ResourceSlice") {
          ASSIGN_OR_RETURN(DraSlice slice, ParseResourceSlice(item, path));
          out.slices.push_back(std::move(slice));
        } else if (kind == "ResourceClaim") {
          ASSIGN_OR_RETURN(DraClaim claim, ParseResourceClaim(item, path));
          out.claims.push_back(std::move(claim));
        } else if (kind == "ResourceClaimTemplate") {
          ASSIGN_OR_RETURN(DraClaim claim_template, ParseResourceClaimTemplate(item, path));
          out.templates.push_back(std::move(claim_template));
        } else if (kind == "DeviceClass") {
          ASSIGN_OR_RETURN(DraDeviceClass device_class, ParseDeviceClass(item, path));
          out.classes.push_back(std::move(device_class));
        }
        return absl::OkStatus();
      }));
  return out;
}

}  // namespace wire
