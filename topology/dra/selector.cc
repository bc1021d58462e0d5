#include "topology/dra/selector.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cel/eval.h"
#include "cel/parse.h"
#include "cel/semver.h"
#include "topology/quantity.h"

namespace topology {

using cel::CelAst;
using cel::CelNode;
using cel::CelValue;
using cel::ParseCel;
using cel::Semver;

struct CompiledSelector::Program {
  std::string expression;
  CelAst ast;
};

namespace {

// "<domain>/<id>" as a key to look up in a map of qualified names without building it: a
// selector reads a device's attributes once per device and request, on the allocator's path.
struct QualifiedName {
  absl::string_view domain, id;
};

// <0, 0 or >0 as `key` sorts before, with or after the name, byte by byte as std::string does.
int CompareQualified(absl::string_view key, const QualifiedName& name) {
  for (absl::string_view part : {name.domain, absl::string_view("/"), name.id}) {
    const absl::string_view head = key.substr(0, part.size());
    if (int c = head.compare(part); c != 0) return c;
    if (head.size() < part.size()) return -1;
    key.remove_prefix(part.size());
  }
  return key.empty() ? 0 : 1;
}

bool operator<(const std::string& key, const QualifiedName& name) {
  return CompareQualified(key, name) < 0;
}
bool operator<(const QualifiedName& name, const std::string& key) {
  return CompareQualified(key, name) > 0;
}

// The selector dialect's names: one device. device.attributes and device.capacity are maps
// of domains, each domain a map of the device's names in it; both are read from the device
// when selected, never built.
class DeviceHost : public cel::CelHost {
 public:
  explicit DeviceHost(const DraDevice& device) : device_(device) {}

  CelValue DeviceField(CelNode::Kind field) const override {
    switch (field) {
      case CelNode::Kind::kDriver:
        return CelValue::String(device_.driver);
      case CelNode::Kind::kMultiAlloc:
        return CelValue::Bool(device_.allow_multiple_allocations);
      case CelNode::Kind::kAttributes:
        return CelValue::Object(&device_, kAttributeDomains);
      case CelNode::Kind::kCapacity:
        return CelValue::Object(&device_, kCapacityDomains);
      default:
        return CelValue::Error("unknown device field");
    }
  }

  // map.id / map["id"].
  CelValue Select(const CelValue& map, absl::string_view id) const override {
    // An unknown domain is an empty map, as in kube-scheduler's DRA environment.
    if (map.tag == kAttributeDomains)
      return CelValue::Object(&device_, kAttributeDomain, std::string(id));
    if (map.tag == kCapacityDomains)
      return CelValue::Object(&device_, kCapacityDomain, std::string(id));
    if (map.tag == kCapacityDomain) {
      auto it = FindKey(device_.capacity, map.text, id);
      if (it == device_.capacity.end()) return CelValue::Error(absl::StrCat("no such key: ", id));
      return CelValue::Quantity(it->second.milli());
    }
    auto it = FindKey(device_.attributes, map.text, id);
    if (it == device_.attributes.end()) return CelValue::Error(absl::StrCat("no such key: ", id));
    const DraAttribute& a = it->second;
    switch (a.kind) {
      case DraAttribute::Kind::kString:
        return CelValue::String(a.text);
      case DraAttribute::Kind::kInt:
        return CelValue::Int(a.number);
      case DraAttribute::Kind::kBool:
        return CelValue::Bool(a.flag);
      case DraAttribute::Kind::kVersion: {
        std::optional<Semver> parsed = Semver::Parse(a.text);
        if (!parsed) {
          return CelValue::Error(absl::StrCat("attribute ", id, " is not semver: ", a.text));
        }
        return CelValue::Version(std::move(*parsed));
      }
    }
    return CelValue::Error("no such overload");
  }

  // `key in map` and has(map.key).
  bool Has(const CelValue& map, absl::string_view key) const override {
    switch (map.tag) {
      case kAttributeDomains:
        return HasDomain(device_.attributes, key);
      case kCapacityDomains:
        return HasDomain(device_.capacity, key);
      case kAttributeDomain:
        return FindKey(device_.attributes, map.text, key) != device_.attributes.end();
      default:
        return FindKey(device_.capacity, map.text, key) != device_.capacity.end();
    }
  }

  int64_t Size(const CelValue& map) const override {
    switch (map.tag) {
      case kAttributeDomains:
        return DomainCount(device_.attributes);
      case kCapacityDomains:
        return DomainCount(device_.capacity);
      case kAttributeDomain:
        return DomainSize(device_.attributes, map.text);
      default:
        return DomainSize(device_.capacity, map.text);
    }
  }

  // quantity() and isQuantity(): Kubernetes quantities are the model's.
  std::optional<CelValue> CallFunction(absl::string_view f,
                                       const std::vector<CelValue>& args) const override {
    if (f != "quantity" && f != "isQuantity") return std::nullopt;
    if (args.size() != 1 || args[0].type != CelValue::Type::kString) {
      return CelValue::Error("no such overload");
    }
    absl::StatusOr<Quantity> q = Quantity::Parse(args[0].text);
    if (f == "isQuantity") return CelValue::Bool(q.ok());
    if (!q.ok()) return CelValue::Error(absl::StrCat("invalid quantity: ", args[0].text));
    return CelValue::Quantity(q->milli());
  }

 private:
  // The maps a selector reaches, as the tags of their kObject values.
  enum Tag { kAttributeDomains, kCapacityDomains, kAttributeDomain, kCapacityDomain };

  // The domain of a qualified name "<domain>/<id>"; a bare name belongs to the driver.
  absl::string_view DomainOf(absl::string_view key) const {
    const size_t slash = key.find('/');
    return slash == absl::string_view::npos ? absl::string_view(device_.driver)
                                            : key.substr(0, slash);
  }

  template <typename Map>
  typename Map::const_iterator FindKey(const Map& map, const std::string& domain,
                                       absl::string_view id) const {
    auto it = map.find(QualifiedName{domain, id});
    if (it == map.end() && domain == device_.driver && id.find('/') == absl::string_view::npos) {
      it = map.find(id);
    }
    return it;
  }

  template <typename Map>
  bool HasDomain(const Map& map, absl::string_view domain) const {
    for (const auto& entry : map) {
      if (DomainOf(entry.first) == domain) return true;
    }
    return false;
  }

  template <typename Map>
  int64_t DomainSize(const Map& map, absl::string_view domain) const {
    int64_t count = 0;
    for (const auto& entry : map) count += DomainOf(entry.first) == domain ? 1 : 0;
    return count;
  }

  template <typename Map>
  int64_t DomainCount(const Map& map) const {
    std::vector<absl::string_view> seen;
    for (const auto& entry : map) {
      absl::string_view d = DomainOf(entry.first);
      if (std::find(seen.begin(), seen.end(), d) == seen.end()) seen.push_back(d);
    }
    return static_cast<int64_t>(seen.size());
  }

  const DraDevice& device_;
};

}  // namespace

CompiledSelector::CompiledSelector(std::shared_ptr<const Program> program)
    : program_(std::move(program)) {}

CompiledSelector CompiledSelector::Compile(std::string_view expression) {
  auto program = std::make_shared<Program>();
  program->expression = std::string(expression);
  if (expression.size() > kMaxSelectorBytes) {
    program->ast.unsupported =
        absl::StrCat("expression of ", expression.size(), " bytes is over the ", kMaxSelectorBytes,
                     "-byte limit");
  } else {
    program->ast = ParseCel(absl::string_view(expression.data(), expression.size()));
  }
  return CompiledSelector(std::move(program));
}

bool CompiledSelector::supported() const { return program_->ast.unsupported.empty(); }
const std::string& CompiledSelector::expression() const { return program_->expression; }
const std::string& CompiledSelector::unsupported_reason() const {
  return program_->ast.unsupported;
}

SelectorResult CompiledSelector::Evaluate(const DraDevice& device) const {
  if (!supported()) return {SelectorOutcome::kNotEvaluated, program_->ast.unsupported};
  CelValue v = cel::Evaluate(program_->ast, DeviceHost(device));
  if (v.is_error()) return {SelectorOutcome::kError, std::move(v.text)};
  if (v.type != CelValue::Type::kBool) {
    return {SelectorOutcome::kError,
            absl::StrCat("selector evaluated to a ", cel::CelTypeName(v.type), ", not a bool")};
  }
  return {v.flag ? SelectorOutcome::kMatch : SelectorOutcome::kNoMatch, ""};
}

SelectorResult EvaluateSelector(std::string_view expression, const DraDevice& device) {
  return CompiledSelector::Compile(expression).Evaluate(device);
}

std::vector<CompiledSelector> CompileSelectors(const std::vector<std::string>& expressions) {
  std::vector<CompiledSelector> out;
  out.reserve(expressions.size());
  for (const std::string& e : expressions) out.push_back(CompiledSelector::Compile(e));
  return out;
}

SelectorResult DeviceMatchesCompiled(const DraDevice& device,
                                     const std::vector<CompiledSelector>& selectors) {
  for (const CompiledSelector& s : selectors) {
    SelectorResult r = s.Evaluate(device);
    if (r.outcome != SelectorOutcome::kMatch) return r;
  }
  return {SelectorOutcome::kMatch, ""};
}

SelectorResult DeviceMatches(const DraDevice& device, const DraDeviceClass* device_class,
                             const std::vector<std::string>& request_selectors) {
  if (device_class == nullptr) return {SelectorOutcome::kNotEvaluated, "device class not found"};
  for (const std::vector<std::string>* list : {&device_class->selectors, &request_selectors}) {
    for (const std::string& e : *list) {
      SelectorResult r = EvaluateSelector(e, device);
      if (r.outcome != SelectorOutcome::kMatch) return r;
    }
  }
  return {SelectorOutcome::kMatch, ""};
}

}  // namespace topology
