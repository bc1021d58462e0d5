// Test support, part of the kube-apiserver emulation (fake_apiserver.h): the labelSelector and
// fieldSelector query parameters of lists and watches. Label selectors take =, ==, !=, in,
// notin, exists and !exists; field selectors =, == and != on the fields kube-apiserver indexes
// for each resource (anything else is 400 "field label not supported").
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_SELECTORS_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_SELECTORS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rapidjson/document.h"
#include "test/support/fake_apiserver.h"

namespace testing_support::apiserver {

struct Requirement {
  enum Op { kEq, kNotEq, kExists, kNotExists, kIn, kNotIn } op = kEq;
  std::string key;
  std::vector<std::string> values;
};

struct Selector {
  std::vector<Requirement> labels;
  std::vector<Requirement> fields;
  bool empty() const { return labels.empty() && fields.empty(); }
};

// InvalidArgument with kube-apiserver's message for a term it cannot parse.
absl::StatusOr<std::vector<Requirement>> ParseLabelSelector(absl::string_view text);
absl::StatusOr<std::vector<Requirement>> ParseFieldSelector(Resource resource,
                                                            absl::string_view text);
// Both query parameters at once, as lists and watches read them.
absl::StatusOr<Selector> ParseSelector(Resource resource, absl::string_view label_selector,
                                       absl::string_view field_selector);

bool Matches(const Selector& sel, const rapidjson::Value& obj);
// `json` is a stored object; true for an empty selector without parsing.
bool MatchesJson(const Selector& sel, const std::string& json);

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_SELECTORS_H_
