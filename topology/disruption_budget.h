// PodDisruptionBudgets as preemption weighs them. kube-scheduler prefers victims whose eviction
// leaves every budget intact, and among candidate nodes the one whose victims break the fewest
// budgets; an extender that changes the victims must count the same way, or the scheduler
// compares our sets against its own on unequal terms.
//
// The count, as kube-scheduler's default preemption makes it: walking the potential victims in
// order, each budget of the pod's namespace whose selector matches the pod's labels (a budget
// with an empty selector matches nothing, a pod without labels matches no budget) and that does
// not already list the pod as disrupted loses one allowed disruption; a pod that takes any
// budget below zero violates it.
#ifndef GPU_TENANCY_TOPOLOGY_DISRUPTION_BUDGET_H_
#define GPU_TENANCY_TOPOLOGY_DISRUPTION_BUDGET_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/facts.h"

namespace topology {

// One requirement of a label selector's matchExpressions.
struct LabelRequirement {
  enum class Op { kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;
  bool operator==(const LabelRequirement&) const = default;
};

struct LabelSelector {
  Labels match_labels;
  std::vector<LabelRequirement> match_expressions;
  bool empty() const { return match_labels.empty() && match_expressions.empty(); }
  bool Matches(const Labels& labels) const;
  bool operator==(const LabelSelector&) const = default;
};

struct DisruptionBudget {
  std::string namespace_name;
  std::string name;
  LabelSelector selector;
  int32_t disruptions_allowed = 0;                    // status.disruptionsAllowed
  std::set<std::string, std::less<>> disrupted_pods;  // status.disruptedPods, by pod name
  bool operator==(const DisruptionBudget&) const = default;
};

// A pod as the count sees it.
struct BudgetedPod {
  absl::string_view namespace_name;
  absl::string_view name;
  const Labels* labels = nullptr;
};

// For each of `pods`, in order, whether evicting it (after the ones before it) violates a
// budget.
std::vector<bool> BudgetViolations(const std::vector<BudgetedPod>& pods,
                                   const std::vector<DisruptionBudget>& budgets);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DISRUPTION_BUDGET_H_
