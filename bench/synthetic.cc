#include "bench/synthetic.h"

#include <cstdint>
#include <cstdio>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace bench {
namespace {

constexpr size_t kTargetNodeBytes = 18 * 1024;

// A deterministic 64-hex-digit digest, so image entries look like real ones.
std::string Digest(uint64_t seed) {
  std::string out;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int i = 0; i < 4; ++i) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(x));
    out += buf;
  }
  return out;
}

std::string Labels(int index, NodeKind kind) {
  std::vector<std::string> l = {
      absl::StrCat(R"("kubernetes.io/hostname":")", NodeName(index), "\""),
      R"("kubernetes.io/os":"linux")",
      R"("kubernetes.io/arch":"amd64")",
      R"("beta.kubernetes.io/arch":"amd64")",
      R"("beta.kubernetes.io/os":"linux")",
      R"("node.kubernetes.io/instance-type":"p5.48xlarge")",
      absl::StrCat(R"("topology.kubernetes.io/zone":"zone-)", index % 3, "\""),
      R"("topology.kubernetes.io/region":"region-1")",
      R"("feature.node.kubernetes.io/cpu-cpuid.AVX512F":"true")",
      R"("feature.node.kubernetes.io/cpu-model.vendor_id":"Intel")",
      R"("feature.node.kubernetes.io/kernel-version.full":"5.15.0-91-generic")",
      R"("feature.node.kubernetes.io/pci-10de.present":"true")",
      R"("feature.node.kubernetes.io/system-os_release.ID":"ubuntu")",
      R"("feature.node.kubernetes.io/system-os_release.VERSION_ID":"22.04")",
      R"("nvidia.com/cuda.driver.major":"535")",
      R"("nvidia.com/cuda.driver.minor":"104")",
      R"("nvidia.com/cuda.driver.rev":"12")",
      R"("nvidia.com/cuda.runtime.major":"12")",
      R"("nvidia.com/cuda.runtime.minor":"2")",
      R"("nvidia.com/gfd.timestamp":"1732900000")",
      R"("nvidia.com/gpu.compute.major":"9")",
      R"("nvidia.com/gpu.compute.minor":"0")",
      R"("nvidia.com/gpu.count":"8")",
      R"("nvidia.com/gpu.deploy.container-toolkit":"true")",
      R"("nvidia.com/gpu.deploy.device-plugin":"true")",
      R"("nvidia.com/gpu.deploy.dcgm-exporter":"true")",
      R"("nvidia.com/gpu.deploy.gpu-feature-discovery":"true")",
      R"("nvidia.com/gpu.family":"hopper")",
      R"("nvidia.com/gpu.machine":"p5.48xlarge")",
      R"("nvidia.com/gpu.present":"true")",
  };
  switch (kind) {
    case NodeKind::kMig:
      l.insert(
          l.end(),
          {R"("nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3")",
           R"("nvidia.com/gpu.memory":"81559")", R"("nvidia.com/gpu.replicas":"0")",
           R"("nvidia.com/mig.capable":"true")", R"("nvidia.com/mig.strategy":"mixed")",
           R"("nvidia.com/mig.config":"tenancy-3-2-1-1")",
           R"("nvidia.com/mig.config.state":"success")", R"("gpu-tenancy.io/pool":"gpu-mig")"});
      for (auto [p, count, mem, sm] :
           {std::tuple{"3g.40gb", 8, 40448, 60}, std::tuple{"2g.20gb", 8, 20096, 32},
            std::tuple{"1g.10gb", 16, 9984, 16}}) {
        l.push_back(absl::StrCat(R"("nvidia.com/mig-)", p, R"(.count":")", count, "\""));
        l.push_back(absl::StrCat(R"("nvidia.com/mig-)", p, R"(.memory":")", mem, "\""));
        l.push_back(absl::StrCat(R"("nvidia.com/mig-)", p, R"(.multiprocessors":")", sm, "\""));
        l.push_back(
            absl::StrCat(R"("nvidia.com/mig-)", p, R"(.engines.copy":")", sm / 16 + 1, "\""));
        l.push_back(absl::StrCat(R"("nvidia.com/mig-)", p, R"(.slices.gi":")", p[0] - '0', "\""));
        l.push_back(absl::StrCat(R"("nvidia.com/mig-)", p, R"(.slices.ci":")", p[0] - '0', "\""));
      }
      break;
    case NodeKind::kTimeSliced:
      l.insert(l.end(),
               {R"("nvidia.com/gpu.product":"NVIDIA-A100-SXM4-40GB")",
                R"("nvidia.com/gpu.memory":"40960")", R"("nvidia.com/gpu.replicas":"4")",
                R"("nvidia.com/gpu.sharing-strategy":"time-slicing")",
                R"("nvidia.com/mig.capable":"false")", R"("gpu-tenancy.io/pool":"gpu-timeslice")"});
      break;
    case NodeKind::kExclusive:
      l.insert(l.end(),
               {R"("nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3")",
                R"("nvidia.com/gpu.memory":"81559")", R"("nvidia.com/gpu.replicas":"1")",
                R"("nvidia.com/gpu.sharing-strategy":"none")", R"("nvidia.com/mig.capable":"true")",
                R"("gpu-tenancy.io/pool":"gpu-exclusive")"});
      break;
  }
  return absl::StrCat("{", absl::StrJoin(l, ","), "}");
}

std::string GpuResources(NodeKind kind) {
  switch (kind) {
    case NodeKind::kMig:
      return R"("nvidia.com/mig-3g.40gb":"8","nvidia.com/mig-2g.20gb":"8","nvidia.com/mig-1g.10gb":"16")";
    case NodeKind::kTimeSliced:
      return R"("nvidia.com/gpu.shared":"32")";
    case NodeKind::kExclusive:
      return R"("nvidia.com/gpu":"8")";
  }
  return "";
}

std::string Taints(NodeKind kind) {
  switch (kind) {
    case NodeKind::kMig:
      return R"("taints":[{"key":"gpu-tenancy.io/pool","value":"gpu-mig","effect":"NoSchedule"}],)";
    case NodeKind::kTimeSliced:
      return R"("taints":[{"key":"gpu-tenancy.io/pool","value":"gpu-timeslice","effect":"NoSchedule"}],)";
    case NodeKind::kExclusive:
      return "";
  }
  return "";
}

std::string Condition(const char* type, const char* status, const char* reason) {
  return absl::StrCat(
      R"({"type":")", type, R"(","status":")", status,
      R"(","lastHeartbeatTime":"2026-11-30T10:00:00Z","lastTransitionTime":"2026-11-01T10:00:00Z","reason":")",
      reason, R"(","message":"kubelet reports )", reason, R"("})");
}

std::string Container(const std::string& name, const std::string& image,
                      const std::string& resources) {
  return absl::StrCat(R"({"name":")", name, R"(","image":")", image,
                      R"(","imagePullPolicy":"IfNotPresent","resources":{"limits":)", resources,
                      R"(,"requests":)", resources, "}}");
}

}  // namespace

NodeKind KindOf(int index) {
  int r = index % 10;
  if (r < 5) return NodeKind::kMig;
  if (r < 8) return NodeKind::kTimeSliced;
  return NodeKind::kExclusive;
}

std::string NodeName(int index) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "gpu-node-%05d", index);
  return buf;
}

std::string NodeJson(int index, bool with_type_meta) {
  NodeKind kind = KindOf(index);
  std::string name = NodeName(index);
  std::string gpu = GpuResources(kind);
  std::string head = absl::StrCat(
      "{", with_type_meta ? R"("apiVersion":"v1","kind":"Node",)" : "", R"("metadata":{"name":")",
      name, R"(","uid":"node-uid-)", Digest(index).substr(0, 24), R"(","resourceVersion":")",
      1000000 + index, R"(","creationTimestamp":"2026-11-01T10:00:00Z","labels":)",
      Labels(index, kind),
      R"(,"annotations":{"node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true",)",
      R"("nfd.node.kubernetes.io/feature-labels":"cpu-cpuid.AVX512F,cpu-model.vendor_id,kernel-version.full,pci-10de.present",)",
      R"("nfd.node.kubernetes.io/master.version":"v0.14.2"}},)", R"("spec":{)", Taints(kind),
      R"("podCIDR":"10.)", index / 250, ".", index % 250,
      R"(.0/24","providerID":"aws:///zone-a/i-)", Digest(index + 7).substr(0, 17), R"("},)",
      R"("status":{"capacity":{"cpu":"192","memory":"2097152Mi","pods":"110","ephemeral-storage":"3758096384Ki",)",
      gpu,
      R"(},"allocatable":{"cpu":"191","memory":"2064384Mi","pods":"110","ephemeral-storage":"3463790064Ki",)",
      gpu, R"(},"conditions":[)",
      absl::StrJoin({Condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                     Condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                     Condition("PIDPressure", "False", "KubeletHasSufficientPID"),
                     Condition("Ready", "True", "KubeletReady")},
                    ","),
      R"(],"addresses":[{"type":"InternalIP","address":"10.0.)", index / 250, ".", index % 250,
      R"("},{"type":"Hostname","address":")", name,
      R"("}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},"nodeInfo":{"machineID":")",
      Digest(index + 1).substr(0, 32), R"(","systemUUID":")", Digest(index + 2).substr(0, 32),
      R"(","bootID":")", Digest(index + 3).substr(0, 32),
      R"(","kernelVersion":"5.15.0-91-generic","osImage":"Ubuntu 22.04.3 LTS","containerRuntimeVersion":"containerd://1.7.2",)",
      R"("kubeletVersion":"v1.28.7","kubeProxyVersion":"v1.28.7","operatingSystem":"linux","architecture":"amd64"},)",
      R"("images":[)");
  // Pad with image entries, as a real node's status.images is about half its size.
  std::string images;
  for (int i = 0; head.size() + images.size() + 40 < kTargetNodeBytes; ++i) {
    std::string repo = absl::StrCat("registry.example.com/team-", i % 7, "/image-", i);
    if (i > 0) images += ",";
    absl::StrAppend(&images, R"({"names":[")", repo, "@sha256:", Digest(index * 131 + i), R"(",")",
                    repo, ":v1.", i, R"("],"sizeBytes":)", 100000000 + i * 7654321, "}");
  }
  return absl::StrCat(head, images, "]}}");
}

std::vector<std::string> PodsJson(int index) {
  NodeKind kind = KindOf(index);
  std::string node = NodeName(index);
  int gpu_pods = kind == NodeKind::kExclusive ? 4 : 6;
  std::vector<std::string> out;
  for (int j = 0; j < kPodsPerNode; ++j) {
    bool is_gpu = j < gpu_pods;
    std::string resources;
    const char* ns = "default";
    if (is_gpu) {
      ns = "research";
      switch (kind) {
        case NodeKind::kMig:
          resources = R"({"nvidia.com/mig-1g.10gb":"1","cpu":"4","memory":"16Gi"})";
          break;
        case NodeKind::kTimeSliced:
          resources = R"({"nvidia.com/gpu.shared":"1","cpu":"4","memory":"16Gi"})";
          break;
        case NodeKind::kExclusive:
          resources = R"({"nvidia.com/gpu":"1","cpu":"16","memory":"64Gi"})";
          break;
      }
    } else {
      if (j % 3 == 0) ns = "kube-system";
      resources = R"({"cpu":"100m","memory":"128Mi"})";
    }
    std::string name = absl::StrCat(is_gpu ? "train-" : "svc-", index, "-", j);
    out.push_back(absl::StrCat(
        R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name, R"(","namespace":")", ns,
        R"(","uid":"pod-)", index, "-", j, R"(","labels":{"app":")", is_gpu ? "trainer" : "web",
        R"(","pod-template-hash":"7d9f8c6b5"}},"spec":{"nodeName":")", node, R"(","containers":[)",
        Container(
            "main",
            is_gpu ? "registry.example.com/ml/trainer:2.1" : "registry.example.com/web/api:1.4",
            resources),
        R"(]},"status":{"phase":"Running"}})"));
  }
  return out;
}

std::string ClusterListJson(int nodes) {
  std::string out = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (const char* ns : {"research", "default", "kube-system"}) {
    absl::StrAppend(&out, R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")", ns,
                    R"(","labels":{"kubernetes.io/metadata.name":")", ns, R"("}}},)");
  }
  for (int i = 0; i < nodes; ++i) {
    absl::StrAppend(&out, NodeJson(i, true), ",");
  }
  for (int i = 0; i < nodes; ++i) {
    for (const std::string& pod : PodsJson(i)) absl::StrAppend(&out, pod, ",");
  }
  out.back() = ']';
  out += "}";
  return out;
}

std::string PermissivePolicyYaml() {
  return R"(tiers:
  - name: trusted
    modes: [exclusive, mig, mig-shared, mps, timeslice]
tenants:
  - name: research
    tier: trusted
    namespaces: [research]
  - name: team-a
    tier: trusted
    namespaces: [team-a]
    quota:
      gpus: 1000
      migComputeSlices: 7000
unknownTenant: trusted
poolLabel: gpu-tenancy.io/pool
pools:
  - name: gpu-mig
    mode: mig
    taint: {key: gpu-tenancy.io/pool, value: gpu-mig, effect: NoSchedule}
  - name: gpu-timeslice
    mode: timeslice
    taint: {key: gpu-tenancy.io/pool, value: gpu-timeslice, effect: NoSchedule}
  - name: gpu-exclusive
    mode: exclusive
scoring: binpack
)";
}

namespace {
std::string PendingPod(const std::string& name, const std::string& limits) {
  return absl::StrCat(R"({"metadata":{"name":")", name,
                      R"(","namespace":"research","uid":"pending-)", name,
                      R"(","labels":{"app":"bench"}},"spec":{"containers":[)",
                      Container("main", "registry.example.com/ml/infer:3.0", limits),
                      R"(],"schedulerName":"default-scheduler"},"status":{"phase":"Pending"}})");
}
}  // namespace

std::string MigPodJson() {
  return PendingPod("mig-infer", R"({"nvidia.com/mig-1g.10gb":"1","cpu":"2","memory":"8Gi"})");
}

std::string SharedPodJson() {
  return PendingPod("shared-notebook", R"({"nvidia.com/gpu.shared":"1","cpu":"2","memory":"8Gi"})");
}

std::string AdmissionReviewJson() {
  std::vector<std::string> env, annotations, volumes, mounts;
  for (int i = 0; i < 150; ++i) {
    env.push_back(absl::StrCat(R"({"name":"APP_SETTING_)", i,
                               R"(","value":"value-for-setting-number-)", i, "-",
                               Digest(i).substr(0, 24), R"("})"));
  }
  for (int i = 0; i < 40; ++i) {
    annotations.push_back(
        absl::StrCat(R"("example.com/annotation-)", i, R"(":")", Digest(1000 + i), "\""));
  }
  for (int i = 0; i < 30; ++i) {
    volumes.push_back(absl::StrCat(R"({"name":"config-)", i,
                                   R"(","configMap":{"name":"app-config-)", i,
                                   R"(","defaultMode":420}})"));
    mounts.push_back(absl::StrCat(R"({"name":"config-)", i, R"(","mountPath":"/etc/app/config-)", i,
                                  R"(","readOnly":true})"));
  }
  std::string limits = R"({"nvidia.com/mig-1g.10gb":"1","cpu":"2","memory":"8Gi"})";
  return absl::StrCat(
      R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"a6f9752d-63da-4a05-bb99-5816e5685f28",)",
      R"("kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},)",
      R"("requestKind":{"group":"","version":"v1","kind":"Pod"},"requestResource":{"group":"","version":"v1","resource":"pods"},)",
      R"("name":"big-pod","namespace":"research","operation":"CREATE",)",
      R"("userInfo":{"username":"system:serviceaccount:kube-system:replicaset-controller","groups":["system:serviceaccounts","system:authenticated"]},)",
      R"("object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"big-pod","namespace":"research","labels":{"app":"bench"},"annotations":{)",
      absl::StrJoin(annotations, ","), R"(}},"spec":{"volumes":[)", absl::StrJoin(volumes, ","),
      R"(],"containers":[{"name":"main","image":"registry.example.com/ml/infer:3.0","env":[)",
      absl::StrJoin(env, ","), R"(],"resources":{"limits":)", limits, R"(,"requests":)", limits,
      R"(},"volumeMounts":[)", absl::StrJoin(mounts, ","),
      R"(]}],"restartPolicy":"Always","schedulerName":"default-scheduler"},"status":{"phase":"Pending"}},)",
      R"("oldObject":null,"dryRun":false,"options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}}})");
}

}  // namespace bench
