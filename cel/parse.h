// The parse half of CEL (cel/eval.h evaluates the tree, for the DRA selectors of
// topology/dra/selector.h and plain data in cel/data.h): CEL text to a small tree, for the
// subset of CEL that Kubernetes objects carry in practice. Anything outside the subset, and any
// syntax error, is reported as the reason the expression cannot be evaluated; nothing here
// throws or recurses without bound (nesting is capped at kMaxCelDepth). Two dialects share the
// grammar: device selectors and plain data.
//
//   CelAst ast = ParseCel("device.driver == 'gpu.nvidia.com'");
//   if (!ast.unsupported.empty()) ...;   // e.g. "function matches"
#ifndef GPU_TENANCY_CEL_PARSE_H_
#define GPU_TENANCY_CEL_PARSE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace cel {

// Deepest tree (and parser recursion) accepted. Real selectors nest a handful of levels.
inline constexpr int kMaxCelDepth = 48;

enum class CelCompareOp { kEq, kNe, kLt, kLe, kGt, kGe };

struct CelNode {
  enum class Kind {
    kVariable,    // text: a declared variable (`device`, `cel`) awaiting its field; Select
                  // replaces it, so an evaluated tree never holds one
    kBool,        // flag
    kInt,         // number
    kString,      // text
    kList,        // args: the elements
    kDriver,      // device.driver
    kMultiAlloc,  // device.allowMultipleAllocations (a bool)
    kAttributes,  // device.attributes (domain -> attribute map)
    kCapacity,    // device.capacity (domain -> capacity map)
    kSelect,      // args[0].text
    kIndex,       // args[0][args[1]]
    kHas,         // has(args[0].text)
    kCall,        // text(args...); with `method`, args[0].text(args[1..])
    kNot,         // !args[0]
    kNeg,         // -args[0]
    kAnd,         // args[0] && args[1] && ... (flattened)
    kOr,          // args[0] || args[1] || ...
    kTernary,     // args[0] ? args[1] : args[2]
    kCompare,     // args[0] op args[1]
    kIn,          // args[0] in args[1]
    // The plain-data dialect only (CelDialect):
    kIdent,          // text: a variable the caller binds, or a macro's iteration variable
    kNull,           // null
    kComprehension,  // args[0].exists(text, args[1]), or .all(...) when `flag`
  };
  Kind kind = Kind::kBool;
  bool flag = false;
  int64_t number = 0;
  std::string text;
  CelCompareOp op = CelCompareOp::kEq;
  bool method = false;
  std::vector<int> args;  // indices into CelAst::nodes
};

struct CelAst {
  std::vector<CelNode> nodes;
  // -1 when the expression did not parse. A call of a function outside the subset still
  // parses (as a kCall), so a reader of the tree's shape can use it; evaluators must not.
  int root = -1;
  // Why the expression cannot be evaluated ("syntax error at 7: ...", "function matches",
  // "macro exists"); "" when `root` is a tree the evaluator understands.
  std::string unsupported;
};

// The DRA selector dialect: `device` and `cel` are the only names, no macros, no null.
CelAst ParseCel(absl::string_view expression);

// The plain-data dialect, for expressions over JSON-like objects (Kubernetes admission
// matchConditions): the caller's `variables` are values of any shape, `x.f` and `x[k]` select
// from them, and the macros exists() and all() and the literal null are understood.
struct CelDialect {
  std::vector<std::string> variables;
};
CelAst ParseCel(absl::string_view expression, const CelDialect& dialect);

}  // namespace cel

#endif  // GPU_TENANCY_CEL_PARSE_H_
