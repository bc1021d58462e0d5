// Hostile rows that are valid JSON but not a valid request: wrong types and missing wrapper keys,
// duplicate keys, absurd quantities and annotations.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test/server/hostile_cases.h"

namespace hostile_test {

void AddWrongTypeCases(const std::vector<Valid>& valid, std::vector<Case>& cases) {
  // Wrong types for every wrapper key.
  const std::vector<std::pair<std::string, std::string>> wrong = {
      {"string", "\"x\""},       {"number", "12345678901234567890"},
      {"array", "[1,\"a\",{}]"}, {"object", "{\"a\":1}"},
      {"bool", "true"},          {"null", "null"},
      {"negative", "-1"},
  };
  const std::vector<std::pair<std::string, std::vector<std::vector<std::string>>>> keys = {
      {"filter",
       {{"Pod"},
        {"Nodes"},
        {"NodeNames"},
        {"Pod", "metadata"},
        {"Pod", "spec"},
        {"Pod", "metadata", "uid"},
        {"Pod", "metadata", "annotations"}}},
      {"prioritize", {{"Pod"}, {"Nodes"}, {"NodeNames"}}},
      {"bind", {{"PodName"}, {"PodNamespace"}, {"PodUID"}, {"Node"}}},
      {"validate",
       {{"apiVersion"},
        {"kind"},
        {"request"},
        {"request", "uid"},
        {"request", "object"},
        {"request", "namespace"},
        {"request", "operation"},
        {"request", "kind"},
        {"request", "dryRun"},
        {"request", "object", "spec"},
        {"request", "object", "metadata"}}},
      {"mutate",
       {{"request"}, {"request", "uid"}, {"request", "object"}, {"request", "object", "spec"}}},
  };
  for (const Valid& v : valid) {
    for (const auto& [tag, paths] : keys) {
      if (tag != v.tag) continue;
      for (const std::vector<std::string>& path : paths) {
        std::string key;
        for (const std::string& p : path) absl::StrAppend(&key, key.empty() ? "" : "_", p);
        for (const auto& [wtag, json] : wrong) {
          std::string body = Replace(v.body, path, json);
          if (body.empty()) continue;
          cases.push_back({absl::StrCat("wrong_type_", v.tag, "_", key, "_", wtag), v.route,
                           Request(v.route, body), Transport::kHttps, true});
        }
        std::string missing = Replace(v.body, path, "", /*remove=*/true);
        if (!missing.empty()) {
          cases.push_back({absl::StrCat("missing_", v.tag, "_", key), v.route,
                           Request(v.route, missing), Transport::kHttps, true});
        }
      }
    }
  }
}

void AddDuplicateKeyCases(const std::vector<Valid>& valid, std::vector<Case>& cases) {
  // Duplicate keys.
  for (const Valid& v : valid) {
    for (const std::string& dup : {std::string("\"Pod\":\"x\","), std::string("\"request\":1,"),
                                   std::string("\"NodeNames\":{},"), std::string("\"uid\":7,")}) {
      std::string body = v.body;
      body.insert(1, dup);
      cases.push_back({absl::StrCat("duplicate_", v.tag, "_", cases.size()), v.route,
                       Request(v.route, body), Transport::kHttps, true});
    }
  }
}

void AddQuantityCases(const std::vector<Valid>& valid, std::vector<Case>& cases) {
  // Absurd quantities and annotations in well-formed pods.
  const std::vector<std::pair<std::string, std::string>> quantities = {
      {"exp_huge", "1e999999"},
      {"ei_huge", "99999999999999999999Ei"},
      {"minus_one", "-1"},
      {"negative_mig", "-5"},
      {"tiny", "0.0000000001"},
      {"nan", "NaN"},
      {"empty", ""},
      {"exp_negative", "1e-999999"},
      {"int64_max", "9223372036854775807"},
      {"int64_over", "9223372036854775808"},
      {"milli", "500m"},
      {"suffix_junk", "1Qi"},
  };
  for (const auto& [tag, q] : quantities) {
    for (const std::string& resource :
         {std::string("nvidia.com/gpu"), std::string("nvidia.com/mig-3g.40gb"),
          std::string("nvidia.com/gpu.shared")}) {
      std::string body = kFilterBody;
      std::string limits = absl::StrCat("{\"", resource, "\":\"", q, "\"}");
      body = Replace(body, {"Pod", "spec"},
                     absl::StrCat("{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":",
                                  limits, ",\"requests\":", limits, "}}]}"));
      std::string rtag = resource == "nvidia.com/gpu"                ? "gpu"
                         : resource.find("mig") != std::string::npos ? "mig"
                                                                     : "shared";
      cases.push_back({absl::StrCat("quantity_filter_", rtag, "_", tag), "/extender/filter",
                       Request("/extender/filter", body), Transport::kHttps, true});
    }
    std::string annotated =
        Replace(kFilterBody, {"Pod", "metadata", "annotations"},
                absl::StrCat("{\"gpu-tenancy.io/gpu-memory\":\"", q,
                             "\",\"gpu-tenancy.io/scheduling-policy\":\"", q, "\"}"));
    cases.push_back({absl::StrCat("annotation_filter_", tag), "/extender/filter",
                     Request("/extender/filter", annotated), Transport::kHttps, true});
    for (const Valid& v : valid) {
      if (v.tag != "validate" && v.tag != "mutate") continue;
      std::string body = Replace(v.body, {"request", "object", "metadata", "annotations"},
                                 absl::StrCat("{\"gpu-tenancy.io/gpu-memory\":\"", q, "\"}"));
      cases.push_back({absl::StrCat("annotation_", v.tag, "_", tag), v.route,
                       Request(v.route, body), Transport::kHttps, true});
    }
  }
  // Raw JSON numbers where strings belong.
  cases.push_back(
      {"number_huge_quantity", "/extender/filter",
       Request(
           "/extender/filter",
           Replace(kFilterBody, {"Pod", "spec"},
                   R"({"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":1}}}]})")),
       Transport::kHttps, true});
  {
    std::string body = kFilterBody;
    size_t at = body.find("\"1\"");
    body.replace(at, 3, "1e999999");
    cases.push_back({"number_1e999999_raw", "/extender/filter", Request("/extender/filter", body)});
  }
}

}  // namespace hostile_test
