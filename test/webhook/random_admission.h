// Admission requests for the matchConditions tests: a Pod or a claim (JSON) with the namespace
// and operation it arrives with, and random ones from a seed, covering every field the webhook
// rules and the mutation read (resources of every GPU family, escape hatches, pool selectors,
// PriorityClasses, claims and their DRA shapes).
#ifndef GPU_TENANCY_TEST_WEBHOOK_RANDOM_ADMISSION_H_
#define GPU_TENANCY_TEST_WEBHOOK_RANDOM_ADMISSION_H_

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace webhook_test {

// Namespaces of each kind of tenant in the test policy (and "nobody", of none).
inline const std::vector<std::string> kNamespaces = {"acme", "research", "gpu-ops", "nobody",
                                                     "bank-ns"};

struct Request {
  std::string name;
  std::string object;  // JSON
  std::string ns = "acme";
  std::string kind = "Pod";
  std::string old_object;  // JSON; UPDATE when set
  std::string sub_resource;
  std::string user_info;  // JSON request.userInfo; none (an anonymous caller) when empty
};

inline Request MakeRequest(std::string name, std::string object, std::string ns,
                           std::string kind = "Pod") {
  Request r;
  r.name = std::move(name);
  r.object = std::move(object);
  r.ns = std::move(ns);
  r.kind = std::move(kind);
  return r;
}

// Random pods and claims, from a fixed seed.
class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  Request Pod(int i) {
    Request r;
    r.name = absl::StrCat("random pod ", i);
    r.ns = Pick(kNamespaces);
    std::vector<std::string> spec;
    std::vector<std::string> containers;
    for (int c = 0, n = Int(1, 2); c < n; ++c) containers.push_back(Container("c", c));
    spec.push_back(absl::StrCat("\"containers\":[", absl::StrJoin(containers, ","), "]"));
    if (Chance(0.2)) spec.push_back(absl::StrCat("\"initContainers\":[", Container("i", 0), "]"));
    const bool ephemeral = Chance(0.1);
    if (Chance(0.15)) {
      spec.push_back(absl::StrCat("\"volumes\":[{\"name\":\"v\",\"hostPath\":{\"path\":\"",
                                  HostPath(), "\"}}]"));
    }
    if (Chance(0.05)) spec.push_back("\"hostIPC\":true");
    if (Chance(0.05)) spec.push_back("\"hostIPC\":false");
    if (Chance(0.1)) {
      spec.push_back(absl::StrCat("\"nodeSelector\":{\"",
                                  Pick({"gpu-tenancy.io/pool", "kubernetes.io/os"}), "\":\"",
                                  Pick({"gpu-mig", "gpu-timeslice", "linux"}), "\"}"));
    }
    if (Chance(0.1)) {
      spec.push_back(absl::StrCat(
          "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
          "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"",
          Pick({"gpu-tenancy.io/pool", "zone"}), "\",\"operator\":\"In\",\"values\":[\"",
          Pick({"gpu-timeslice", "gpu-mig", "a"}), "\"]}]}]}}}"));
    }
    if (Chance(0.15)) {
      spec.push_back(absl::StrCat(
          "\"priorityClassName\":\"",
          Pick({"acme-low", "shared-high", "research-low", "system-cluster-critical"}), "\""));
    }
    // What kube-apiserver's Priority admission fills in from the class before any webhook.
    if (Chance(0.2)) {
      spec.push_back(absl::StrCat("\"priority\":", Pick({"0", "1000", "-5", "2000000000"})));
      if (Chance(0.5)) {
        spec.push_back(
            absl::StrCat("\"preemptionPolicy\":\"", Pick({"Never", "PreemptLowerPriority"}), "\""));
      }
    }
    if (Chance(0.1)) {
      spec.push_back(absl::StrCat("\"resourceClaims\":[{\"name\":\"x\",\"",
                                  Pick({"resourceClaimName", "resourceClaimTemplateName"}), "\":\"",
                                  Pick({"gpu", "nic", "missing"}), "\"}]"));
    }
    if (Chance(0.03)) {
      spec.push_back(
          absl::StrCat("\"overhead\":{\"", Pick({"cpu", "nvidia.com/gpu"}), "\":\"1\"}"));
    }
    const std::string annotations = Annotations();
    auto pod = [&](const std::string& annotations, bool with_ephemeral) {
      std::vector<std::string> s = spec;
      if (with_ephemeral) {
        s.push_back(absl::StrCat("\"ephemeralContainers\":[", Container("e", 0), "]"));
      }
      return absl::StrCat("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p", i,
                          "\",\"namespace\":\"", r.ns, "\"", annotations, "},\"spec\":{",
                          absl::StrJoin(s, ","), "}}");
    };
    r.object = pod(annotations, ephemeral);
    if (ephemeral && Chance(0.7)) {
      // kubectl debug: the subresource UPDATE that adds it.
      r.sub_resource = "ephemeralcontainers";
      r.old_object = pod(annotations, false);
    } else if (Chance(0.2)) {
      r.old_object = pod(Annotations(), ephemeral);  // an UPDATE: only metadata may change
    }
    return r;
  }

  Request Claim(int i) {
    Request r;
    r.name = absl::StrCat("random claim ", i);
    r.ns = Pick(kNamespaces);
    r.kind = Chance(0.3) ? "ResourceClaimTemplate" : "ResourceClaim";
    const std::string version = Pick({"v1", "v1beta1"});
    std::vector<std::string> requests;
    for (int q = 0, n = Int(1, 2); q < n; ++q) {
      const std::string name = absl::StrCat("r", q);
      if (version == "v1" && Chance(0.3)) {
        requests.push_back(absl::StrCat("{\"name\":\"", name, "\",\"firstAvailable\":[",
                                        Holder("a"), ",", Holder("b"), "]}"));
      } else if (version == "v1") {
        requests.push_back(absl::StrCat("{\"name\":\"", name, "\",\"exactly\":", Holder(""), "}"));
      } else {
        std::string flat = Holder("");
        flat.insert(1, absl::StrCat("\"name\":\"", name, "\","));
        requests.push_back(flat);
      }
    }
    std::string devices = absl::StrCat("\"requests\":[", absl::StrJoin(requests, ","), "]");
    if (Chance(0.3)) {
      absl::StrAppend(
          &devices, ",\"config\":[{\"opaque\":{\"driver\":\"",
          Pick({"gpu.nvidia.com", "nic.example.com"}),
          "\",\"parameters\":{\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":\"",
          Pick({"GpuConfig", "MigDeviceConfig"}), "\",\"sharing\":{\"strategy\":\"",
          Pick({"TimeSlicing", "MPS"}), "\"}}}}]");
    }
    std::string spec = absl::StrCat("{\"devices\":{", devices, "}}");
    if (r.kind == "ResourceClaimTemplate") spec = absl::StrCat("{\"spec\":", spec, "}");
    std::string annotations;
    if (Chance(0.1)) {
      annotations =
          ",\"annotations\":{\"resource.kubernetes.io/extended-resource-claim\":\"true\"}";
    }
    r.object = absl::StrCat("{\"apiVersion\":\"resource.k8s.io/", version, "\",\"kind\":\"", r.kind,
                            "\",\"metadata\":{\"name\":\"k", i, "\",\"namespace\":\"", r.ns, "\"",
                            annotations, "},\"spec\":", spec, "}");
    return r;
  }

 private:
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::string Pick(const std::vector<std::string>& from) {
    return from[static_cast<size_t>(Int(0, static_cast<int>(from.size()) - 1))];
  }

  std::string Resources() {
    std::vector<std::string> out;
    for (int n = Int(0, 2), k = 0; k < n; ++k) {
      out.push_back(absl::StrCat(
          "\"",
          Pick({"cpu", "memory", "nvidia.com/gpu", "nvidia.com/gpu.shared",
                "nvidia.com/mig-1g.10gb", "nvidia.com/mig-7g.80gb", "nvidia.com/mig-3g.40gb.shared",
                "nvidia.com/gpu.memory", "nvidia.com/mps-core", "nvidia.com/vendor-x",
                "example.com/vgpu", "example.com/gpu-mem", "example.com/nic",
                "deviceclass.resource.kubernetes.io/gpu.nvidia.com"}),
          "\":\"", Pick({"1", "2", "0", "500m", "40960"}), "\""));
    }
    return absl::StrJoin(out, ",");
  }

  std::string Container(const std::string& prefix, int index) {
    std::vector<std::string> fields = {absl::StrCat("\"name\":\"", prefix, index, "\""),
                                       "\"image\":\"busybox\""};
    if (Chance(0.5)) {
      fields.push_back(absl::StrCat("\"resources\":{\"", Pick({"requests", "limits"}), "\":{",
                                    Resources(), "}}"));
    }
    if (Chance(0.15)) {
      std::vector<std::string> sc;
      if (Chance(0.5)) sc.push_back(absl::StrCat("\"privileged\":", Pick({"true", "false"})));
      if (Chance(0.5)) {
        sc.push_back(absl::StrCat("\"capabilities\":{\"add\":[\"",
                                  Pick({"NET_ADMIN", "SYS_ADMIN", "sys_admin", "CAP_SYS_ADMIN",
                                        "ALL", "all", "SYS_PTRACE"}),
                                  "\"]}"));
      }
      fields.push_back(absl::StrCat("\"securityContext\":{", absl::StrJoin(sc, ","), "}"));
    }
    if (Chance(0.15)) {
      fields.push_back(
          absl::StrCat("\"env\":[{\"name\":\"",
                       Pick({"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
                             "CUDA_MPS_PIPE_DIRECTORY", "PATH", "nvidia_visible_devices"}),
                       "\",\"value\":\"", Pick({"all", "0", "/tmp/x"}), "\"}]"));
    }
    return absl::StrCat("{", absl::StrJoin(fields, ","), "}");
  }

  std::string HostPath() {
    std::string path = Chance(0.8) ? "/" : "";
    for (int n = Int(0, 3), k = 0; k < n; ++k) {
      absl::StrAppend(&path, k ? "/" : "",
                      Pick({"dev", "nvidia0", "nvidiactl", "dri", "run", "var", "tmp", "nvidia-mps",
                            "home", "data", ".", "..", ""}));
    }
    if (Chance(0.2)) path += "/";
    return path;
  }

  std::string Annotations() {
    if (Chance(0.7)) return "";
    return absl::StrCat(",\"annotations\":{\"", Pick({"gpu-tenancy.io/gpu-memory", "team"}),
                        "\":\"", Pick({"20Gi", "200Gi", "bad", "0"}), "\"}");
  }

  std::string Holder(const std::string& name) {
    std::vector<std::string> fields;
    if (!name.empty()) fields.push_back(absl::StrCat("\"name\":\"", name, "\""));
    fields.push_back(absl::StrCat(
        "\"deviceClassName\":\"",
        Pick({"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com",
              "compute-domain-default-channel.nvidia.com", "my-gpus", "nic.example.com"}),
        "\""));
    if (Chance(0.5)) fields.push_back(absl::StrCat("\"count\":", Int(1, 4)));
    if (Chance(0.1)) fields.push_back("\"allocationMode\":\"All\"");
    if (name.empty() && Chance(0.15)) fields.push_back("\"adminAccess\":true");
    if (Chance(0.2)) {
      fields.push_back(absl::StrCat(
          "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.nvidia.com'].profile "
          "== '",
          Pick({"7g.80gb", "1g.10gb"}), "'\"}}]"));
    }
    return absl::StrCat("{", absl::StrJoin(fields, ","), "}");
  }

  std::mt19937 rng_;
};

}  // namespace webhook_test

#endif  // GPU_TENANCY_TEST_WEBHOOK_RANDOM_ADMISSION_H_
