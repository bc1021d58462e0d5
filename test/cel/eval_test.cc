// The one evaluator with a host of its own: what a host's lazily read map (kObject) takes part
// in (selection, has(), `in`, size(), equality, errors absorbed by && and ||), the host's
// functions, and the functions every host gets (semver(), compareTo on versions and
// quantities). Plain data (data_test.cc) and DRA devices (test/topology/dra/selector_test.cc) are
// the two hosts the product uses; this one is deliberately neither, so the hooks are seen to be
// all the evaluator asks of a host.
#include "cel/eval.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cel/parse.h"
#include "gtest/gtest.h"

namespace cel {
namespace {

// `device.attributes` is an object of two keys, read one at a time; `gib(n)` is a host
// function making a quantity of n GiB.
class TwoKeyHost : public CelHost {
 public:
  CelValue DeviceField(CelNode::Kind field) const override {
    if (field == CelNode::Kind::kAttributes) return CelValue::Object(&values_, 1);
    if (field == CelNode::Kind::kDriver) return CelValue::String("example.com");
    return CelValue::Error("no such field");
  }
  CelValue Select(const CelValue& object, absl::string_view key) const override {
    ++selects;
    EXPECT_EQ(object.object, &values_);
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return CelValue::Error(absl::StrCat("no such key: ", key));
    return CelValue::Int(it->second);
  }
  bool Has(const CelValue&, absl::string_view key) const override {
    return values_.count(std::string(key)) > 0;
  }
  int64_t Size(const CelValue&) const override { return static_cast<int64_t>(values_.size()); }
  std::optional<CelValue> CallFunction(absl::string_view name,
                                       const std::vector<CelValue>& args) const override {
    if (name != "quantity") return std::nullopt;
    if (args.size() != 1 || args[0].type != CelValue::Type::kString) {
      return CelValue::Error("no such overload");
    }
    return CelValue::Quantity(args[0].text == "1Gi" ? 1024 : 2048);
  }
  mutable int selects = 0;

 private:
  std::map<std::string, int64_t> values_ = {{"a", 1}, {"b", 2}};
};

struct Case {
  const char* expression;
  const char* want;  // "true", "false", or the error's text
};

std::string Outcome(const std::string& expression, const CelHost& host) {
  CelAst ast = ParseCel(expression);
  if (!ast.unsupported.empty()) return absl::StrCat("unsupported: ", ast.unsupported);
  CelValue v = Evaluate(ast, host);
  if (v.is_error()) return v.text;
  if (v.type != CelValue::Type::kBool) return absl::StrCat("a ", CelTypeName(v.type));
  return v.flag ? "true" : "false";
}

TEST(CelEvalTest, AHostObjectIsReadThroughItsHooks) {
  TwoKeyHost host;
  for (const Case& c : std::vector<Case>{
           {"device.attributes['a'] == 1", "true"},
           {"device.attributes.b > device.attributes.a", "true"},
           {"device.attributes.c == 1", "no such key: c"},
           {"has(device.attributes.a) && !has(device.attributes.c)", "true"},
           {"'b' in device.attributes && !('z' in device.attributes)", "true"},
           {"1 in device.attributes", "false"},
           {"size(device.attributes) == 2", "true"},
           {"device.attributes == device.attributes", "true"},
           {"device.attributes", "a map"},
           // The host's error is absorbed where CEL absorbs errors, and surfaces elsewhere.
           {"device.attributes.c == 1 || device.driver == 'example.com'", "true"},
           {"device.attributes.c == 1 && false", "false"},
           {"device.attributes.c == 1 && true", "no such key: c"},
           {"device.capacity", "no such field"},
       }) {
    EXPECT_EQ(Outcome(c.expression, host), c.want) << c.expression;
  }
}

TEST(CelEvalTest, FunctionsOfEveryHostAndOfThisOne) {
  TwoKeyHost host;
  for (const Case& c : std::vector<Case>{
           {"quantity('2Gi').compareTo(quantity('1Gi')) == 1", "true"},
           {"quantity('1Gi').isLessThan(quantity('2Gi'))", "true"},
           {"quantity(1) == quantity('1Gi')", "no such overload"},
           {"semver('1.2.3').isGreaterThan(semver('1.2.3-rc.1'))", "true"},
           {"semver('1.2.3').minor() == 2 && semver('10.0.0').major() == 10", "true"},
           {"semver('1.2') == semver('1.2.0')", "invalid semver: 1.2"},
           {"isSemver('1.2') || isSemver('v1.2.3')", "false"},
           {"semver('1.0.0').compareTo(quantity('1Gi')) == 0", "no such overload"},
       }) {
    EXPECT_EQ(Outcome(c.expression, host), c.want) << c.expression;
  }
  // A host without functions of its own: quantity() is unknown, and says so.
  EXPECT_EQ(Outcome("quantity('1Gi') == quantity('1Gi')", CelHost()), "function quantity");
}

TEST(CelEvalTest, TheHostIsAskedOnlyForWhatTheExpressionReaches) {
  TwoKeyHost host;
  EXPECT_EQ(Outcome("device.driver == 'other' && device.attributes.a == 1", host), "false");
  EXPECT_EQ(host.selects, 0);  // the deciding false comes first: the rest is not read
  EXPECT_EQ(Outcome("device.attributes.a == 1 && device.attributes.b == 2", host), "true");
  EXPECT_EQ(host.selects, 2);
}

TEST(CelEvalTest, ATreeThatDidNotParseIsAnErrorNotACrash) {
  CelAst ast = ParseCel("device.driver ==");
  ASSERT_LT(ast.root, 0);
  CelValue v = Evaluate(ast, CelHost());
  EXPECT_TRUE(v.is_error());
  EXPECT_EQ(v.text, ast.unsupported);
}

}  // namespace
}  // namespace cel
