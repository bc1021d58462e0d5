// CEL over plain data: expressions such as Kubernetes admission matchConditions, evaluated
// against JSON-like values (null, bool, int, string, list, map) the caller builds. Pure: no I/O,
// no JSON library; the caller converts its objects into CelData. The evaluation is
// cel/eval.h's, with the bindings as its host.
//
//   CelCondition c = CelCondition::Compile(
//       "has(object.spec.hostIPC) && object.spec.hostIPC == true", {"object", "request"});
//   CelResult r = c.Evaluate({{"object", &pod}, {"request", &request}});
//   if (r.outcome == CelOutcome::kTrue) ...;
//
// The subset, with cel-go's semantics: literals (strings, ints, true/false, null, lists);
// `x.f` and `x["f"]` on maps (a missing key is the error "no such key: f"), `l[i]` on lists;
// has(x.f) (key presence; false on a scalar or null, an error on a list); `k in map` (key
// presence) and
// `v in list`; == and != (values of different types are not equal), < <= > >= on ints and
// strings; && and || with error absorption (false && error is false, true || error is true),
// !, ?:, unary -; the macros exists(x, p) and all(x, p) over lists (elements) and maps (keys),
// as cel-go expands them: exists is true if any p is true, else an error if any p erred, else
// false (all mirrors it); size() of strings (code points), lists and maps; on strings
// startsWith, endsWith, contains, lowerAscii, upperAscii. Anything else is not evaluated, and
// says why.
#ifndef GPU_TENANCY_CEL_DATA_H_
#define GPU_TENANCY_CEL_DATA_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cel {

// A JSON-like value. A map keeps its keys unique, in insertion order.
struct CelData {
  enum class Type { kNull, kBool, kInt, kString, kList, kMap };
  Type type = Type::kNull;
  bool flag = false;
  int64_t number = 0;
  std::string text;
  std::vector<CelData> list;
  std::vector<std::pair<std::string, CelData>> map;

  // Declared here, defaulted in the .cc: implicit ones would be defined inside the class, where
  // std::pair<std::string, CelData> cannot be complete yet (clang with libstdc++ refuses it).
  CelData();
  CelData(const CelData&);
  CelData(CelData&&) noexcept;
  CelData& operator=(const CelData&);
  CelData& operator=(CelData&&) noexcept;
  ~CelData();

  static CelData Null();
  static CelData Bool(bool b);
  static CelData Int(int64_t n);
  static CelData String(std::string s);
  static CelData List(std::vector<CelData> items);
  static CelData Map(std::vector<std::pair<std::string, CelData>> entries);

  // The value under `key` of a map; null when absent or not a map.
  const CelData* Find(std::string_view key) const;
};

enum class CelOutcome { kTrue, kFalse, kError, kNotEvaluated };

struct CelResult {
  CelOutcome outcome = CelOutcome::kNotEvaluated;
  // kError: the runtime error ("no such key: spec"), or that the value is not a bool;
  // kNotEvaluated: the construct outside the subset ("function matches"); "" otherwise.
  std::string detail;
};

// A boolean expression parsed once over named variables, to be evaluated many times. Copies
// share the parsed tree; Evaluate is const and safe to call from several threads at once.
class CelCondition {
 public:
  // Never fails: an expression outside the subset (or naming another variable) compiles to one
  // whose Evaluate returns kNotEvaluated with the reason.
  static CelCondition Compile(std::string_view expression, std::vector<std::string> variables);

  // A variable missing from `bindings` is null.
  CelResult Evaluate(const std::map<std::string, const CelData*, std::less<>>& bindings) const;
  bool supported() const;
  const std::string& unsupported_reason() const;

 private:
  struct Program;
  explicit CelCondition(std::shared_ptr<const Program> program);
  std::shared_ptr<const Program> program_;
};

}  // namespace cel

#endif  // GPU_TENANCY_CEL_DATA_H_
