#include "cel/parse.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cel/lex.h"

namespace cel {
namespace {

// Recursive descent over CEL's grammar, from `Expr` down to `Primary`. The first problem
// (syntax or unsupported) stops it; `depth_` bounds the recursion and the tree's height.
class Parser {
 public:
  Parser(std::vector<CelToken> tokens, const CelDialect* dialect)
      : tokens_(std::move(tokens)), dialect_(dialect) {}

  CelAst Run() {
    std::optional<int> root = Expr();
    if (root && Peek().kind != CelTok::kEnd) Fail("unexpected token after the expression");
    if (!root || !error_.empty()) {
      CelAst failed;
      if (error_.empty()) error_ = "syntax error";
      // A call outside the subset came first: the reason is the same as when it stopped the
      // parse.
      failed.unsupported = outside_.empty() ? std::move(error_) : std::move(outside_);
      return failed;
    }
    ast_.root = *root;
    ast_.unsupported = std::move(outside_);
    return std::move(ast_);
  }

 private:
  const CelToken& Peek() const { return tokens_[std::min(pos_, tokens_.size() - 1)]; }
  const CelToken& Take() {
    const CelToken& t = Peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool Accept(CelTok kind) {
    if (Peek().kind != kind) return false;
    Take();
    return true;
  }
  std::nullopt_t Fail(absl::string_view what) {
    if (error_.empty()) error_ = absl::StrCat("syntax error at ", Peek().offset, ": ", what);
    return std::nullopt;
  }
  std::nullopt_t Unsupported(std::string what) {
    if (error_.empty()) error_ = std::move(what);
    return std::nullopt;
  }
  // A call of a function outside the subset: parsed as any call, so the tree stays whole for
  // readers of its shape, and the first such reason makes the whole tree unevaluated.
  void Outside(std::string what) {
    if (outside_.empty()) outside_ = std::move(what);
  }
  std::optional<int> Expect(CelTok kind, absl::string_view what, int result) {
    if (!Accept(kind)) return Fail(absl::StrCat("expected ", what));
    return result;
  }

  // Every node goes through here: its height (1 + its tallest argument) is the recursion the
  // evaluator needs for it, so a tree taller than kMaxCelDepth is refused.
  int Add(CelNode node) {
    int height = 1;
    for (int arg : node.args) height = std::max(height, heights_[arg] + 1);
    if (height > kMaxCelDepth) Unsupported(absl::StrCat("nesting deeper than ", kMaxCelDepth));
    heights_.push_back(height);
    ast_.nodes.push_back(std::move(node));
    return static_cast<int>(ast_.nodes.size()) - 1;
  }
  void DropLast() {
    heights_.pop_back();
    ast_.nodes.pop_back();
  }
  int Leaf(CelNode::Kind kind) {
    CelNode n;
    n.kind = kind;
    return Add(std::move(n));
  }
  int With(CelNode::Kind kind, std::vector<int> args) {
    CelNode n;
    n.kind = kind;
    n.args = std::move(args);
    return Add(std::move(n));
  }

  // Entered on every recursive step, so nesting of any kind stops at kMaxCelDepth.
  struct DepthGuard {
    explicit DepthGuard(Parser* p) : p(p) { ++p->depth_; }
    ~DepthGuard() { --p->depth_; }
    bool ok() const { return p->depth_ <= kMaxCelDepth; }
    Parser* p;
  };

  std::optional<int> Expr() {
    DepthGuard guard(this);
    if (!guard.ok()) return Unsupported(absl::StrCat("nesting deeper than ", kMaxCelDepth));
    std::optional<int> cond = LogicalChain(/*is_or=*/true);
    if (!cond || !Accept(CelTok::kQuestion)) return cond;
    std::optional<int> yes = LogicalChain(/*is_or=*/true);
    if (!yes) return std::nullopt;
    if (!Accept(CelTok::kColon)) return Fail("expected ':' in conditional");
    std::optional<int> no = Expr();
    if (!no) return std::nullopt;
    return With(CelNode::Kind::kTernary, {*cond, *yes, *no});
  }

  // `a || b || c` or `a && b && c`, flattened into one node, so a long chain is not a deep tree.
  std::optional<int> LogicalChain(bool is_or) {
    auto operand = [&]() { return is_or ? LogicalChain(false) : Relation(); };
    std::optional<int> first = operand();
    if (!first) return std::nullopt;
    const CelTok op = is_or ? CelTok::kOr : CelTok::kAnd;
    if (Peek().kind != op) return first;
    std::vector<int> args = {*first};
    while (error_.empty() && Accept(op)) {
      std::optional<int> next = operand();
      if (!next) return std::nullopt;
      args.push_back(*next);
    }
    return With(is_or ? CelNode::Kind::kOr : CelNode::Kind::kAnd, std::move(args));
  }

  std::optional<int> Relation() {
    std::optional<int> left = Arithmetic();
    while (left && error_.empty()) {
      const CelToken& t = Peek();
      std::optional<CelCompareOp> op;
      switch (t.kind) {
        case CelTok::kEq:
          op = CelCompareOp::kEq;
          break;
        case CelTok::kNe:
          op = CelCompareOp::kNe;
          break;
        case CelTok::kLt:
          op = CelCompareOp::kLt;
          break;
        case CelTok::kLe:
          op = CelCompareOp::kLe;
          break;
        case CelTok::kGt:
          op = CelCompareOp::kGt;
          break;
        case CelTok::kGe:
          op = CelCompareOp::kGe;
          break;
        default:
          break;
      }
      const bool is_in = t.kind == CelTok::kIdent && t.text == "in";
      if (!op && !is_in) return left;
      Take();
      std::optional<int> right = Arithmetic();
      if (!right) return std::nullopt;
      if (is_in) {
        left = With(CelNode::Kind::kIn, {*left, *right});
      } else {
        CelNode n;
        n.kind = CelNode::Kind::kCompare;
        n.op = *op;
        n.args = {*left, *right};
        left = Add(std::move(n));
      }
    }
    return left;
  }

  // CEL's + - * / % sit here in the grammar; the subset has none of them.
  std::optional<int> Arithmetic() {
    std::optional<int> left = Unary();
    if (!left) return std::nullopt;
    switch (Peek().kind) {
      case CelTok::kPlus:
        return Unsupported("arithmetic operator +");
      case CelTok::kMinus:
        return Unsupported("arithmetic operator -");
      case CelTok::kStar:
        return Unsupported("arithmetic operator *");
      case CelTok::kSlash:
        return Unsupported("arithmetic operator /");
      case CelTok::kPercent:
        return Unsupported("arithmetic operator %");
      default:
        return left;
    }
  }

  std::optional<int> Unary() {
    DepthGuard guard(this);
    if (!guard.ok()) return Unsupported(absl::StrCat("nesting deeper than ", kMaxCelDepth));
    if (Accept(CelTok::kNot)) {
      std::optional<int> operand = Unary();
      if (!operand) return std::nullopt;
      return With(CelNode::Kind::kNot, {*operand});
    }
    if (Accept(CelTok::kMinus)) {
      if (Peek().kind == CelTok::kInt) {
        // The literal itself, so the most negative int64 is expressible.
        const uint64_t magnitude = Take().number;
        CelNode n;
        n.kind = CelNode::Kind::kInt;
        n.number = magnitude == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(magnitude);
        return Member(Add(std::move(n)));
      }
      std::optional<int> operand = Unary();
      if (!operand) return std::nullopt;
      return With(CelNode::Kind::kNeg, {*operand});
    }
    std::optional<int> primary = Primary();
    if (!primary) return std::nullopt;
    return Member(*primary);
  }

  // Selections, calls and indexes after a primary: `x.f`, `x.f(args)`, `x[i]`.
  std::optional<int> Member(int target) {
    while (error_.empty()) {
      if (Peek().kind != CelTok::kDot && Peek().kind != CelTok::kLBracket) return target;
      if (Accept(CelTok::kLBracket)) {
        std::optional<int> index = Expr();
        if (!index) return std::nullopt;
        if (!Accept(CelTok::kRBracket)) return Fail("expected ']'");
        target = With(CelNode::Kind::kIndex, {target, *index});
        continue;
      }
      Take();  // the dot
      if (Peek().kind != CelTok::kIdent) return Fail("expected a field name after '.'");
      std::string name = Take().text;
      if (Peek().kind != CelTok::kLParen) {
        std::optional<int> selected = Select(target, std::move(name));
        if (!selected) return std::nullopt;
        target = *selected;
        continue;
      }
      Take();
      if (dialect_ && (name == "exists" || name == "all")) {
        std::optional<int> macro = Comprehension(target, /*all=*/name == "all");
        if (!macro) return std::nullopt;
        target = *macro;
        continue;
      }
      // Named before the arguments are parsed: a macro's arguments declare variables.
      if (std::optional<std::string> why = UnsupportedMethod(target, name)) {
        return Unsupported(std::move(*why));
      }
      std::optional<std::vector<int>> args = Arguments();
      if (!args) return std::nullopt;
      std::optional<int> call = Method(target, std::move(name), std::move(*args));
      if (!call) return std::nullopt;
      target = *call;
    }
    return std::nullopt;
  }

  // `range.exists(x, predicate)` / `.all(...)`, after its '(': x is bound in the predicate only.
  std::optional<int> Comprehension(int range, bool all) {
    if (Peek().kind != CelTok::kIdent) return Fail("expected an iteration variable");
    std::string variable = Take().text;
    if (variable == "in" || variable == "null" || variable == "true" || variable == "false") {
      return Fail("expected an iteration variable");
    }
    if (!Accept(CelTok::kComma)) return Fail("expected ',' after the iteration variable");
    scope_.push_back(variable);
    std::optional<int> predicate = Expr();
    scope_.pop_back();
    if (!predicate) return std::nullopt;
    if (!Accept(CelTok::kRParen)) return Fail("expected ')' after the macro's predicate");
    CelNode n;
    n.kind = CelNode::Kind::kComprehension;
    n.flag = all;
    n.text = std::move(variable);
    n.args = {range, *predicate};
    return Add(std::move(n));
  }

  bool Bound(const std::string& name) const {
    return std::find(scope_.begin(), scope_.end(), name) != scope_.end() ||
           std::find(dialect_->variables.begin(), dialect_->variables.end(), name) !=
               dialect_->variables.end();
  }

  std::optional<int> Select(int target, std::string name) {
    CelNode& t = ast_.nodes[target];
    if (t.kind == CelNode::Kind::kVariable && t.text == "device") {
      // Only the device's fields exist here; the variable node gives way to the field.
      DropLast();
      if (name == "driver") return Leaf(CelNode::Kind::kDriver);
      if (name == "allowMultipleAllocations") {
        return Leaf(CelNode::Kind::kMultiAlloc);
      }
      if (name == "attributes") return Leaf(CelNode::Kind::kAttributes);
      if (name == "capacity") return Leaf(CelNode::Kind::kCapacity);
      return Unsupported(absl::StrCat("device.", name));
    }
    if (t.kind == CelNode::Kind::kVariable && t.text == "cel") {
      return Unsupported(absl::StrCat("cel.", name));
    }
    CelNode n;
    n.kind = CelNode::Kind::kSelect;
    n.text = std::move(name);
    n.args = {target};
    return Add(std::move(n));
  }

  // After '(': comma-separated expressions up to ')'.
  std::optional<std::vector<int>> Arguments() {
    std::vector<int> args;
    if (Accept(CelTok::kRParen)) return args;
    while (true) {
      std::optional<int> arg = Expr();
      if (!arg) return std::nullopt;
      args.push_back(*arg);
      if (Accept(CelTok::kRParen)) return args;
      if (!Accept(CelTok::kComma)) return Fail("expected ',' or ')' in arguments");
    }
  }

  std::optional<std::string> UnsupportedMethod(int target, const std::string& name) const {
    const CelNode& t = ast_.nodes[target];
    if (t.kind == CelNode::Kind::kVariable) {
      return absl::StrCat(t.text, ".", name);
    }
    static constexpr const char* kMacros[] = {"all", "exists", "exists_one", "map", "filter"};
    for (const char* macro : kMacros) {
      if (name == macro) return absl::StrCat("macro ", name);
    }
    return std::nullopt;
  }

  std::optional<int> Method(int target, std::string name, std::vector<int> args) {
    struct Known {
      const char* name;
      size_t arity;
    };
    static constexpr Known kMethods[] = {
        {"compareTo", 1},  {"isGreaterThan", 1}, {"isLessThan", 1}, {"lowerAscii", 0},
        {"upperAscii", 0}, {"startsWith", 1},    {"endsWith", 1},   {"contains", 1},
        {"size", 0},       {"major", 0},         {"minor", 0},      {"patch", 0},
    };
    bool known = false;
    for (const Known& k : kMethods) {
      if (name == k.name && args.size() == k.arity) known = true;
    }
    if (!known) Outside(absl::StrCat("function ", name));
    args.insert(args.begin(), target);
    CelNode n;
    n.kind = CelNode::Kind::kCall;
    n.method = true;
    n.text = std::move(name);
    n.args = std::move(args);
    return Add(std::move(n));
  }

  std::optional<int> Primary() {
    const CelToken t = Take();
    switch (t.kind) {
      case CelTok::kInt: {
        if (t.number > static_cast<uint64_t>(INT64_MAX)) return Fail("int literal out of range");
        CelNode n;
        n.kind = CelNode::Kind::kInt;
        n.number = static_cast<int64_t>(t.number);
        return Add(std::move(n));
      }
      case CelTok::kString: {
        CelNode n;
        n.kind = CelNode::Kind::kString;
        n.text = t.text;
        return Add(std::move(n));
      }
      case CelTok::kLParen: {
        std::optional<int> inner = Expr();
        if (!inner) return std::nullopt;
        return Expect(CelTok::kRParen, "')'", *inner);
      }
      case CelTok::kLBracket:
        return List();
      case CelTok::kLBrace:
        return Unsupported("map literal");
      case CelTok::kDot:
        return Unsupported("leading-dot identifier");
      case CelTok::kIdent:
        return Identifier(t.text);
      case CelTok::kEnd:
        return Fail("unexpected end of expression");
      default:
        return Fail("unexpected token");
    }
  }

  std::optional<int> List() {
    std::vector<int> elements;
    while (!Accept(CelTok::kRBracket)) {
      std::optional<int> element = Expr();
      if (!element) return std::nullopt;
      elements.push_back(*element);
      if (Accept(CelTok::kRBracket)) break;
      if (!Accept(CelTok::kComma)) return Fail("expected ',' or ']' in list");
    }
    return With(CelNode::Kind::kList, std::move(elements));
  }

  std::optional<int> Identifier(const std::string& name) {
    if (name == "true" || name == "false") {
      CelNode n;
      n.kind = CelNode::Kind::kBool;
      n.flag = name == "true";
      return Add(std::move(n));
    }
    if (name == "null") {
      if (!dialect_) return Unsupported("null");
      return Leaf(CelNode::Kind::kNull);
    }
    if (name == "in") return Fail("unexpected 'in'");
    if (dialect_ && Peek().kind != CelTok::kLParen) {
      if (!Bound(name)) return Unsupported(absl::StrCat("undeclared reference to '", name, "'"));
      CelNode n;
      n.kind = CelNode::Kind::kIdent;
      n.text = name;
      return Add(std::move(n));
    }
    if (Peek().kind != CelTok::kLParen) {
      if (name == "device" || name == "cel") {
        // Meaningful only with a field: Select turns device.driver, .attributes and .capacity
        // into their own nodes and rejects the rest.
        if (Peek().kind != CelTok::kDot) return Unsupported(absl::StrCat(name, " used as a value"));
        CelNode n;
        n.kind = CelNode::Kind::kVariable;
        n.text = name;
        return Add(std::move(n));
      }
      return Unsupported(absl::StrCat("undeclared reference to '", name, "'"));
    }
    Take();
    if (name == "has") return Has();
    static constexpr const char* kFunctions[] = {"quantity", "semver", "isQuantity", "isSemver",
                                                 "size"};
    bool known = false;
    for (const char* f : kFunctions) known = known || name == f;
    if (!known) Outside(absl::StrCat("function ", name));
    std::optional<std::vector<int>> args = Arguments();
    if (!args) return std::nullopt;
    if (known && args->size() != 1) {
      Outside(absl::StrCat("function ", name, " with ", args->size(), " arguments"));
    }
    CelNode n;
    n.kind = CelNode::Kind::kCall;
    n.text = name;
    n.args = std::move(*args);
    return Add(std::move(n));
  }

  // has(x.f): the macro, after its '('. Its argument must end in a field selection.
  std::optional<int> Has() {
    std::optional<int> arg = Expr();
    if (!arg) return std::nullopt;
    if (!Accept(CelTok::kRParen)) return Fail("expected ')' after has()");
    CelNode& n = ast_.nodes[*arg];
    if (n.kind != CelNode::Kind::kSelect) return Unsupported("has() without a field selection");
    n.kind = CelNode::Kind::kHas;
    return *arg;
  }

  std::vector<CelToken> tokens_;
  const CelDialect* dialect_ = nullptr;  // null: the device selector dialect
  std::vector<std::string> scope_;       // iteration variables of the enclosing macros
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<int> heights_;  // per node of ast_
  CelAst ast_;
  std::string error_;    // a syntax error, or a construct that stops the parse
  std::string outside_;  // the first call outside the subset (Outside)
};

}  // namespace

namespace {

CelAst Parse(absl::string_view expression, const CelDialect* dialect) {
  std::string error;
  std::vector<CelToken> tokens = LexCel(expression, &error);
  if (!error.empty()) {
    CelAst failed;
    failed.unsupported = std::move(error);
    return failed;
  }
  return Parser(std::move(tokens), dialect).Run();
}

}  // namespace

CelAst ParseCel(absl::string_view expression) { return Parse(expression, nullptr); }

CelAst ParseCel(absl::string_view expression, const CelDialect& dialect) {
  return Parse(expression, &dialect);
}

}  // namespace cel
