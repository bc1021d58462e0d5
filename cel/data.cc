#include "cel/data.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cel/parse.h"

namespace cel {

CelData::CelData() = default;
CelData::CelData(const CelData&) = default;
CelData::CelData(CelData&&) noexcept = default;
CelData& CelData::operator=(const CelData&) = default;
CelData& CelData::operator=(CelData&&) noexcept = default;
CelData::~CelData() = default;

CelData CelData::Null() { return {}; }

CelData CelData::Bool(bool b) {
  CelData d;
  d.type = Type::kBool;
  d.flag = b;
  return d;
}

CelData CelData::Int(int64_t n) {
  CelData d;
  d.type = Type::kInt;
  d.number = n;
  return d;
}

CelData CelData::String(std::string s) {
  CelData d;
  d.type = Type::kString;
  d.text = std::move(s);
  return d;
}

CelData CelData::List(std::vector<CelData> items) {
  CelData d;
  d.type = Type::kList;
  d.list = std::move(items);
  return d;
}

CelData CelData::Map(std::vector<std::pair<std::string, CelData>> entries) {
  CelData d;
  d.type = Type::kMap;
  d.map = std::move(entries);
  return d;
}

const CelData* CelData::Find(std::string_view key) const {
  if (type != Type::kMap) return nullptr;
  for (const auto& [k, v] : map) {
    if (k == key) return &v;
  }
  return nullptr;
}

struct CelCondition::Program {
  CelAst ast;
};

namespace {

// One value during evaluation. Lists and maps of the input are referenced, not copied; a list
// literal owns its items.
struct Value {
  enum class Type { kError, kNull, kBool, kInt, kString, kList, kMap };
  Type type = Type::kError;
  bool flag = false;
  int64_t number = 0;
  std::string text;               // kString; kError's message
  const CelData* data = nullptr;  // kList or kMap from the input
  std::vector<Value> items;       // a list literal's

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
  static Value Of(const CelData& d) {
    Value v;
    switch (d.type) {
      case CelData::Type::kNull:
        v.type = Type::kNull;
        break;
      case CelData::Type::kBool:
        return Bool(d.flag);
      case CelData::Type::kInt:
        return Int(d.number);
      case CelData::Type::kString:
        return String(d.text);
      case CelData::Type::kList:
        v.type = Type::kList;
        v.data = &d;
        break;
      case CelData::Type::kMap:
        v.type = Type::kMap;
        v.data = &d;
        break;
    }
    return v;
  }
  bool is_error() const { return type == Type::kError; }
  size_t ListSize() const { return data ? data->list.size() : items.size(); }
  Value ListItem(size_t i) const { return data ? Of(data->list[i]) : items[i]; }
};

Value NoOverload() { return Value::Error("no such overload"); }

const char* TypeName(Value::Type type) {
  switch (type) {
    case Value::Type::kError:
      return "error";
    case Value::Type::kNull:
      return "null_type";
    case Value::Type::kBool:
      return "bool";
    case Value::Type::kInt:
      return "int";
    case Value::Type::kString:
      return "string";
    case Value::Type::kList:
      return "list";
    case Value::Type::kMap:
      return "map";
  }
  return "?";
}

int64_t CodePoints(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

bool Equal(const Value& a, const Value& b);

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
bool Equal(const Value& a, const Value& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case Value::Type::kNull:
      return true;
    case Value::Type::kBool:
      return a.flag == b.flag;
    case Value::Type::kInt:
      return a.number == b.number;
    case Value::Type::kString:
      return a.text == b.text;
    case Value::Type::kList:
      if (a.ListSize() != b.ListSize()) return false;
      for (size_t i = 0; i < a.ListSize(); ++i) {
        if (!Equal(a.ListItem(i), b.ListItem(i))) return false;
      }
      return true;
    case Value::Type::kMap:
      return DataEqual(*a.data, *b.data);
    case Value::Type::kError:
      return false;
  }
  return false;
}

class Evaluator {
 public:
  Evaluator(const CelAst& ast, const std::map<std::string, const CelData*, std::less<>>& bindings)
      : ast_(ast), bindings_(bindings) {}

  Value Eval(int index) {
    const CelNode& n = ast_.nodes[index];
    switch (n.kind) {
      case CelNode::Kind::kBool:
        return Value::Bool(n.flag);
      case CelNode::Kind::kInt:
        return Value::Int(n.number);
      case CelNode::Kind::kString:
        return Value::String(n.text);
      case CelNode::Kind::kNull: {
        Value v;
        v.type = Value::Type::kNull;
        return v;
      }
      case CelNode::Kind::kList: {
        Value v;
        v.type = Value::Type::kList;
        for (int arg : n.args) {
          Value element = Eval(arg);
          if (element.is_error()) return element;
          v.items.push_back(std::move(element));
        }
        return v;
      }
      case CelNode::Kind::kIdent:
        return Variable(n.text);
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
          if (key.number < 0 || static_cast<size_t>(key.number) >= target.ListSize()) {
            return Value::Error(absl::StrCat("index out of range: ", key.number));
          }
          return target.ListItem(static_cast<size_t>(key.number));
        }
        if (key.type != Value::Type::kString) return NoOverload();
        return Lookup(target, key.text);
      }
      case CelNode::Kind::kHas: {
        Value target = Eval(n.args[0]);
        if (target.is_error()) return target;
        // cel-go (interpreter/attributes.go, refQualify) since v0.17: on a list the field
        // is an index of the wrong type, an error; on a scalar or null the field is simply
        // absent (unless the host enables ErrorOnBadPresenceTest, which Kubernetes does not).
        if (target.type == Value::Type::kList) return Value::Error("unsupported index type");
        if (target.type != Value::Type::kMap) return Value::Bool(false);
        return Value::Bool(target.data->Find(n.text) != nullptr);
      }
      case CelNode::Kind::kIn: {
        Value element = Eval(n.args[0]);
        if (element.is_error()) return element;
        Value container = Eval(n.args[1]);
        if (container.is_error()) return container;
        if (container.type == Value::Type::kList) {
          for (size_t i = 0; i < container.ListSize(); ++i) {
            if (Equal(element, container.ListItem(i))) return Value::Bool(true);
          }
          return Value::Bool(false);
        }
        if (container.type != Value::Type::kMap) return NoOverload();
        if (element.type != Value::Type::kString) return Value::Bool(false);
        return Value::Bool(container.data->Find(element.text) != nullptr);
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
      case CelNode::Kind::kComprehension:
        return Comprehension(n);
      case CelNode::Kind::kCall:
        return Call(n);
      case CelNode::Kind::kVariable:  // the device dialect's; never parsed here
      case CelNode::Kind::kDriver:
      case CelNode::Kind::kMultiAlloc:
      case CelNode::Kind::kAttributes:
      case CelNode::Kind::kCapacity:
        break;
    }
    return Value::Error("unknown node");
  }

 private:
  Value Variable(const std::string& name) const {
    // The innermost macro variable of that name first.
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it) {
      if (it->first == name) return it->second;
    }
    auto bound = bindings_.find(name);
    if (bound == bindings_.end() || bound->second == nullptr) {
      Value v;
      v.type = Value::Type::kNull;
      return v;
    }
    return Value::Of(*bound->second);
  }

  static Value Lookup(const Value& map, const std::string& key) {
    if (map.type == Value::Type::kList) return Value::Error("unsupported index type");
    // cel-go's refQualify: a scalar or null has no keys.
    if (map.type != Value::Type::kMap) return Value::Error(absl::StrCat("no such key: ", key));
    const CelData* found = map.data->Find(key);
    if (!found) return Value::Error(absl::StrCat("no such key: ", key));
    return Value::Of(*found);
  }

  Value Logical(const CelNode& n, bool is_or) {
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

  // exists: any true wins, else the first error, else false; all: any false wins, else the
  // first error, else true (cel-go's expansion with its error-absorbing || and &&).
  Value Comprehension(const CelNode& n) {
    Value range = Eval(n.args[0]);
    if (range.is_error()) return range;
    std::vector<Value> elements;
    if (range.type == Value::Type::kList) {
      for (size_t i = 0; i < range.ListSize(); ++i) elements.push_back(range.ListItem(i));
    } else if (range.type == Value::Type::kMap) {
      for (const auto& [key, unused] : range.data->map) elements.push_back(Value::String(key));
    } else {
      return Value::Error(absl::StrCat("cannot range over ", TypeName(range.type)));
    }
    const bool all = n.flag;
    std::optional<Value> error;
    for (Value& element : elements) {
      scope_.emplace_back(n.text, std::move(element));
      Value v = Eval(n.args[1]);
      scope_.pop_back();
      if (v.type == Value::Type::kBool) {
        if (v.flag != all) return v;
        continue;
      }
      if (!error) error = v.is_error() ? std::move(v) : NoOverload();
    }
    if (error) return std::move(*error);
    return Value::Bool(all);
  }

  static Value Compare(CelCompareOp op, const Value& a, const Value& b) {
    if (op == CelCompareOp::kEq) return Value::Bool(Equal(a, b));
    if (op == CelCompareOp::kNe) return Value::Bool(!Equal(a, b));
    if (a.type != b.type) return NoOverload();
    int c = 0;
    if (a.type == Value::Type::kInt) {
      c = a.number < b.number ? -1 : (a.number > b.number ? 1 : 0);
    } else if (a.type == Value::Type::kString) {
      c = a.text.compare(b.text);
    } else {
      return NoOverload();
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

  static Value Size(const Value& v) {
    switch (v.type) {
      case Value::Type::kString:
        return Value::Int(CodePoints(v.text));
      case Value::Type::kList:
        return Value::Int(static_cast<int64_t>(v.ListSize()));
      case Value::Type::kMap:
        return Value::Int(static_cast<int64_t>(v.data->map.size()));
      default:
        return NoOverload();
    }
  }

  Value Call(const CelNode& n) {
    std::vector<Value> args;
    args.reserve(n.args.size());
    for (int arg : n.args) {
      args.push_back(Eval(arg));
      if (args.back().is_error()) return std::move(args.back());
    }
    const std::string& f = n.text;
    const Value& self = args[0];
    if (f == "size") return Size(self);
    if (!n.method || self.type != Value::Type::kString) {
      return n.method ? NoOverload() : Value::Error(absl::StrCat("function ", f));
    }
    if (f == "lowerAscii") return Value::String(absl::AsciiStrToLower(self.text));
    if (f == "upperAscii") return Value::String(absl::AsciiStrToUpper(self.text));
    if (args.size() != 2 || args[1].type != Value::Type::kString) return NoOverload();
    const std::string& other = args[1].text;
    if (f == "startsWith") return Value::Bool(absl::StartsWith(self.text, other));
    if (f == "endsWith") return Value::Bool(absl::EndsWith(self.text, other));
    if (f == "contains") return Value::Bool(absl::StrContains(self.text, other));
    return NoOverload();
  }

  const CelAst& ast_;
  const std::map<std::string, const CelData*, std::less<>>& bindings_;
  std::vector<std::pair<std::string, Value>> scope_;  // macro variables, innermost last
};

// The functions the parser accepts that this dialect does not evaluate (quantities and
// versions belong to device selectors), or "" when every call is evaluated.
std::string UnevaluatedCall(const CelAst& ast) {
  static constexpr const char* kEvaluated[] = {"size",     "startsWith", "endsWith",
                                               "contains", "lowerAscii", "upperAscii"};
  for (const CelNode& n : ast.nodes) {
    if (n.kind != CelNode::Kind::kCall) continue;
    bool known = false;
    for (const char* f : kEvaluated) known = known || n.text == f;
    if (!known) return absl::StrCat("function ", n.text);
  }
  return "";
}

}  // namespace

CelCondition::CelCondition(std::shared_ptr<const Program> program) : program_(std::move(program)) {}

CelCondition CelCondition::Compile(std::string_view expression,
                                   std::vector<std::string> variables) {
  auto program = std::make_shared<Program>();
  CelDialect dialect;
  dialect.variables = std::move(variables);
  program->ast = ParseCel(absl::string_view(expression.data(), expression.size()), dialect);
  if (program->ast.unsupported.empty()) program->ast.unsupported = UnevaluatedCall(program->ast);
  return CelCondition(std::move(program));
}

bool CelCondition::supported() const { return program_->ast.unsupported.empty(); }

const std::string& CelCondition::unsupported_reason() const { return program_->ast.unsupported; }

CelResult CelCondition::Evaluate(
    const std::map<std::string, const CelData*, std::less<>>& bindings) const {
  if (!supported()) return {CelOutcome::kNotEvaluated, program_->ast.unsupported};
  Value v = Evaluator(program_->ast, bindings).Eval(program_->ast.root);
  if (v.is_error()) return {CelOutcome::kError, std::move(v.text)};
  if (v.type != Value::Type::kBool) {
    return {CelOutcome::kError,
            absl::StrCat("expression evaluated to a ", TypeName(v.type), ", not a bool")};
  }
  return {v.flag ? CelOutcome::kTrue : CelOutcome::kFalse, ""};
}

}  // namespace cel
