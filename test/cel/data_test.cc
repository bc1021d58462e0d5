// CEL over plain data, as kube-apiserver evaluates admission matchConditions: field selection
// and has() on maps, `in` on maps and lists, the exists/all macros with cel-go's error
// absorption, the string functions, and everything outside the subset reported, never guessed.
#include "cel/data.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cel {
namespace {

CelData Obj(std::vector<std::pair<std::string, CelData>> entries) {
  return CelData::Map(std::move(entries));
}

// {"spec": {"hostIPC": true, "containers": [{"name": "a", "env": [{"name": "X"}]},
//  {"name": "b", "securityContext": {"privileged": false}}]},
//  "metadata": {"annotations": {"gpu-tenancy.io/gpu-memory": "20Gi"}}}
CelData SamplePod() {
  CelData a = Obj({{"name", CelData::String("a")},
                   {"env", CelData::List({Obj({{"name", CelData::String("X")}})})}});
  CelData b = Obj({{"name", CelData::String("b")},
                   {"securityContext", Obj({{"privileged", CelData::Bool(false)}})}});
  return Obj(
      {{"spec", Obj({{"hostIPC", CelData::Bool(true)},
                     {"containers", CelData::List({a, b})},
                     {"count", CelData::Int(3)},
                     {"nothing", CelData::Null()}})},
       {"metadata",
        Obj({{"annotations", Obj({{"gpu-tenancy.io/gpu-memory", CelData::String("20Gi")}})}})}});
}

CelResult EvalOn(const std::string& expression, const CelData& object) {
  CelData request = Obj({{"operation", CelData::String("CREATE")}});
  return CelCondition::Compile(expression, {"object", "request"})
      .Evaluate({{"object", &object}, {"request", &request}});
}

TEST(CelDataTest, EvaluatesTheSubset) {
  struct Case {
    std::string expression;
    CelOutcome want;
    std::string detail;
  };
  const std::vector<Case> cases = {
      {"has(object.spec)", CelOutcome::kTrue, ""},
      {"has(object.status)", CelOutcome::kFalse, ""},
      {"has(object.spec.nothing)", CelOutcome::kTrue, ""},  // present, if null
      {"object.spec.nothing == null", CelOutcome::kTrue, ""},
      {"object.spec.hostIPC == true", CelOutcome::kTrue, ""},
      {"object.spec.hostIPC", CelOutcome::kTrue, ""},
      {"object.spec.count > 2 && object.spec.count <= 3", CelOutcome::kTrue, ""},
      {"object.spec.count == '3'", CelOutcome::kFalse, ""},  // different types: not equal
      {"object.status.phase == 'Running'", CelOutcome::kError, "no such key: status"},
      {"object['spec']['count'] == 3", CelOutcome::kTrue, ""},
      {"object.spec.containers[1].name == 'b'", CelOutcome::kTrue, ""},
      {"object.spec.containers[2].name == 'b'", CelOutcome::kError, "index out of range: 2"},
      {"'gpu-tenancy.io/gpu-memory' in object.metadata.annotations", CelOutcome::kTrue, ""},
      {"'other' in object.metadata.annotations", CelOutcome::kFalse, ""},
      {"'b' in ['a', 'b']", CelOutcome::kTrue, ""},
      {"!('c' in [])", CelOutcome::kTrue, ""},
      {"size(object.spec.containers) == 2 && object.spec.containers.size() == 2", CelOutcome::kTrue,
       ""},
      {"size(object.metadata.annotations) == 1", CelOutcome::kTrue, ""},
      {"object.spec.containers.exists(c, c.name == 'b')", CelOutcome::kTrue, ""},
      {"object.spec.containers.exists(c, c.name == 'z')", CelOutcome::kFalse, ""},
      {"object.spec.containers.all(c, c.name.size() == 1)", CelOutcome::kTrue, ""},
      {"object.spec.containers.all(c, c.name == 'a')", CelOutcome::kFalse, ""},
      // Over a map, a macro ranges over the keys.
      {"object.metadata.annotations.exists(k, k.startsWith('gpu-tenancy.io/'))", CelOutcome::kTrue,
       ""},
      // Nested macros, each variable in its own scope.
      {"object.spec.containers.exists(c, has(c.env) && c.env.exists(e, e.name == 'X'))",
       CelOutcome::kTrue, ""},
      // cel-go's absorption: an error in one element does not hide a true in another (exists)
      // or a false (all); with neither, the error is the result.
      {"object.spec.containers.exists(c, c.securityContext.privileged == false)", CelOutcome::kTrue,
       ""},
      {"object.spec.containers.exists(c, c.securityContext.privileged == true)", CelOutcome::kError,
       "no such key: securityContext"},
      {"object.spec.containers.all(c, c.securityContext.privileged == true)", CelOutcome::kFalse,
       ""},
      {"object.spec.containers.all(c, c.securityContext.privileged == false)", CelOutcome::kError,
       "no such key: securityContext"},
      {"object.spec.count.exists(c, true)", CelOutcome::kError, "cannot range over int"},
      {"[].exists(c, c == 1) || [].all(c, c == 1)", CelOutcome::kTrue, ""},
      // && and || absorb errors as cel-go does.
      {"has(object.status) && object.status.phase == 'x'", CelOutcome::kFalse, ""},
      {"object.status.phase == 'x' && false", CelOutcome::kFalse, ""},
      {"object.status.phase == 'x' || true", CelOutcome::kTrue, ""},
      {"object.status.phase == 'x' || false", CelOutcome::kError, "no such key: status"},
      {"'SYS_admin'.upperAscii() == 'SYS_ADMIN' && 'ABC'.lowerAscii() == 'abc'", CelOutcome::kTrue,
       ""},
      {"'/dev/nvidia0'.startsWith('/dev/') && '/dev/nvidia0'.endsWith('0') && "
       "'/dev/nvidia0'.contains('nvidia')",
       CelOutcome::kTrue, ""},
      {"request.operation == 'CREATE' ? true : false", CelOutcome::kTrue, ""},
      {"-object.spec.count == -3", CelOutcome::kTrue, ""},
      // Comments, as in the generated conditions.
      {"// a comment\nobject.spec.hostIPC // another\n&& true", CelOutcome::kTrue, ""},
      // A value that is not a bool is an error, as kube-apiserver's type check would say.
      {"object.spec.count", CelOutcome::kError, "expression evaluated to a int, not a bool"},
      {"object.spec.count.startsWith('a')", CelOutcome::kError, "no such overload"},
  };
  const CelData pod = SamplePod();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expression);
    CelResult r = EvalOn(c.expression, pod);
    EXPECT_EQ(r.outcome, c.want) << r.detail;
    EXPECT_EQ(r.detail, c.detail);
  }
}

// One row per behaviour the generated matchConditions rely on, checked against cel-go as
// Kubernetes runs it (webhook matchConditions compile in the base environment of
// kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/cel/environment/base.go; `object` is
// the unstructured map[string]any of staging/.../admission/plugin/cel/filter.go
// objectToResolveVal). Paths are in google/cel-go, read at v0.17.8 and at master.
TEST(CelDataTest, MatchesCelGo) {
  struct Case {
    std::string expression;
    CelOutcome want;
    std::string detail;
  };
  const std::vector<Case> cases = {
      // interpreter/attributes.go, refQualify and stringQualifier: a missing key is an error,
      // except under has(); has() on a scalar or null is false; on a list it is an error.
      {"object.spec.missing == 1", CelOutcome::kError, "no such key: missing"},
      {"has(object.spec.hostIPC.x)", CelOutcome::kFalse, ""},
      {"has(object.spec.nothing.x)", CelOutcome::kFalse, ""},
      {"has(object.spec.containers.x)", CelOutcome::kError, "unsupported index type"},
      {"object.spec.hostIPC.x", CelOutcome::kError, "no such key: x"},
      // has() tests only its last field; a missing intermediate one is selected, an error.
      {"has(object.status.phase)", CelOutcome::kError, "no such key: status"},
      // common/types/int.go, string.go, null.go Equal: values of different types are unequal.
      {"object.spec.count == 'x' || object.spec.count == null", CelOutcome::kFalse, ""},
      {"object.spec.nothing == null && !(object.spec == null)", CelOutcome::kTrue, ""},
      // common/types/list.go Contains: element Equal, so no error across types.
      {"3 in ['a', 'b'] || 'a' in [1, null]", CelOutcome::kFalse, ""},
      // common/types/map.go stringIfaceMapAccessor.Find: a non-string key is just absent.
      {"3 in object.metadata.annotations", CelOutcome::kFalse, ""},
      // parser/macro.go makeQuantifier + interpreter/interpretable.go evalOr/evalAnd: exists
      // is true if any element is, else the first error, else false; all mirrors it.
      {"[1, 'a'].exists(x, x > 0)", CelOutcome::kTrue, ""},
      {"['a', 1].all(x, x > 5)", CelOutcome::kFalse, ""},
      {"['a'].exists(x, x > 0)", CelOutcome::kError, "no such overload"},
      // common/types/string.go Compare: ordering across types has no overload.
      {"'a' < 1", CelOutcome::kError, "no such overload"},
      // common/types/string.go Size: code points, not bytes.
      {"'\u00fc'.size() == 1 && size('ab') == 2", CelOutcome::kTrue, ""},
      // ext/strings.go lowerASCII/upperASCII (library version 0): ASCII letters only.
      {"'\u00c4B'.lowerAscii() == '\u00c4b' && '\u00e4b'.upperAscii() == '\u00e4B'",
       CelOutcome::kTrue, ""},
      // checker/stdlib: startsWith, endsWith, contains take strings only.
      {"object.spec.count.contains('3')", CelOutcome::kError, "no such overload"},
      {"'abc'.startsWith('') && 'abc'.endsWith('bc') && 'abc'.contains('')", CelOutcome::kTrue, ""},
  };
  const CelData pod = SamplePod();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expression);
    CelResult r = EvalOn(c.expression, pod);
    EXPECT_EQ(r.outcome, c.want) << r.detail;
    EXPECT_EQ(r.detail, c.detail);
  }
}

TEST(CelDataTest, ReportsWhatItDoesNotEvaluate) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"object.metadata.name.matches('^a')", "function matches"},
      {"quantity('1Gi') == quantity('1Gi')", "function quantity"},
      {"object.spec.containers.map(c, c.name).size() == 1", "macro map"},
      {"object.spec.containers.exists_one(c, true)", "macro exists_one"},
      {"oldObject == null", "undeclared reference to 'oldObject'"},
      {"c.name == 'a'", "undeclared reference to 'c'"},
      {"object.spec.containers.exists(c, true) && c.name == 'a'", "undeclared reference to 'c'"},
      {"{'a': 1}.a == 1", "map literal"},
      {"object.spec.count + 1 == 4", "arithmetic operator +"},
  };
  const CelData pod = SamplePod();
  for (const auto& [expression, why] : cases) {
    SCOPED_TRACE(expression);
    CelResult r = EvalOn(expression, pod);
    EXPECT_EQ(r.outcome, CelOutcome::kNotEvaluated);
    EXPECT_EQ(r.detail, why);
  }
  // Malformed macros are syntax errors, not crashes.
  for (const char* bad :
       {"object.spec.containers.exists(", "object.spec.containers.exists(c)",
        "object.spec.containers.exists(1, true)", "object.spec.containers.all(in, true)"}) {
    SCOPED_TRACE(bad);
    CelResult r = EvalOn(bad, pod);
    EXPECT_EQ(r.outcome, CelOutcome::kNotEvaluated);
    EXPECT_NE(r.detail.find("syntax error"), std::string::npos) << r.detail;
  }
}

TEST(CelDataTest, AnUnboundVariableIsNull) {
  CelResult r = CelCondition::Compile("object == null", {"object"}).Evaluate({});
  EXPECT_EQ(r.outcome, CelOutcome::kTrue) << r.detail;
  // As kube-apiserver binds a DELETE's `object`: has() on null is false (see MatchesCelGo).
  r = CelCondition::Compile("has(object.spec)", {"object"}).Evaluate({});
  EXPECT_EQ(r.outcome, CelOutcome::kFalse) << r.detail;
  r = CelCondition::Compile("object.spec == null", {"object"}).Evaluate({});
  EXPECT_EQ(r.outcome, CelOutcome::kError);
}

TEST(CelDataTest, HostileInputIsNeverEvaluated) {
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "[].exists(x, ";
  deep += "true";
  for (int i = 0; i < 200; ++i) deep += ")";
  CelResult r = EvalOn(deep, SamplePod());
  EXPECT_EQ(r.outcome, CelOutcome::kNotEvaluated);
  EXPECT_NE(r.detail.find("nesting deeper than"), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace cel
