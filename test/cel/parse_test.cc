// The CEL parser on its own: the tree it builds (precedence, flattened && and ||, calls and
// methods), the two dialects, and the reasons an expression cannot be evaluated.
#include "cel/parse.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace cel {
namespace {

// The tree as an S-expression, for comparing shapes in one line.
std::string Shape(const CelAst& ast, int index) {
  const CelNode& n = ast.nodes[index];
  std::vector<std::string> args;
  for (int a : n.args) args.push_back(Shape(ast, a));
  auto call = [&](absl::string_view head) {
    return absl::StrCat("(", head, args.empty() ? "" : " ", absl::StrJoin(args, " "), ")");
  };
  switch (n.kind) {
    case CelNode::Kind::kVariable:
    case CelNode::Kind::kIdent:
      return n.text;
    case CelNode::Kind::kBool:
      return n.flag ? "true" : "false";
    case CelNode::Kind::kInt:
      return absl::StrCat(n.number);
    case CelNode::Kind::kString:
      return absl::StrCat("'", n.text, "'");
    case CelNode::Kind::kNull:
      return "null";
    case CelNode::Kind::kList:
      return call("list");
    case CelNode::Kind::kDriver:
      return "driver";
    case CelNode::Kind::kMultiAlloc:
      return "allowMultipleAllocations";
    case CelNode::Kind::kAttributes:
      return "attributes";
    case CelNode::Kind::kCapacity:
      return "capacity";
    case CelNode::Kind::kSelect:
      return absl::StrCat("(. ", args[0], " ", n.text, ")");
    case CelNode::Kind::kIndex:
      return call("[]");
    case CelNode::Kind::kHas:
      return absl::StrCat("(has ", args[0], " ", n.text, ")");
    case CelNode::Kind::kCall:
      return call(absl::StrCat(n.method ? "." : "", n.text));
    case CelNode::Kind::kNot:
      return call("!");
    case CelNode::Kind::kNeg:
      return call("-");
    case CelNode::Kind::kAnd:
      return call("&&");
    case CelNode::Kind::kOr:
      return call("||");
    case CelNode::Kind::kTernary:
      return call("?:");
    case CelNode::Kind::kCompare: {
      static const char* const kOps[] = {"==", "!=", "<", "<=", ">", ">="};
      return call(kOps[static_cast<int>(n.op)]);
    }
    case CelNode::Kind::kIn:
      return call("in");
    case CelNode::Kind::kComprehension:
      return absl::StrCat("(", n.flag ? "all " : "exists ", n.text, " ", absl::StrJoin(args, " "),
                          ")");
  }
  return "?";
}

std::string Parsed(absl::string_view expression) {
  CelAst ast = ParseCel(expression);
  if (ast.root < 0 || !ast.unsupported.empty())
    return absl::StrCat("unsupported: ", ast.unsupported);
  return Shape(ast, ast.root);
}

std::string ParsedData(absl::string_view expression) {
  CelAst ast = ParseCel(expression, CelDialect{{"object", "request"}});
  if (ast.root < 0 || !ast.unsupported.empty())
    return absl::StrCat("unsupported: ", ast.unsupported);
  return Shape(ast, ast.root);
}

TEST(CelParseTest, SelectorTrees) {
  struct Case {
    std::string expression;
    std::string shape;
  };
  const std::vector<Case> cases = {
      {"device.driver == 'gpu.nvidia.com'", "(== driver 'gpu.nvidia.com')"},
      {"device.attributes['gpu.nvidia.com'].type == 'gpu'",
       "(== (. ([] attributes 'gpu.nvidia.com') type) 'gpu')"},
      // && and || flatten, && binds tighter than ||.
      {"true && false && true || false", "(|| (&& true false true) false)"},
      {"!(1 < 2) ? -3 : 4", "(?: (! (< 1 2)) -3 4)"},  // a negative literal is one int
      {"-(3)", "(- 3)"},
      {"'a' in ['a', 'b']", "(in 'a' (list 'a' 'b'))"},
      {"has(device.attributes['x'].y)", "(has ([] attributes 'x') y)"},
      {"device.capacity['x'].memory.compareTo(quantity('1Gi')) >= 0",
       "(>= (.compareTo (. ([] capacity 'x') memory) (quantity '1Gi')) 0)"},
      {"(device.driver == 'a') && true", "(&& (== driver 'a') true)"},
      {"!device.allowMultipleAllocations", "(! allowMultipleAllocations)"},
  };
  for (const Case& c : cases) EXPECT_EQ(Parsed(c.expression), c.shape) << c.expression;
}

TEST(CelParseTest, PlainDataTrees) {
  EXPECT_EQ(ParsedData("has(object.spec) && object.spec.hostIPC == true"),
            "(&& (has object spec) (== (. (. object spec) hostIPC) true))");
  EXPECT_EQ(ParsedData("object.spec.containers.exists(c, c.name == 'x')"),
            "(exists c (. (. object spec) containers) (== (. c name) 'x'))");
  EXPECT_EQ(ParsedData("object.metadata.labels.all(k, k != null)"),
            "(all k (. (. object metadata) labels) (!= k null))");
  EXPECT_EQ(ParsedData("request['kind'] == null"), "(== ([] request 'kind') null)");
}

TEST(CelParseTest, EachDialectKnowsItsNames) {
  EXPECT_EQ(Parsed("object.spec == 1"), "unsupported: undeclared reference to 'object'");
  EXPECT_EQ(ParsedData("device.driver == 'a'"), "unsupported: undeclared reference to 'device'");
  EXPECT_EQ(Parsed("[1].exists(x, x == 1)"), "unsupported: macro exists");
  EXPECT_EQ(Parsed("null == null"), "unsupported: null");
}

TEST(CelParseTest, UnsupportedCallsKeepTheirTree) {
  CelAst ast = ParseCel("device.driver.matches('^gpu') && device.driver == 'a'");
  EXPECT_EQ(ast.unsupported, "function matches");
  ASSERT_GE(ast.root, 0) << "the tree stays whole for readers of its shape";
  EXPECT_EQ(Shape(ast, ast.root), "(&& (.matches driver '^gpu') (== driver 'a'))");
}

TEST(CelParseTest, SyntaxErrorsAndLimits) {
  EXPECT_EQ(Parsed("device.driver =="),
            "unsupported: syntax error at 16: unexpected end of expression");
  EXPECT_EQ(Parsed("1 + 2 == 3"), "unsupported: arithmetic operator +");
  std::string deep;
  for (int i = 0; i < kMaxCelDepth + 1; ++i) deep += "(";
  deep += "true";
  for (int i = 0; i < kMaxCelDepth + 1; ++i) deep += ")";
  EXPECT_NE(Parsed(deep).find("unsupported: "), std::string::npos);
  std::string shallow = "((((true))))";
  EXPECT_EQ(Parsed(shallow), "true");
}

}  // namespace
}  // namespace cel
