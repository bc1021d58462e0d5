#include "cel/eval.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cel/data.h"

namespace cel {

CelValue CelValue::Error(std::string message) {
  CelValue v;
  v.text = std::move(message);
  return v;
}

CelValue CelValue::Null() {
  CelValue v;
  v.type = Type::kNull;
  return v;
}

CelValue CelValue::Bool(bool b) {
  CelValue v;
  v.type = Type::kBool;
  v.flag = b;
  return v;
}

CelValue CelValue::Int(int64_t n) {
  CelValue v;
  v.type = Type::kInt;
  v.number = n;
  return v;
}

CelValue CelValue::String(std::string s) {
  CelValue v;
  v.type = Type::kString;
  v.text = std::move(s);
  return v;
}

CelValue CelValue::Quantity(int64_t milli) {
  CelValue v;
  v.type = Type::kQuantity;
  v.number = milli;
  return v;
}

CelValue CelValue::Version(Semver version) {
  CelValue v;
  v.type = Type::kVersion;
  v.version = std::make_shared<const Semver>(std::move(version));
  return v;
}

CelValue CelValue::Object(const void* object, int tag, std::string key) {
  CelValue v;
  v.type = Type::kObject;
  v.object = object;
  v.tag = tag;
  v.text = std::move(key);
  return v;
}

CelValue CelValue::Of(const CelData& d) {
  switch (d.type) {
    case CelData::Type::kNull:
      return Null();
    case CelData::Type::kBool:
      return Bool(d.flag);
    case CelData::Type::kInt:
      return Int(d.number);
    case CelData::Type::kString:
      return String(d.text);
    case CelData::Type::kList:
    case CelData::Type::kMap: {
      CelValue v;
      v.type = d.type == CelData::Type::kList ? Type::kList : Type::kMap;
      v.data = &d;
      return v;
    }
  }
  return Null();
}

const char* CelTypeName(CelValue::Type type) {
  switch (type) {
    case CelValue::Type::kError:
      return "error";
    case CelValue::Type::kNull:
      return "null_type";
    case CelValue::Type::kBool:
      return "bool";
    case CelValue::Type::kInt:
      return "int";
    case CelValue::Type::kString:
      return "string";
    case CelValue::Type::kQuantity:
      return "quantity";
    case CelValue::Type::kVersion:
      return "semver";
    case CelValue::Type::kList:
      return "list";
    case CelValue::Type::kMap:
    case CelValue::Type::kObject:
      return "map";
  }
  return "?";
}

CelValue CelHost::Variable(absl::string_view) const { return CelValue::Null(); }

CelValue CelHost::DeviceField(CelNode::Kind) const {
  return CelValue::Error("no device in this expression");
}

CelValue CelHost::Select(const CelValue&, absl::string_view key) const {
  return CelValue::Error(absl::StrCat("no such key: ", key));
}

bool CelHost::Has(const CelValue&, absl::string_view) const { return false; }

int64_t CelHost::Size(const CelValue&) const { return 0; }

std::optional<CelValue> CelHost::CallFunction(absl::string_view,
                                              const std::vector<CelValue>&) const {
  return std::nullopt;
}

namespace {

using Type = CelValue::Type;

CelValue NoOverload() { return CelValue::Error("no such overload"); }

int64_t CodePoints(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

size_t ListSize(const CelValue& v) { return v.data ? v.data->list.size() : v.items.size(); }

CelValue ListItem(const CelValue& v, size_t i) {
  return v.data ? CelValue::Of(v.data->list[i]) : v.items[i];
}

bool DataEqual(const CelData& a, const CelData& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case CelData::Type::kNull:
      return true;
    case CelData::Type::kBool:
      return a.flag == b.flag;
    case CelData::Type::kInt:
      return a.number == b.number;
    case CelData::Type::kString:
      return a.text == b.text;
    case CelData::Type::kList:
      return a.list.size() == b.list.size() &&
             std::equal(a.list.begin(), a.list.end(), b.list.begin(), DataEqual);
    case CelData::Type::kMap:
      if (a.map.size() != b.map.size()) return false;
      for (const auto& [key, value] : a.map) {
        const CelData* other = b.Find(key);
        if (!other || !DataEqual(value, *other)) return false;
      }
      return true;
  }
  return false;
}

// CEL equality: values of different types are not equal (cel-go's heterogeneous equality).
bool Equal(const CelValue& a, const CelValue& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case Type::kNull:
      return true;
    case Type::kBool:
      return a.flag == b.flag;
    case Type::kInt:
    case Type::kQuantity:
      return a.number == b.number;
    case Type::kString:
      return a.text == b.text;
    case Type::kVersion:
      return Semver::Compare(*a.version, *b.version) == 0;
    case Type::kList:
      if (ListSize(a) != ListSize(b)) return false;
      for (size_t i = 0; i < ListSize(a); ++i) {
        if (!Equal(ListItem(a, i), ListItem(b, i))) return false;
      }
      return true;
    case Type::kMap:
      return DataEqual(*a.data, *b.data);
    case Type::kObject:
      return a.object == b.object && a.tag == b.tag && a.text == b.text;
    case Type::kError:
      return false;
  }
  return false;
}

class Evaluator {
 public:
  Evaluator(const CelAst& ast, const CelHost& host) : ast_(ast), host_(host) {}

  CelValue Eval(int index) {
    const CelNode& n = ast_.nodes[index];
    switch (n.kind) {
      case CelNode::Kind::kBool:
        return CelValue::Bool(n.flag);
      case CelNode::Kind::kInt:
        return CelValue::Int(n.number);
      case CelNode::Kind::kString:
        return CelValue::String(n.text);
      case CelNode::Kind::kNull:
        return CelValue::Null();
      case CelNode::Kind::kList: {
        CelValue v;
        v.type = Type::kList;
        for (int arg : n.args) {
          CelValue element = Eval(arg);
          if (element.is_error()) return element;
          v.items.push_back(std::move(element));
        }
        return v;
      }
      case CelNode::Kind::kIdent:
        return Variable(n.text);
      case CelNode::Kind::kDriver:
      case CelNode::Kind::kMultiAlloc:
      case CelNode::Kind::kAttributes:
      case CelNode::Kind::kCapacity:
        return host_.DeviceField(n.kind);
      case CelNode::Kind::kSelect: {
        CelValue target = Eval(n.args[0]);
        if (target.is_error()) return target;
        return Lookup(target, n.text);
      }
      case CelNode::Kind::kIndex:
        return Index(n);
      case CelNode::Kind::kHas: {
        CelValue target = Eval(n.args[0]);
        if (target.is_error()) return target;
        // cel-go (interpreter/attributes.go, refQualify) since v0.17: on a list the field
        // is an index of the wrong type, an error; on a scalar or null the field is simply
        // absent (unless the host enables ErrorOnBadPresenceTest, which Kubernetes does not).
        if (target.type == Type::kList) return CelValue::Error("unsupported index type");
        return CelValue::Bool(HasKey(target, n.text));
      }
      case CelNode::Kind::kIn: {
        CelValue element = Eval(n.args[0]);
        if (element.is_error()) return element;
        CelValue container = Eval(n.args[1]);
        if (container.is_error()) return container;
        if (container.type == Type::kList) {
          for (size_t i = 0; i < ListSize(container); ++i) {
            if (Equal(element, ListItem(container, i))) return CelValue::Bool(true);
          }
          return CelValue::Bool(false);
        }
        if (container.type != Type::kMap && container.type != Type::kObject) return NoOverload();
        if (element.type != Type::kString) return CelValue::Bool(false);
        return CelValue::Bool(HasKey(container, element.text));
      }
      case CelNode::Kind::kNot: {
        CelValue operand = Eval(n.args[0]);
        if (operand.is_error()) return operand;
        if (operand.type != Type::kBool) return NoOverload();
        return CelValue::Bool(!operand.flag);
      }
      case CelNode::Kind::kNeg: {
        CelValue operand = Eval(n.args[0]);
        if (operand.is_error()) return operand;
        if (operand.type != Type::kInt) return NoOverload();
        if (operand.number == INT64_MIN) return CelValue::Error("int overflow");
        return CelValue::Int(-operand.number);
      }
      case CelNode::Kind::kAnd:
      case CelNode::Kind::kOr:
        return Logical(n, /*is_or=*/n.kind == CelNode::Kind::kOr);
      case CelNode::Kind::kTernary: {
        CelValue cond = Eval(n.args[0]);
        if (cond.is_error()) return cond;
        if (cond.type != Type::kBool) return NoOverload();
        return Eval(n.args[cond.flag ? 1 : 2]);
      }
      case CelNode::Kind::kCompare: {
        CelValue a = Eval(n.args[0]);
        if (a.is_error()) return a;
        CelValue b = Eval(n.args[1]);
        if (b.is_error()) return b;
        return Compare(n.op, a, b);
      }
      case CelNode::Kind::kComprehension:
        return Comprehension(n);
      case CelNode::Kind::kCall:
        return Call(n);
      case CelNode::Kind::kVariable:  // the parser replaces these; never reached
        break;
    }
    return CelValue::Error("unknown node");
  }

 private:
  CelValue Variable(const std::string& name) const {
    // The innermost macro variable of that name first.
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it) {
      if (it->first == name) return it->second;
    }
    return host_.Variable(name);
  }

  CelValue Lookup(const CelValue& map, absl::string_view key) const {
    if (map.type == Type::kObject) return host_.Select(map, key);
    if (map.type == Type::kList) return CelValue::Error("unsupported index type");
    // cel-go's refQualify: a scalar or null has no keys.
    const CelData* found =
        map.type == Type::kMap ? map.data->Find(std::string_view(key.data(), key.size())) : nullptr;
    if (!found) return CelValue::Error(absl::StrCat("no such key: ", key));
    return CelValue::Of(*found);
  }

  bool HasKey(const CelValue& map, absl::string_view key) const {
    if (map.type == Type::kObject) return host_.Has(map, key);
    return map.type == Type::kMap &&
           map.data->Find(std::string_view(key.data(), key.size())) != nullptr;
  }

  CelValue Index(const CelNode& n) {
    CelValue target = Eval(n.args[0]);
    if (target.is_error()) return target;
    CelValue key = Eval(n.args[1]);
    if (key.is_error()) return key;
    if (target.type == Type::kList) {
      if (key.type != Type::kInt) return NoOverload();
      if (key.number < 0 || static_cast<size_t>(key.number) >= ListSize(target)) {
        return CelValue::Error(absl::StrCat("index out of range: ", key.number));
      }
      return ListItem(target, static_cast<size_t>(key.number));
    }
    if (key.type != Type::kString) return NoOverload();
    return Lookup(target, key.text);
  }

  // CEL's commutative && and ||: a deciding operand (false for &&, true for ||) wins over
  // errors on either side; otherwise the first error is the result.
  CelValue Logical(const CelNode& n, bool is_or) {
    std::optional<CelValue> error;
    for (int arg : n.args) {
      CelValue v = Eval(arg);
      if (v.type == Type::kBool) {
        if (v.flag == is_or) return v;
        continue;
      }
      if (!error) error = v.is_error() ? std::move(v) : NoOverload();
    }
    if (error) return std::move(*error);
    return CelValue::Bool(!is_or);
  }

  // exists: any true wins, else the first error, else false; all: any false wins, else the
  // first error, else true (cel-go's expansion with its error-absorbing || and &&).
  CelValue Comprehension(const CelNode& n) {
    CelValue range = Eval(n.args[0]);
    if (range.is_error()) return range;
    std::vector<CelValue> elements;
    if (range.type == Type::kList) {
      for (size_t i = 0; i < ListSize(range); ++i) elements.push_back(ListItem(range, i));
    } else if (range.type == Type::kMap) {
      for (const auto& entry : range.data->map) elements.push_back(CelValue::String(entry.first));
    } else {
      return CelValue::Error(absl::StrCat("cannot range over ", CelTypeName(range.type)));
    }
    const bool all = n.flag;
    std::optional<CelValue> error;
    for (CelValue& element : elements) {
      scope_.emplace_back(n.text, std::move(element));
      CelValue v = Eval(n.args[1]);
      scope_.pop_back();
      if (v.type == Type::kBool) {
        if (v.flag != all) return v;
        continue;
      }
      if (!error) error = v.is_error() ? std::move(v) : NoOverload();
    }
    if (error) return std::move(*error);
    return CelValue::Bool(all);
  }

  static CelValue Compare(CelCompareOp op, const CelValue& a, const CelValue& b) {
    if (op == CelCompareOp::kEq) return CelValue::Bool(Equal(a, b));
    if (op == CelCompareOp::kNe) return CelValue::Bool(!Equal(a, b));
    if (a.type != b.type) return NoOverload();
    int c = 0;
    switch (a.type) {
      case Type::kInt:
        c = a.number < b.number ? -1 : (a.number > b.number ? 1 : 0);
        break;
      case Type::kString:
        c = a.text.compare(b.text);
        break;
      case Type::kBool:
        c = static_cast<int>(a.flag) - static_cast<int>(b.flag);
        break;
      default:
        return NoOverload();  // quantities and versions order through compareTo
    }
    switch (op) {
      case CelCompareOp::kLt:
        return CelValue::Bool(c < 0);
      case CelCompareOp::kLe:
        return CelValue::Bool(c <= 0);
      case CelCompareOp::kGt:
        return CelValue::Bool(c > 0);
      case CelCompareOp::kGe:
        return CelValue::Bool(c >= 0);
      default:
        return NoOverload();
    }
  }

  CelValue Size(const CelValue& v) const {
    switch (v.type) {
      case Type::kString:
        return CelValue::Int(CodePoints(v.text));
      case Type::kList:
        return CelValue::Int(static_cast<int64_t>(ListSize(v)));
      case Type::kMap:
        return CelValue::Int(static_cast<int64_t>(v.data->map.size()));
      case Type::kObject:
        return CelValue::Int(host_.Size(v));
      default:
        return NoOverload();
    }
  }

  CelValue Call(const CelNode& n) {
    std::vector<CelValue> args;
    args.reserve(n.args.size());
    for (int arg : n.args) {
      args.push_back(Eval(arg));
      if (args.back().is_error()) return std::move(args.back());
    }
    const std::string& f = n.text;
    if (f == "size") return Size(args[0]);
    if (!n.method) return GlobalFunction(f, args);
    const CelValue& self = args[0];
    if (f == "compareTo" || f == "isGreaterThan" || f == "isLessThan") {
      if (args.size() != 2 || self.type != args[1].type) return NoOverload();
      const CelValue& other = args[1];
      int c = 0;
      if (self.type == Type::kQuantity) {
        c = self.number < other.number ? -1 : (self.number > other.number ? 1 : 0);
      } else if (self.type == Type::kVersion) {
        c = Semver::Compare(*self.version, *other.version);
      } else {
        return NoOverload();
      }
      if (f == "compareTo") return CelValue::Int(c);
      return CelValue::Bool(f == "isGreaterThan" ? c > 0 : c < 0);
    }
    if (f == "major" || f == "minor" || f == "patch") {
      if (self.type != Type::kVersion) return NoOverload();
      const uint64_t part = f == "major"   ? self.version->major
                            : f == "minor" ? self.version->minor
                                           : self.version->patch;
      if (part > static_cast<uint64_t>(INT64_MAX)) return CelValue::Error("int overflow");
      return CelValue::Int(static_cast<int64_t>(part));
    }
    if (self.type != Type::kString) return NoOverload();
    if (f == "lowerAscii") return CelValue::String(absl::AsciiStrToLower(self.text));
    if (f == "upperAscii") return CelValue::String(absl::AsciiStrToUpper(self.text));
    if (args.size() != 2 || args[1].type != Type::kString) return NoOverload();
    const std::string& other = args[1].text;
    if (f == "startsWith") return CelValue::Bool(absl::StartsWith(self.text, other));
    if (f == "endsWith") return CelValue::Bool(absl::EndsWith(self.text, other));
    if (f == "contains") return CelValue::Bool(absl::StrContains(self.text, other));
    return NoOverload();
  }

  CelValue GlobalFunction(const std::string& f, const std::vector<CelValue>& args) const {
    if (f == "semver" || f == "isSemver") {
      if (args.size() != 1 || args[0].type != Type::kString) return NoOverload();
      std::optional<Semver> s = Semver::Parse(args[0].text);
      if (f == "isSemver") return CelValue::Bool(s.has_value());
      if (!s) return CelValue::Error(absl::StrCat("invalid semver: ", args[0].text));
      return CelValue::Version(std::move(*s));
    }
    if (std::optional<CelValue> v = host_.CallFunction(f, args)) return std::move(*v);
    return CelValue::Error(absl::StrCat("function ", f));
  }

  const CelAst& ast_;
  const CelHost& host_;
  std::vector<std::pair<std::string, CelValue>> scope_;  // macro variables, innermost last
};

}  // namespace

CelValue Evaluate(const CelAst& ast, const CelHost& host) {
  if (ast.root < 0) return CelValue::Error(ast.unsupported);
  return Evaluator(ast, host).Eval(ast.root);
}

}  // namespace cel
