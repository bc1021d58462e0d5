// soak's checks of each reply: what a well-formed filter, prioritize and admission reply look
// like. Each returns "" when the reply is what we expect, else what is wrong with it.
#ifndef GPU_TENANCY_BENCH_SOAK_CHECKS_H_
#define GPU_TENANCY_BENCH_SOAK_CHECKS_H_

#include <string>
#include <vector>

#include "rapidjson/document.h"

namespace soak {

struct FilterView {
  std::vector<std::string> kept;
  std::vector<std::string> failed;
};

// A filter reply must have no Error, and every candidate node must be either kept or failed
// (with a reason), exactly once.
std::string CheckFilter(const rapidjson::Document& doc, const std::vector<std::string>& names,
                        FilterView* out);

// A HostPriorityList with one entry per candidate, in order, scores within kube-scheduler's
// extender range 0..10 (MaxExtenderPriority). `best` (if set) gets the top-scored node.
std::string CheckPrioritize(const rapidjson::Document& doc, const std::vector<std::string>& names,
                            std::string* best);

// An AdmissionReview response for `uid` that allows or denies (a denial with a message) as
// expected and carries a JSON Patch exactly when one is expected.
std::string CheckReview(const rapidjson::Document& doc, const std::string& uid, bool allowed,
                        bool patched);

}  // namespace soak

#endif  // GPU_TENANCY_BENCH_SOAK_CHECKS_H_
