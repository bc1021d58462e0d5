// DRA device selectors: the CEL expressions of DeviceClasses and claim requests, evaluated
// against one published device the way kube-scheduler's allocator does, for the subset of CEL
// that selectors use in practice. Pure: no I/O, no clocks. cel/eval.h evaluates; this file is
// its host for one device (attributes and capacity read where selected, never copied).
//
//   CompiledSelector s = CompiledSelector::Compile(
//       "device.attributes['gpu.nvidia.com'].type == 'gpu'");
//   for (const DraDevice& d : devices)
//     if (s.Evaluate(d).outcome == SelectorOutcome::kMatch) ...;
//
// The subset: string literals ('..', "..", raw r'..', triple-quoted, with CEL's escapes), int
// literals, true/false, lists; device.driver, device.allowMultipleAllocations (false unless the
// device publishes it true), device.attributes[<domain>] and
// device.capacity[<domain>] (an unknown domain is an empty map) with `.id` and `["id"]` (an
// unknown id is the runtime error "no such key: <id>"), `k in map`, `x in [list]`, has(m.id);
// == != (values of different types are not equal, as in cel-go), < <= > >= on ints, strings
// and bools; && and || with CEL's error absorption (false && error is false, true || error is
// true), !, unary -, ?:, parentheses; quantity(), semver(), isQuantity(), isSemver(), size();
// on quantities and versions compareTo / isGreaterThan / isLessThan (versions also major,
// minor, patch); on strings lowerAscii, upperAscii, startsWith, endsWith, contains, size.
// Version attributes are semver 2.0.0 values. Anything else (matches(), macros such as
// exists, cel.bind, arithmetic, doubles, maps, null) is not evaluated: Evaluate says so and
// names the construct. So are syntax errors, trees deeper than kMaxCelDepth and expressions
// over kMaxSelectorBytes, which the apiserver would not have stored either.
#ifndef GPU_TENANCY_TOPOLOGY_DRA_SELECTOR_H_
#define GPU_TENANCY_TOPOLOGY_DRA_SELECTOR_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "topology/dra/model.h"

namespace topology {

// The apiserver's limit on one selector expression (len(expression) <= 10*1024).
inline constexpr size_t kMaxSelectorBytes = 10 * 1024;

enum class SelectorOutcome { kMatch, kNoMatch, kError, kNotEvaluated };

struct SelectorResult {
  SelectorOutcome outcome = SelectorOutcome::kNotEvaluated;
  // kError: the runtime error ("no such key: profile"); kNotEvaluated: the construct that is
  // not supported ("function matches"); "" otherwise.
  std::string detail;
};

// An expression parsed once, to be evaluated against many devices. Copies share the parsed
// tree; Evaluate is const and safe to call from several threads at once.
class CompiledSelector {
 public:
  // Never fails: an expression outside the subset compiles to one whose Evaluate returns
  // kNotEvaluated with the reason.
  static CompiledSelector Compile(std::string_view expression);

  // kMatch when the expression is true for `device`, kNoMatch when false, kError on a runtime
  // error (or a value that is not a bool), kNotEvaluated when !supported().
  SelectorResult Evaluate(const DraDevice& device) const;
  bool supported() const;
  const std::string& expression() const;
  // Why it is not supported; "" when it is.
  const std::string& unsupported_reason() const;

 private:
  struct Program;
  explicit CompiledSelector(std::shared_ptr<const Program> program);
  std::shared_ptr<const Program> program_;
};

// Compile and Evaluate in one call, for a single device.
SelectorResult EvaluateSelector(std::string_view expression, const DraDevice& device);

// Whether the allocator could give `device` to a request: all of the class's selectors, then
// the request's, in order, as kube-scheduler evaluates them. The first selector that is not
// true decides: false -> kNoMatch, an error -> kError (the allocator would abort the attempt),
// not evaluated -> kNotEvaluated (no false or error came before it, so the answer is unknown).
// All true -> kMatch. A null `device_class` means the claim names a class that does not exist:
// the result is kNotEvaluated "device class not found", and naming the class in a message is
// the caller's business.
SelectorResult DeviceMatches(const DraDevice& device, const DraDeviceClass* device_class,
                             const std::vector<std::string>& request_selectors);

// The same over selectors compiled beforehand (say once per class, for many devices).
SelectorResult DeviceMatchesCompiled(const DraDevice& device,
                                     const std::vector<CompiledSelector>& selectors);
std::vector<CompiledSelector> CompileSelectors(const std::vector<std::string>& expressions);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DRA_SELECTOR_H_
