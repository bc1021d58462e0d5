// Shared pieces of the live DRA tests (dra_source_test.cc, serve_dra_live_test.cc): a second
// ResourceClaim beside the captured one (test/testdata/dra/list-resourceclaims.v1.json), first
// pending and then allocated the captured slice's 3g.40gb MIG device for a pod, in the v1 or
// the v1beta1 shape.
#ifndef GPU_TENANCY_TEST_KUBE_DRA_TEST_OBJECTS_H_
#define GPU_TENANCY_TEST_KUBE_DRA_TEST_OBJECTS_H_

#include <string>

#include "absl/strings/str_cat.h"

namespace dra_test_objects {

inline constexpr char kTrainingClaim[] = "tenant-a-training";
inline constexpr char kTrainingDevice[] = "gpu-0-mig-3g40gb-9-4";
inline constexpr char kTrainingUuid[] = "MIG-8949ea7d-9166-53ce-9bac-6c58262addf9";
inline constexpr char kCapturedClaim[] = "tenant-a-inference";
inline constexpr char kCapturedUuid[] = "MIG-4d806f22-346a-5a1d-ac01-86b505cdf485";

// The claim as the resourceclaim controller creates it; with `allocated`, as kube-scheduler's
// PreBind leaves it (allocation and reservedFor the pod "training").
inline std::string TrainingClaimJson(bool allocated, const std::string& version = "v1") {
  const std::string request =
      version == "v1beta1"
          ? R"({"name":"mig","deviceClassName":"mig.nvidia.com","allocationMode":"ExactCount","count":1})"
          : R"({"name":"mig","exactly":{"deviceClassName":"mig.nvidia.com","allocationMode":"ExactCount","count":1}})";
  std::string status = "{}";
  if (allocated) {
    status = absl::StrCat(
        R"({"allocation":{"devices":{"results":[{"request":"mig","driver":"gpu.nvidia.com",)",
        R"("pool":"node-a","device":")", kTrainingDevice, R"("}]},)",
        R"("nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name",)",
        R"("operator":"In","values":["node-a"]}]}]}},)",
        R"("reservedFor":[{"resource":"pods","name":"training","uid":"uid-training"}]})");
  }
  return absl::StrCat(R"({"apiVersion":"resource.k8s.io/)", version,
                      R"(","kind":"ResourceClaim","metadata":{"name":")", kTrainingClaim,
                      R"(","namespace":"team-a","uid":"uid-tenant-a-training"},)",
                      R"("spec":{"devices":{"requests":[)", request, R"(]}},"status":)", status,
                      "}");
}

}  // namespace dra_test_objects

#endif  // GPU_TENANCY_TEST_KUBE_DRA_TEST_OBJECTS_H_
