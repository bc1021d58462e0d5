// What bench/dra_floor.cc sends and stores: a DRA cluster shaped like NVIDIA's driver publishes
// it (nodes whose ResourceSlices offer whole GPUs, the chart's DeviceClasses), and, per pod of
// the load, the AdmissionReviews kube-apiserver sends for a pod whose claim comes from a
// ResourceClaimTemplate: the pod's CREATE and then, once kube-controller-manager stamps the
// claim out, the claim's, each to the mutating and then the validating webhook. The reviews are
// the captured v1.36 ones in test/testdata/dra/ with names, UIDs and the claim spec replaced.
#ifndef GPU_TENANCY_BENCH_DRA_FLOOR_OBJECTS_H_
#define GPU_TENANCY_BENCH_DRA_FLOOR_OBJECTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rapidjson/document.h"

namespace bench::dra_floor {

// Two tenants that differ only in a claim quota: `open` (namespace team-open) and `metered`
// (team-quota).
inline constexpr char kPolicy[] = R"(tiers:
  - name: standard
    modes: [exclusive, timeslice, mps, mig]
tenants:
  - name: open
    tier: standard
    namespaces: [team-open]
    limits: {gpuMemoryPerPod: 80Gi}
  - name: metered
    tier: standard
    namespaces: [team-quota]
    limits: {gpuMemoryPerPod: 80Gi}
    quota: {gpus: 1000000}
unknownTenant: deny
)";

inline constexpr char kTemplateName[] = "gpu-80gi";
inline constexpr char kClaimRequest[] = "gpu";

std::string NodeJson(int node);
std::string NodeName(int node);
// One slice of node `node` with `gpus` whole H100s, each with the attributes NVIDIA's driver
// publishes (type, uuid, productName, brand, architecture, versions, PCI bus ID, index) and its
// memory capacity.
std::string GpuSliceJson(int node, int gpus);

// One pod's reviews, in the order kube-apiserver sends them, and what it stores.
struct PodLoad {
  std::string pod_name, claim_name;
  std::string pod_mutate, pod_validate, claim_mutate, claim_validate;  // AdmissionReview bodies
  std::string pod_json, claim_json;  // the objects as stored (mutated)
  std::string pod_status_patch;      // kube-controller-manager's resourceClaimStatuses
  std::string claim_status_patch;    // kube-scheduler's allocation and reservedFor
};

class ReviewFactory {
 public:
  // Reads the captured reviews under `testdata_dir` (test/testdata).
  static absl::StatusOr<ReviewFactory> Load(const std::string& testdata_dir);

  // The ResourceClaimTemplate the pods name, as a CREATE review of namespace `ns`, and the
  // object itself in that namespace.
  std::string TemplateReview(const std::string& ns, const std::string& uid) const;
  rapidjson::Document TemplateObject(const std::string& ns) const;

  // The mutating webhook's JSON Patch for a namespace's pods, claims and template, applied to
  // what the validating webhook gets and to what is stored (as kube-apiserver does). Empty
  // arrays when there is none (a webhook that mutates nothing).
  struct Patches {
    rapidjson::Document pod{rapidjson::kArrayType}, claim{rapidjson::kArrayType},
        claim_template{rapidjson::kArrayType};
  };

  // The load of pod `pod_name` in `ns`, whose claim is allocated device `device` of `node`.
  absl::StatusOr<PodLoad> Make(const std::string& ns, const std::string& pod_name,
                               const Patches& patches, int node, int device) const;
  // The claim object of a pod (from the template, before any claim patch), for a sample review.
  std::string ClaimReview(const std::string& ns, const std::string& pod_name,
                          const std::string& uid, const rapidjson::Value* template_spec) const;
  std::string PodReview(const std::string& ns, const std::string& pod_name,
                        const std::string& uid) const;

 private:
  ReviewFactory() = default;
  rapidjson::Document pod_review_, claim_review_, template_review_;
  rapidjson::Document template_;
};

// The JSON Patch in an AdmissionReview reply (response.patch, base64), or an empty array.
absl::StatusOr<rapidjson::Document> PatchOfReply(const std::string& reply);

}  // namespace bench::dra_floor

#endif  // GPU_TENANCY_BENCH_DRA_FLOOR_OBJECTS_H_
