// The one CEL evaluator: a parsed tree (cel/parse.h) evaluated to a value, with cel-go's
// semantics for the subset the parser accepts. What the names of an expression mean is the
// host's business: plain data binds variables to JSON-like values (cel/data.h), DRA selectors
// expose one device whose attribute and capacity maps are read lazily, without building them
// (topology/dra/selector.h). Pure: no I/O; evaluation never throws and recurses at most as
// deep as the tree (capped by the parser).
//
//   class MyHost : public cel::CelHost { ... };   // Variable, Select, ... as the values need
//   cel::CelValue v = cel::Evaluate(ast, MyHost(...));
//   if (v.is_error()) ...;                         // v.text: "no such key: spec"
//
// The semantics, the same for every host: `x.f` and `x[k]` on maps (a missing key is the error
// "no such key: f"; on a scalar too, as cel-go's refQualify says), `l[i]` on lists; has(x.f)
// (key presence; false on a scalar or null, an error on a list); `k in map` and `v in list`;
// == and != (values of different types are not equal); < <= > >= on ints, strings and bools;
// && and || absorbing errors (false && error is false, true || error is true); !, unary -, ?:;
// exists() and all() over lists (elements) and maps (keys); size() of strings (code points),
// lists and maps; startsWith, endsWith, contains, lowerAscii, upperAscii on strings;
// semver(), isSemver(), and compareTo / isGreaterThan / isLessThan on quantities and versions,
// major / minor / patch on versions. quantity() and isQuantity() are the host's (CallFunction):
// Kubernetes quantities are a model type, carried here as milli-units.
#ifndef GPU_TENANCY_CEL_EVAL_H_
#define GPU_TENANCY_CEL_EVAL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cel/parse.h"
#include "cel/semver.h"

namespace cel {

struct CelData;

// One value during evaluation. Maps and lists of the host's data are referenced, not copied.
struct CelValue {
  enum class Type {
    kError,  // text: the message
    kNull,
    kBool,      // flag
    kInt,       // number
    kString,    // text
    kQuantity,  // number: milli-units of a Kubernetes quantity
    kVersion,   // version (shared: most values are not versions, and stay small)
    kList,      // data (plain data) or items (a list literal)
    kMap,       // data: a plain-data map
    kObject,    // a map the host reads lazily: object and tag are the host's, text its key
  };
  Type type = Type::kError;
  bool flag = false;
  int64_t number = 0;
  std::string text;
  std::shared_ptr<const Semver> version;
  const CelData* data = nullptr;
  std::vector<CelValue> items;
  const void* object = nullptr;
  int tag = 0;

  static CelValue Error(std::string message);
  static CelValue Null();
  static CelValue Bool(bool b);
  static CelValue Int(int64_t n);
  static CelValue String(std::string s);
  static CelValue Quantity(int64_t milli);
  static CelValue Version(Semver v);
  static CelValue Object(const void* object, int tag, std::string key = "");
  // A plain-data value: scalars copied, lists and maps referenced.
  static CelValue Of(const CelData& data);

  bool is_error() const { return type == Type::kError; }
};

// CEL's name of the value's type ("int", "map", "null_type"), for messages.
const char* CelTypeName(CelValue::Type type);

// What the names of an expression mean. Every hook has a default for hosts without such
// values; each is called only for what the host itself handed out (a kObject it made, a
// device field its dialect parses).
class CelHost {
 public:
  virtual ~CelHost() = default;
  // A variable of the plain-data dialect (kIdent); null by default.
  virtual CelValue Variable(absl::string_view name) const;
  // A device field of the selector dialect (kDriver, kMultiAlloc, kAttributes, kCapacity).
  virtual CelValue DeviceField(CelNode::Kind field) const;
  // object.key and object["key"]: the value, or the error "no such key: key".
  virtual CelValue Select(const CelValue& object, absl::string_view key) const;
  // has(object.key) and `key in object`.
  virtual bool Has(const CelValue& object, absl::string_view key) const;
  virtual int64_t Size(const CelValue& object) const;
  // A global function the evaluator does not know (quantity, isQuantity), its arguments
  // evaluated and free of errors; nullopt: no such function.
  virtual std::optional<CelValue> CallFunction(absl::string_view name,
                                               const std::vector<CelValue>& args) const;
};

// The value of the tree at `ast.root`. The caller checks ast.unsupported first; a tree that
// did not parse evaluates to an error.
CelValue Evaluate(const CelAst& ast, const CelHost& host);

}  // namespace cel

#endif  // GPU_TENANCY_CEL_EVAL_H_
