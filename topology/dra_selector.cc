#include "topology/dra_selector.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cel/parse.h"
#include "cel/semver.h"
#include "topology/quantity.h"

namespace topology {

using cel::CelAst;
using cel::CelCompareOp;
using cel::CelNode;
using cel::ParseCel;
using cel::Semver;

struct CompiledSelector::Program {
  std::string expression;
  CelAst ast;
};

namespace {

// One CEL value during evaluation. Maps are views of the device: kDomains is
// device.attributes or device.capacity, kDomain one domain of it.
struct Value {
  enum class Type { kError, kBool, kInt, kString, kQuantity, kVersion, kList, kDomains, kDomain };
  Type type = Type::kError;
  bool flag = false;
  int64_t number = 0;
  std::string text;  // kString; kError's message; kDomain's domain
  Quantity quantity;
  Semver version;
  std::vector<Value> list;
  bool capacity = false;  // kDomains, kDomain: capacity rather than attributes

  static Value Error(std::string message) {
    Value v;
    v.text = std::move(message);
    return v;
  }
  static Value Bool(bool b) {
    Value v;
    v.type = Type::kBool;
    v.flag = b;
    return v;
  }
  static Value Int(int64_t n) {
    Value v;
    v.type = Type::kInt;
    v.number = n;
    return v;
  }
  static Value String(std::string s) {
    Value v;
    v.type = Type::kString;
    v.text = std::move(s);
    return v;
  }
  bool is_error() const { return type == Type::kError; }
};

Value NoOverload() { return Value::Error("no such overload"); }

const char* TypeName(Value::Type type) {
  switch (type) {
    case Value::Type::kError:
      return "error";
    case Value::Type::kBool:
      return "bool";
    case Value::Type::kInt:
      return "int";
    case Value::Type::kString:
      return "string";
    case Value::Type::kQuantity:
      return "quantity";
    case Value::Type::kVersion:
      return "semver";
    case Value::Type::kList:
      return "list";
    case Value::Type::kDomains:
    case Value::Type::kDomain:
      return "map";
  }
  return "?";
}

// CEL's size() of a string counts code points, not bytes.
int64_t CodePoints(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

class Evaluator {
 public:
  Evaluator(const CelAst& ast, const DraDevice& device) : ast_(ast), device_(device) {}

  Value Eval(int index) const {
    const CelNode& n = ast_.nodes[index];
    switch (n.kind) {
      case CelNode::Kind::kBool:
        return Value::Bool(n.flag);
      case CelNode::Kind::kInt:
        return Value::Int(n.number);
      case CelNode::Kind::kString:
        return Value::String(n.text);
      case CelNode::Kind::kList: {
        Value v;
        v.type = Value::Type::kList;
        for (int arg : n.args) {
          Value element = Eval(arg);
          if (element.is_error()) return element;
          v.list.push_back(std::move(element));
        }
        return v;
      }
      case CelNode::Kind::kDriver:
        return Value::String(device_.driver);
      case CelNode::Kind::kMultiAlloc:
        return Value::Bool(device_.allow_multiple_allocations);
      case CelNode::Kind::kAttributes:
      case CelNode::Kind::kCapacity: {
        Value v;
        v.type = Value::Type::kDomains;
        v.capacity = n.kind == CelNode::Kind::kCapacity;
        return v;
      }
      case CelNode::Kind::kSelect: {
        Value target = Eval(n.args[0]);
        if (target.is_error()) return target;
        return Lookup(target, n.text);
      }
      case CelNode::Kind::kIndex: {
        Value target = Eval(n.args[0]);
        if (target.is_error()) return target;
        Value key = Eval(n.args[1]);
        if (key.is_error()) return key;
        if (target.type == Value::Type::kList) {
          if (key.type != Value::Type::kInt) return NoOverload();
          if (key.number < 0 || static_cast<size_t>(key.number) >= target.list.size()) {
            return Value::Error(absl::StrCat("index out of range: ", key.number));
          }
          return std::move(target.list[key.number]);
        }
        if (key.type != Value::Type::kString) return NoOverload();
        return Lookup(target, key.text);
      }
      case CelNode::Kind::kHas: {
        Value target = Eval(n.args[0]);
        if (target.is_error()) return target;
        return Contains(target, n.text);
      }
      case CelNode::Kind::kIn: {
        Value element = Eval(n.args[0]);
        if (element.is_error()) return element;
        Value container = Eval(n.args[1]);
        if (container.is_error()) return container;
        if (container.type == Value::Type::kList) {
          for (const Value& item : container.list) {
            if (Equal(element, item)) return Value::Bool(true);
          }
          return Value::Bool(false);
        }
        if (element.type != Value::Type::kString) return NoOverload();
        return Contains(container, element.text);
      }
      case CelNode::Kind::kNot: {
        Value operand = Eval(n.args[0]);
        if (operand.is_error()) return operand;
        if (operand.type != Value::Type::kBool) return NoOverload();
        return Value::Bool(!operand.flag);
      }
      case CelNode::Kind::kNeg: {
        Value operand = Eval(n.args[0]);
        if (operand.is_error()) return operand;
        if (operand.type != Value::Type::kInt) return NoOverload();
        if (operand.number == INT64_MIN) return Value::Error("int overflow");
        return Value::Int(-operand.number);
      }
      case CelNode::Kind::kAnd:
      case CelNode::Kind::kOr:
        return Logical(n, /*is_or=*/n.kind == CelNode::Kind::kOr);
      case CelNode::Kind::kTernary: {
        Value cond = Eval(n.args[0]);
        if (cond.is_error()) return cond;
        if (cond.type != Value::Type::kBool) return NoOverload();
        return Eval(n.args[cond.flag ? 1 : 2]);
      }
      case CelNode::Kind::kCompare: {
        Value a = Eval(n.args[0]);
        if (a.is_error()) return a;
        Value b = Eval(n.args[1]);
        if (b.is_error()) return b;
        return Compare(n.op, a, b);
      }
      case CelNode::Kind::kCall:
        return Call(n);
      case CelNode::Kind::kVariable:  // the parser replaces these; never reached
      case CelNode::Kind::kIdent:     // the plain-data dialect's; never parsed for selectors
      case CelNode::Kind::kNull:
      case CelNode::Kind::kComprehension:
        break;
    }
    return Value::Error("unknown node");
  }

 private:
  // CEL's commutative && and ||: a deciding operand (false for &&, true for ||) wins over
  // errors on either side; otherwise the first error is the result.
  Value Logical(const CelNode& n, bool is_or) const {
    std::optional<Value> error;
    for (int arg : n.args) {
      Value v = Eval(arg);
      if (v.type == Value::Type::kBool) {
        if (v.flag == is_or) return v;
        continue;
      }
      if (!error) error = v.is_error() ? std::move(v) : NoOverload();
    }
    if (error) return std::move(*error);
    return Value::Bool(!is_or);
  }

  // The domain of a qualified name "<domain>/<id>"; a bare name belongs to the driver.
  std::string_view DomainOf(std::string_view key) const {
    const size_t slash = key.find('/');
    return slash == std::string_view::npos ? std::string_view(device_.driver)
                                           : key.substr(0, slash);
  }

  template <typename Map>
  auto FindKey(const Map& map, const std::string& domain, std::string_view id) const {
    auto it = map.find(absl::StrCat(domain, "/", absl::string_view(id.data(), id.size())));
    if (it == map.end() && domain == device_.driver && id.find('/') == std::string_view::npos) {
      it = map.find(id);
    }
    return it;
  }

  template <typename Map>
  bool HasDomain(const Map& map, std::string_view domain) const {
    for (const auto& [key, unused] : map) {
      if (DomainOf(key) == domain) return true;
    }
    return false;
  }

  template <typename Map>
  int64_t DomainSize(const Map& map, std::string_view domain) const {
    int64_t count = 0;
    for (const auto& [key, unused] : map) count += DomainOf(key) == domain ? 1 : 0;
    return count;
  }

  template <typename Map>
  int64_t DomainCount(const Map& map) const {
    std::vector<std::string_view> seen;
    for (const auto& [key, unused] : map) {
      std::string_view d = DomainOf(key);
      if (std::find(seen.begin(), seen.end(), d) == seen.end()) seen.push_back(d);
    }
    return static_cast<int64_t>(seen.size());
  }

  // map.id / map["id"].
  Value Lookup(const Value& map, const std::string& id) const {
    if (map.type == Value::Type::kDomains) {
      // An unknown domain is an empty map, as in kube-scheduler's DRA environment.
      Value v;
      v.type = Value::Type::kDomain;
      v.capacity = map.capacity;
      v.text = id;
      return v;
    }
    if (map.type != Value::Type::kDomain) {
      return Value::Error(
          absl::StrCat("type '", TypeName(map.type), "' does not support field selection"));
    }
    if (map.capacity) {
      auto it = FindKey(device_.capacity, map.text, id);
      if (it == device_.capacity.end()) return Value::Error(absl::StrCat("no such key: ", id));
      Value v;
      v.type = Value::Type::kQuantity;
      v.quantity = it->second;
      return v;
    }
    auto it = FindKey(device_.attributes, map.text, id);
    if (it == device_.attributes.end()) return Value::Error(absl::StrCat("no such key: ", id));
    const DraAttribute& a = it->second;
    switch (a.kind) {
      case DraAttribute::Kind::kString:
        return Value::String(a.text);
      case DraAttribute::Kind::kInt:
        return Value::Int(a.number);
      case DraAttribute::Kind::kBool:
        return Value::Bool(a.flag);
      case DraAttribute::Kind::kVersion: {
        std::optional<Semver> parsed = Semver::Parse(a.text);
        if (!parsed)
          return Value::Error(absl::StrCat("attribute ", id, " is not semver: ", a.text));
        Value v;
        v.type = Value::Type::kVersion;
        v.version = std::move(*parsed);
        return v;
      }
    }
    return NoOverload();
  }

  // `key in map` and has(map.key).
  Value Contains(const Value& map, const std::string& key) const {
    if (map.type == Value::Type::kDomains) {
      return Value::Bool(map.capacity ? HasDomain(device_.capacity, key)
                                      : HasDomain(device_.attributes, key));
    }
    if (map.type != Value::Type::kDomain) return NoOverload();
    return Value::Bool(
        map.capacity ? FindKey(device_.capacity, map.text, key) != device_.capacity.end()
                     : FindKey(device_.attributes, map.text, key) != device_.attributes.end());
  }

  // CEL equality: values of different types are not equal.
  static bool Equal(const Value& a, const Value& b) {
    if (a.type != b.type) return false;
    switch (a.type) {
      case Value::Type::kBool:
        return a.flag == b.flag;
      case Value::Type::kInt:
        return a.number == b.number;
      case Value::Type::kString:
        return a.text == b.text;
      case Value::Type::kQuantity:
        return a.quantity == b.quantity;
      case Value::Type::kVersion:
        return Semver::Compare(a.version, b.version) == 0;
      case Value::Type::kList:
        return a.list.size() == b.list.size() &&
               std::equal(a.list.begin(), a.list.end(), b.list.begin(), Equal);
      case Value::Type::kDomains:
      case Value::Type::kDomain:
        return a.capacity == b.capacity && a.text == b.text;
      case Value::Type::kError:
        return false;
    }
    return false;
  }

  static Value Compare(CelCompareOp op, const Value& a, const Value& b) {
    if (op == CelCompareOp::kEq) return Value::Bool(Equal(a, b));
    if (op == CelCompareOp::kNe) return Value::Bool(!Equal(a, b));
    if (a.type != b.type) return NoOverload();
    int c = 0;
    switch (a.type) {
      case Value::Type::kInt:
        c = a.number < b.number ? -1 : (a.number > b.number ? 1 : 0);
        break;
      case Value::Type::kString:
        c = a.text.compare(b.text);
        break;
      case Value::Type::kBool:
        c = static_cast<int>(a.flag) - static_cast<int>(b.flag);
        break;
      default:
        return NoOverload();  // quantities and versions order through compareTo
    }
    switch (op) {
      case CelCompareOp::kLt:
        return Value::Bool(c < 0);
      case CelCompareOp::kLe:
        return Value::Bool(c <= 0);
      case CelCompareOp::kGt:
        return Value::Bool(c > 0);
      case CelCompareOp::kGe:
        return Value::Bool(c >= 0);
      default:
        return NoOverload();
    }
  }

  Value Size(const Value& v) const {
    switch (v.type) {
      case Value::Type::kString:
        return Value::Int(CodePoints(v.text));
      case Value::Type::kList:
        return Value::Int(static_cast<int64_t>(v.list.size()));
      case Value::Type::kDomain:
        return Value::Int(v.capacity ? DomainSize(device_.capacity, v.text)
                                     : DomainSize(device_.attributes, v.text));
      case Value::Type::kDomains:
        return Value::Int(v.capacity ? DomainCount(device_.capacity)
                                     : DomainCount(device_.attributes));
      default:
        return NoOverload();
    }
  }

  Value Call(const CelNode& n) const {
    std::vector<Value> args;
    args.reserve(n.args.size());
    for (int arg : n.args) {
      args.push_back(Eval(arg));
      if (args.back().is_error()) return std::move(args.back());
    }
    const std::string& f = n.text;
    if (!n.method) {  // quantity, semver, isQuantity, isSemver, size: one argument each
      const Value& a = args[0];
      if (f == "size") return Size(a);
      if (a.type != Value::Type::kString) return NoOverload();
      if (f == "quantity" || f == "isQuantity") {
        absl::StatusOr<Quantity> q = Quantity::Parse(a.text);
        if (f == "isQuantity") return Value::Bool(q.ok());
        if (!q.ok()) return Value::Error(absl::StrCat("invalid quantity: ", a.text));
        Value v;
        v.type = Value::Type::kQuantity;
        v.quantity = *q;
        return v;
      }
      std::optional<Semver> s = Semver::Parse(a.text);
      if (f == "isSemver") return Value::Bool(s.has_value());
      if (!s) return Value::Error(absl::StrCat("invalid semver: ", a.text));
      Value v;
      v.type = Value::Type::kVersion;
      v.version = std::move(*s);
      return v;
    }
    const Value& self = args[0];
    if (f == "size") return Size(self);
    if (f == "compareTo" || f == "isGreaterThan" || f == "isLessThan") {
      const Value& other = args[1];
      int c = 0;
      if (self.type == Value::Type::kQuantity && other.type == Value::Type::kQuantity) {
        c = self.quantity < other.quantity ? -1 : (self.quantity > other.quantity ? 1 : 0);
      } else if (self.type == Value::Type::kVersion && other.type == Value::Type::kVersion) {
        c = Semver::Compare(self.version, other.version);
      } else {
        return NoOverload();
      }
      if (f == "compareTo") return Value::Int(c);
      return Value::Bool(f == "isGreaterThan" ? c > 0 : c < 0);
    }
    if (f == "major" || f == "minor" || f == "patch") {
      if (self.type != Value::Type::kVersion) return NoOverload();
      const uint64_t part = f == "major"   ? self.version.major
                            : f == "minor" ? self.version.minor
                                           : self.version.patch;
      if (part > static_cast<uint64_t>(INT64_MAX)) return Value::Error("int overflow");
      return Value::Int(static_cast<int64_t>(part));
    }
    if (self.type != Value::Type::kString) return NoOverload();
    if (f == "lowerAscii") return Value::String(absl::AsciiStrToLower(self.text));
    if (f == "upperAscii") return Value::String(absl::AsciiStrToUpper(self.text));
    const Value& other = args[1];
    if (other.type != Value::Type::kString) return NoOverload();
    if (f == "startsWith") return Value::Bool(absl::StartsWith(self.text, other.text));
    if (f == "endsWith") return Value::Bool(absl::EndsWith(self.text, other.text));
    if (f == "contains") return Value::Bool(absl::StrContains(self.text, other.text));
    return NoOverload();
  }

  const CelAst& ast_;
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
  Value v = Evaluator(program_->ast, device).Eval(program_->ast.root);
  if (v.is_error()) return {SelectorOutcome::kError, std::move(v.text)};
  if (v.type != Value::Type::kBool) {
    return {SelectorOutcome::kError,
            absl::StrCat("selector evaluated to a ", TypeName(v.type), ", not a bool")};
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
