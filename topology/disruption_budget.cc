#include "topology/disruption_budget.h"

#include <algorithm>

namespace topology {

bool LabelSelector::Matches(const Labels& labels) const {
  for (const auto& [key, value] : match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const LabelRequirement& r : match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    auto listed = [&] {
      return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    };
    switch (r.op) {
      case LabelRequirement::Op::kIn:
        if (!listed()) return false;
        break;
      case LabelRequirement::Op::kNotIn:
        if (listed()) return false;
        break;
      case LabelRequirement::Op::kExists:
        if (!has) return false;
        break;
      case LabelRequirement::Op::kDoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

std::vector<bool> BudgetViolations(const std::vector<BudgetedPod>& pods,
                                   const std::vector<DisruptionBudget>& budgets) {
  std::vector<int64_t> allowed;
  allowed.reserve(budgets.size());
  for (const DisruptionBudget& b : budgets) allowed.push_back(b.disruptions_allowed);
  std::vector<bool> violates(pods.size(), false);
  for (size_t p = 0; p < pods.size(); ++p) {
    const BudgetedPod& pod = pods[p];
    if (!pod.labels || pod.labels->empty()) continue;
    for (size_t i = 0; i < budgets.size(); ++i) {
      const DisruptionBudget& b = budgets[i];
      if (b.namespace_name != pod.namespace_name || b.selector.empty() ||
          !b.selector.Matches(*pod.labels)) {
        continue;
      }
      // Already being disrupted: the API server has counted it, so it costs nothing more.
      if (b.disrupted_pods.count(pod.name)) continue;
      if (--allowed[i] < 0) violates[p] = true;
    }
  }
  return violates;
}

}  // namespace topology
