// gpu-tenancy plan: which isolation each workload gets and how to cut each card, written out as
// the configuration that does it (nvidia-smi commands, a mig-parted config and node labels, a
// device-plugin sharing config, pod resources, ResourceClaims and the policy's tenants).
//
// The decisions are topology::MakePlan's; this file only renders them. Every format is built
// from one JSON document, so text, YAML and JSON cannot disagree.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "common/plan_input.h"
#include "rapidjson/document.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"
#include "topology/planner.h"

namespace cmd {
namespace {

using rapidjson::Value;
using topology::GpuPlan;
using topology::GpuUse;
using topology::Mechanism;
using topology::Plan;
using topology::WorkloadPlan;

constexpr char kUsage[] =
    "usage: gpu-tenancy plan --input FILE [-o text|yaml|json]\n\n"
    "Sizes each workload's GPU memory, picks its isolation (MIG, whole GPU, time-slicing, MPS),\n"
    "packs MIG instances onto the fleet with valid placements only and writes the configuration.\n"
    "Input schema and a worked example: cmd/demo/plan-example.yaml.\n"
    "Exit codes: 0 a plan, 1 the workloads do not fit the fleet, 2 bad usage or input.\n";

constexpr char kZoneLabel[] = "topology.kubernetes.io/zone";
constexpr char kMemoryAnnotation[] = "gpu-tenancy.io/gpu-memory";
constexpr char kWorkloadLabel[] = "gpu-tenancy.io/workload";

// ---- Building the JSON document -----------------------------------------------------------------

class Builder {
 public:
  explicit Builder(rapidjson::Document::AllocatorType& a) : a_(a) {}

  Value Str(absl::string_view s) {
    Value v;
    v.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), a_);
    return v;
  }
  Value Int(int64_t n) { return Value(static_cast<int64_t>(n)); }
  Value Bool(bool b) { return Value(b); }
  Value Obj() { return Value(rapidjson::kObjectType); }
  Value Arr() { return Value(rapidjson::kArrayType); }

  void Set(Value& obj, absl::string_view key, Value v) { obj.AddMember(Str(key), v, a_); }
  void Set(Value& obj, absl::string_view key, absl::string_view s) { Set(obj, key, Str(s)); }
  void Set(Value& obj, absl::string_view key, const char* s) { Set(obj, key, Str(s)); }
  void Set(Value& obj, absl::string_view key, const std::string& s) { Set(obj, key, Str(s)); }
  void SetInt(Value& obj, absl::string_view key, int64_t n) { Set(obj, key, Int(n)); }
  void SetBool(Value& obj, absl::string_view key, bool b) { Set(obj, key, Bool(b)); }
  void Push(Value& arr, Value v) { arr.PushBack(v, a_); }
  void Push(Value& arr, absl::string_view s) { Push(arr, Str(s)); }
  Value Strings(const std::vector<std::string>& items) {
    Value arr = Arr();
    for (const std::string& s : items) Push(arr, s);
    return arr;
  }

 private:
  rapidjson::Document::AllocatorType& a_;
};

std::string Mi(int64_t mib) { return absl::StrCat(mib, "Mi"); }

std::string HolderName(const Plan& plan, const topology::Holder& h) {
  if (h.canary()) return "canary";
  const WorkloadPlan& w = plan.workloads[h.workload];
  if (w.replicas == 1) return w.spec.name;
  return absl::StrCat(w.spec.name, " #", h.replica + 1);
}

std::string ProfileArg(const topology::MigProfile& p) {
  return p.id ? absl::StrCat(*p.id) : p.name;
}

// The mig-devices map of one MIG GPU ("3g.40gb": 1, ...), largest first.
std::vector<std::pair<std::string, int>> MigDevices(const GpuPlan& gpu) {
  std::vector<std::pair<const topology::MigProfile*, int>> counts;
  for (const topology::PlannedInstance& inst : gpu.instances) {
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& c) { return c.first == inst.profile; });
    if (it == counts.end()) {
      counts.push_back({inst.profile, 1});
    } else {
      ++it->second;
    }
  }
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    if (a.first->memory_slices != b.first->memory_slices) {
      return a.first->memory_slices > b.first->memory_slices;
    }
    return a.first->compute_slices > b.first->compute_slices;
  });
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [p, n] : counts) out.push_back({p->name, n});
  return out;
}

std::string TrustName(topology::Trust t) {
  return t == topology::Trust::kUntrusted ? "untrusted" : "trusted";
}
std::string LatencyName(topology::Latency l) {
  return l == topology::Latency::kSla ? "sla" : "best-effort";
}

bool IsShared(Mechanism m) { return m == Mechanism::kTimeslice || m == Mechanism::kMps; }

std::string ClaimName(const WorkloadPlan& w) {
  return absl::StrCat(w.spec.name, IsShared(w.mechanism) ? "-shared-gpu" : "-gpu");
}

class PlanDocument {
 public:
  PlanDocument(const Plan& plan, rapidjson::Document& doc)
      : plan_(plan), doc_(doc), b_(doc.GetAllocator()) {}

  void Build() {
    doc_.SetObject();
    b_.Set(doc_, "summary", Summary());
    b_.Set(doc_, "workloads", Workloads());
    b_.Set(doc_, "gpus", Gpus());
    b_.Set(doc_, "nvidiaSmi", NvidiaSmi());
    BuildMigParted();
    b_.Set(doc_, "migParted", std::move(mig_parted_));
    BuildDevicePlugin();
    b_.Set(doc_, "devicePlugin", std::move(device_plugin_));
    b_.Set(doc_, "nodeLabels", NodeLabels());
    b_.Set(doc_, "pods", Pods());
    b_.Set(doc_, "resourceClaims", Claims());
    b_.Set(doc_, "policy", Policy());
    b_.Set(doc_, "warnings", b_.Strings(AllWarnings(plan_)));
  }

  static std::vector<std::string> AllWarnings(const Plan& plan) {
    std::vector<std::string> out;
    for (const WorkloadPlan& w : plan.workloads) {
      for (const std::string& s : w.warnings) out.push_back(s);
    }
    for (const std::string& s : plan.warnings) out.push_back(s);
    return out;
  }

 private:
  Value Summary() {
    Value s = b_.Obj();
    int saved = plan_.baseline_gpus - plan_.gpus_used;
    b_.SetInt(s, "gpusUsed", plan_.gpus_used);
    b_.SetInt(s, "gpusInFleet", static_cast<int64_t>(plan_.gpus.size()));
    b_.SetInt(s, "baselineGpus", plan_.baseline_gpus);
    b_.SetInt(s, "gpusSaved", saved);
    b_.SetInt(s, "baselineReplicaGpus", plan_.baseline_replica_gpus);
    b_.SetInt(s, "lowerBound", plan_.lower_bound);
    b_.SetBool(s, "optimal", plan_.gpus_used == plan_.lower_bound);
    int placed = 0;
    for (const WorkloadPlan& w : plan_.workloads) placed += w.mechanism != Mechanism::kVmBoundary;
    b_.Set(
        s, "baseline",
        absl::StrCat(
            "one whole GPU per workload: ", placed,
            " placed workloads, a multi-GPU replica counting its GPUs = ", plan_.baseline_gpus,
            " GPUs. That baseline is generous to the old way: "
            "one whole GPU per replica would take ",
            plan_.baseline_replica_gpus, ". Workloads that need a VM boundary are not counted."));
    std::string text = absl::StrCat(plan_.gpus_used, " GPUs used vs ", plan_.baseline_gpus,
                                    " for one GPU per workload");
    if (saved > 0 && plan_.baseline_gpus > 0) {
      absl::StrAppend(&text, ": ", saved, " saved (",
                      (saved * 200 + plan_.baseline_gpus) / (2 * plan_.baseline_gpus), "%)");
    }
    b_.Set(s, "text", text);
    return s;
  }

  Value Workloads() {
    Value arr = b_.Arr();
    for (const WorkloadPlan& w : plan_.workloads) {
      Value o = b_.Obj();
      b_.Set(o, "name", w.spec.name);
      b_.Set(o, "tenant", w.spec.tenant);
      b_.Set(o, "namespace", w.spec.namespace_name);
      b_.Set(o, "trust", TrustName(w.spec.trust));
      b_.Set(o, "latency", LatencyName(w.spec.latency));
      b_.SetBool(o, "training", w.spec.training);
      b_.SetInt(o, "replicas", w.replicas);
      b_.SetBool(o, "mirrored", w.spec.mirrored);
      Value zones = b_.Arr();
      if (w.spec.mirrored) {
        for (const std::string& z : w.replica_zones) b_.Push(zones, z);
      }
      b_.Set(o, "replicaZones", std::move(zones));
      b_.Set(o, "mechanism", topology::MechanismName(w.mechanism));
      if (w.gpu_type.empty()) {
        b_.Set(o, "gpu", Value());
      } else {
        b_.Set(o, "gpu", w.gpu_type);
      }
      if (w.profile) {
        b_.Set(o, "profile", w.profile->name);
      } else {
        b_.Set(o, "profile", Value());
      }
      b_.SetInt(o, "gpusPerReplica", w.gpus_per_replica);
      Value memory = b_.Obj();
      b_.Set(memory, "source", w.sizing.source);
      Value terms = b_.Arr();
      for (const topology::MemoryTerm& t : w.sizing.terms) {
        Value term = b_.Obj();
        b_.Set(term, "name", t.name);
        b_.SetInt(term, "bytes", t.bytes);
        b_.Set(term, "gib", topology::GiBText(t.bytes, true));
        b_.Set(term, "how", t.how);
        b_.Push(terms, std::move(term));
      }
      b_.Set(memory, "terms", std::move(terms));
      b_.SetInt(memory, "totalBytes", w.sizing.total_bytes);
      b_.SetInt(memory, "totalMiB", w.sizing.total_mib);
      b_.Set(memory, "total", topology::GiBText(w.sizing.total_bytes, true));
      b_.Set(o, "memory", std::move(memory));
      b_.Set(o, "rounding", w.rounding);
      b_.Set(o, "reasons", b_.Strings(w.reasons));
      b_.Set(o, "warnings", b_.Strings(w.warnings));
      b_.SetInt(o, "baselineGpus", w.baseline_gpus);
      b_.SetInt(o, "baselineReplicaGpus", w.baseline_replica_gpus);
      b_.Push(arr, std::move(o));
    }
    return arr;
  }

  Value HolderValue(const topology::Holder& h) {
    Value o = b_.Obj();
    if (h.canary()) {
      b_.Set(o, "workload", Value());
      b_.SetBool(o, "canary", true);
    } else {
      b_.Set(o, "workload", plan_.workloads[h.workload].spec.name);
      b_.SetInt(o, "replica", h.replica + 1);
      b_.SetBool(o, "canary", false);
    }
    return o;
  }

  Value Gpus() {
    Value arr = b_.Arr();
    for (const GpuPlan& g : plan_.gpus) {
      Value o = b_.Obj();
      b_.Set(o, "node", g.node);
      b_.Set(o, "zone", g.zone);
      b_.SetInt(o, "index", g.index);
      b_.Set(o, "gpu", g.gpu_type);
      if (g.memory_mib) {
        b_.SetInt(o, "memoryMiB", *g.memory_mib);
      } else {
        b_.Set(o, "memoryMiB", Value());
      }
      b_.Set(o, "use", topology::GpuUseName(g.use));
      Value instances = b_.Arr();
      for (const topology::PlannedInstance& inst : g.instances) {
        Value i = HolderValue(inst.holder);
        b_.Set(i, "profile", inst.profile->name);
        if (inst.profile->id) {
          b_.SetInt(i, "profileId", *inst.profile->id);
        } else {
          b_.Set(i, "profileId", Value());
        }
        b_.SetInt(i, "start", inst.start);
        b_.SetInt(i, "memorySlices", inst.profile->memory_slices);
        b_.SetInt(i, "computeSlices", inst.profile->compute_slices);
        b_.Push(instances, std::move(i));
      }
      b_.Set(o, "instances", std::move(instances));
      Value clients = b_.Arr();
      for (const topology::Holder& h : g.clients) b_.Push(clients, HolderValue(h));
      b_.Set(o, "clients", std::move(clients));
      if (g.use == GpuUse::kTimeslice || g.use == GpuUse::kMps) {
        b_.SetInt(o, "sharedMemoryMiB", g.shared_memory_mib);
      }
      if (g.use == GpuUse::kMig) {
        Value order = b_.Arr();
        for (const topology::MigProfile* p : g.create_order) b_.Push(order, ProfileArg(*p));
        b_.Set(o, "createOrder", std::move(order));
        b_.SetBool(o, "createOrderVerified", g.create_order_verified);
      }
      b_.Push(arr, std::move(o));
    }
    return arr;
  }

  Value NvidiaSmi() {
    Value arr = b_.Arr();
    for (const topology::NodePlan& n : plan_.nodes) {
      std::vector<std::string> commands;
      for (int gi : n.gpus) {
        const GpuPlan& g = plan_.gpus[gi];
        if (!g.model || g.use == GpuUse::kIdle) continue;
        if (g.use != GpuUse::kMig) {
          commands.push_back(absl::StrCat("nvidia-smi -i ", g.index, " -mig 0"));
          continue;
        }
        std::vector<std::string> ids;
        for (const topology::MigProfile* p : g.create_order) ids.push_back(ProfileArg(*p));
        commands.push_back(absl::StrCat("nvidia-smi -i ", g.index, " -mig 1"));
        commands.push_back(
            absl::StrCat("nvidia-smi mig -i ", g.index, " -cgi ", absl::StrJoin(ids, ","), " -C"));
      }
      if (commands.empty()) continue;
      Value o = b_.Obj();
      b_.Set(o, "node", n.name);
      b_.Set(o, "commands", b_.Strings(commands));
      b_.Push(arr, std::move(o));
    }
    return arr;
  }

  // One mig-parted config per distinct node layout, named after the first node that uses it.
  void BuildMigParted() {
    mig_parted_ = b_.Obj();
    b_.Set(mig_parted_, "version", "v1");
    Value configs = b_.Obj();
    std::map<std::string, std::string> by_content;  // serialised entries -> config name
    for (const topology::NodePlan& n : plan_.nodes) {
      bool catalog_gpus = false;
      for (int gi : n.gpus) catalog_gpus = catalog_gpus || plan_.gpus[gi].model != nullptr;
      if (!catalog_gpus) continue;
      // Consecutive GPUs with the same devices share one entry.
      Value entries = b_.Arr();
      std::vector<std::pair<std::vector<int>, std::vector<std::pair<std::string, int>>>> groups;
      std::vector<bool> enabled;
      for (int gi : n.gpus) {
        const GpuPlan& g = plan_.gpus[gi];
        if (!g.model) continue;
        std::vector<std::pair<std::string, int>> devices = MigDevices(g);
        bool on = g.use == GpuUse::kMig;
        if (!groups.empty() && groups.back().second == devices && enabled.back() == on) {
          groups.back().first.push_back(g.index);
        } else {
          groups.push_back({{g.index}, devices});
          enabled.push_back(on);
        }
      }
      std::string key;
      for (size_t k = 0; k < groups.size(); ++k) {
        Value entry = b_.Obj();
        Value devices = b_.Arr();
        for (int i : groups[k].first) b_.Push(devices, b_.Int(i));
        b_.Set(entry, "devices", std::move(devices));
        b_.SetBool(entry, "mig-enabled", enabled[k]);
        absl::StrAppend(&key, absl::StrJoin(groups[k].first, ","), enabled[k] ? "+" : "-");
        if (enabled[k]) {
          Value mig_devices = b_.Obj();
          for (const auto& [name, count] : groups[k].second) {
            b_.SetInt(mig_devices, name, count);
            absl::StrAppend(&key, name, "=", count, ";");
          }
          b_.Set(entry, "mig-devices", std::move(mig_devices));
        }
        absl::StrAppend(&key, "|");
        b_.Push(entries, std::move(entry));
      }
      auto [it, fresh] = by_content.emplace(key, absl::StrCat("gpu-tenancy-", n.name));
      mig_config_[n.name] = it->second;
      if (fresh) b_.Set(configs, it->second, std::move(entries));
    }
    b_.Set(mig_parted_, "mig-configs", std::move(configs));
  }

  // Device-plugin sharing configs, one per (method, replicas), selected per node with the
  // nvidia.com/device-plugin.config label.
  void BuildDevicePlugin() {
    device_plugin_ = b_.Obj();
    Value configs = b_.Obj();
    std::set<std::string> made;
    for (const topology::NodePlan& n : plan_.nodes) {
      bool mps = n.full_gpu_mode == GpuUse::kMps;
      if (n.full_gpu_mode != GpuUse::kTimeslice && !mps) continue;
      std::string name =
          absl::StrCat("gpu-tenancy-", mps ? "mps-" : "timeslice-", n.shared_replicas);
      plugin_config_[n.name] = name;
      if (!made.insert(name).second) continue;
      Value method = b_.Obj();
      b_.SetBool(method, "renameByDefault", true);
      b_.SetBool(method, "failRequestsGreaterThanOne", true);
      Value resources = b_.Arr();
      Value resource = b_.Obj();
      b_.Set(resource, "name", "nvidia.com/gpu");
      b_.SetInt(resource, "replicas", n.shared_replicas);
      b_.Push(resources, std::move(resource));
      b_.Set(method, "resources", std::move(resources));
      Value sharing = b_.Obj();
      b_.Set(sharing, mps ? "mps" : "timeSlicing", std::move(method));
      Value config = b_.Obj();
      b_.Set(config, "version", "v1");
      b_.Set(config, "sharing", std::move(sharing));
      b_.Set(configs, name, std::move(config));
    }
    b_.Set(device_plugin_, "configs", std::move(configs));
  }

  Value NodeLabels() {
    Value arr = b_.Arr();
    for (const topology::NodePlan& n : plan_.nodes) {
      Value labels = b_.Obj();
      std::vector<std::string> commands;
      if (auto it = mig_config_.find(n.name); it != mig_config_.end()) {
        b_.Set(labels, "nvidia.com/mig.config", it->second);
        commands.push_back(absl::StrCat("kubectl label node ", n.name,
                                        " nvidia.com/mig.config=", it->second, " --overwrite"));
      }
      if (auto it = plugin_config_.find(n.name); it != plugin_config_.end()) {
        b_.Set(labels, "nvidia.com/device-plugin.config", it->second);
        commands.push_back(absl::StrCat("kubectl label node ", n.name,
                                        " nvidia.com/device-plugin.config=", it->second,
                                        " --overwrite"));
      }
      if (commands.empty()) continue;
      Value o = b_.Obj();
      b_.Set(o, "node", n.name);
      b_.Set(o, "labels", std::move(labels));
      b_.Set(o, "commands", b_.Strings(commands));
      b_.Push(arr, std::move(o));
    }
    return arr;
  }

  Value Pods() {
    Value arr = b_.Arr();
    for (const WorkloadPlan& w : plan_.workloads) {
      if (w.mechanism == Mechanism::kVmBoundary) continue;
      Value limits = b_.Obj();
      switch (w.mechanism) {
        case Mechanism::kMig:
          b_.SetInt(limits, absl::StrCat("nvidia.com/mig-", w.profile->ResourceSuffix()), 1);
          break;
        case Mechanism::kExclusive:
          b_.SetInt(limits, "nvidia.com/gpu", w.gpus_per_replica);
          break;
        default:
          b_.SetInt(limits, "nvidia.com/gpu.shared", 1);
      }
      Value resources = b_.Obj();
      b_.Set(resources, "limits", std::move(limits));
      Value container = b_.Obj();
      b_.Set(container, "name", "main");
      b_.Set(container, "resources", std::move(resources));
      Value containers = b_.Arr();
      b_.Push(containers, std::move(container));
      Value spec = b_.Obj();
      b_.Set(spec, "containers", std::move(containers));
      if (w.spec.mirrored) {
        Value match = b_.Obj();
        b_.Set(match, kWorkloadLabel, w.spec.name);
        Value selector = b_.Obj();
        b_.Set(selector, "matchLabels", std::move(match));
        Value constraint = b_.Obj();
        b_.SetInt(constraint, "maxSkew", 1);
        b_.Set(constraint, "topologyKey", kZoneLabel);
        b_.Set(constraint, "whenUnsatisfiable", "DoNotSchedule");
        b_.Set(constraint, "labelSelector", std::move(selector));
        Value constraints = b_.Arr();
        b_.Push(constraints, std::move(constraint));
        b_.Set(spec, "topologySpreadConstraints", std::move(constraints));
      }
      Value labels = b_.Obj();
      b_.Set(labels, kWorkloadLabel, w.spec.name);
      Value metadata = b_.Obj();
      b_.Set(metadata, "namespace", w.spec.namespace_name);
      b_.Set(metadata, "labels", std::move(labels));
      if (IsShared(w.mechanism)) {
        Value annotations = b_.Obj();
        b_.Set(annotations, kMemoryAnnotation, Mi(w.sizing.total_mib));
        b_.Set(metadata, "annotations", std::move(annotations));
      }
      Value pod = b_.Obj();
      b_.Set(pod, "metadata", std::move(metadata));
      b_.Set(pod, "spec", std::move(spec));
      Value o = b_.Obj();
      b_.Set(o, "workload", w.spec.name);
      b_.Set(o, "tenant", w.spec.tenant);
      b_.SetInt(o, "replicas", w.replicas);
      b_.Set(o, "podTemplate", std::move(pod));
      b_.Push(arr, std::move(o));
    }
    return arr;
  }

  // DRA (NVIDIA k8s-dra-driver-gpu, resource.k8s.io/v1beta1): a ResourceClaimTemplate gives each
  // pod its own MIG instance or GPUs; a ResourceClaim is shared by all the workload's pods.
  Value Claims() {
    Value arr = b_.Arr();
    for (const WorkloadPlan& w : plan_.workloads) {
      if (w.mechanism == Mechanism::kVmBoundary) continue;
      Value request = b_.Obj();
      b_.Set(request, "name", "gpu");
      if (w.mechanism == Mechanism::kMig) {
        b_.Set(request, "deviceClassName", "mig.nvidia.com");
        Value cel = b_.Obj();
        b_.Set(
            cel, "expression",
            absl::StrCat("device.attributes['gpu.nvidia.com'].profile == '", w.profile->name, "'"));
        Value selector = b_.Obj();
        b_.Set(selector, "cel", std::move(cel));
        Value selectors = b_.Arr();
        b_.Push(selectors, std::move(selector));
        b_.Set(request, "selectors", std::move(selectors));
      } else {
        b_.Set(request, "deviceClassName", "gpu.nvidia.com");
        if (w.mechanism == Mechanism::kExclusive) {
          b_.Set(request, "allocationMode", "ExactCount");
          b_.SetInt(request, "count", w.gpus_per_replica);
        }
      }
      Value requests = b_.Arr();
      b_.Push(requests, std::move(request));
      Value devices = b_.Obj();
      b_.Set(devices, "requests", std::move(requests));
      if (IsShared(w.mechanism)) {
        Value sharing = b_.Obj();
        if (w.mechanism == Mechanism::kMps) {
          b_.Set(sharing, "strategy", "MPS");
          Value mps = b_.Obj();
          b_.SetInt(mps, "defaultActiveThreadPercentage",
                    std::max(1, 100 / std::max(2, SharedClientsOf(w))));
          b_.Set(mps, "defaultPinnedDeviceMemoryLimit", Mi(w.sizing.total_mib));
          b_.Set(sharing, "mpsConfig", std::move(mps));
        } else {
          b_.Set(sharing, "strategy", "TimeSlicing");
          Value ts = b_.Obj();
          b_.Set(ts, "interval", "Default");
          b_.Set(sharing, "timeSlicingConfig", std::move(ts));
        }
        Value parameters = b_.Obj();
        b_.Set(parameters, "apiVersion", "resource.nvidia.com/v1beta1");
        b_.Set(parameters, "kind", "GpuConfig");
        b_.Set(parameters, "sharing", std::move(sharing));
        Value opaque = b_.Obj();
        b_.Set(opaque, "driver", "gpu.nvidia.com");
        b_.Set(opaque, "parameters", std::move(parameters));
        Value config = b_.Obj();
        Value names = b_.Arr();
        b_.Push(names, "gpu");
        b_.Set(config, "requests", std::move(names));
        b_.Set(config, "opaque", std::move(opaque));
        Value configs = b_.Arr();
        b_.Push(configs, std::move(config));
        b_.Set(devices, "config", std::move(configs));
      }
      Value claim_spec = b_.Obj();
      b_.Set(claim_spec, "devices", std::move(devices));
      Value metadata = b_.Obj();
      b_.Set(metadata, "name", ClaimName(w));
      b_.Set(metadata, "namespace", w.spec.namespace_name);
      Value o = b_.Obj();
      b_.Set(o, "apiVersion", "resource.k8s.io/v1beta1");
      if (IsShared(w.mechanism)) {
        b_.Set(o, "kind", "ResourceClaim");
        b_.Set(o, "metadata", std::move(metadata));
        b_.Set(o, "spec", std::move(claim_spec));
      } else {
        b_.Set(o, "kind", "ResourceClaimTemplate");
        b_.Set(o, "metadata", std::move(metadata));
        Value outer = b_.Obj();
        b_.Set(outer, "spec", std::move(claim_spec));
        b_.Set(o, "spec", std::move(outer));
      }
      b_.Push(arr, std::move(o));
    }
    return arr;
  }

  int SharedClientsOf(const WorkloadPlan& w) const {
    int most = 0;
    for (const GpuPlan& g : plan_.gpus) {
      for (const topology::Holder& h : g.clients) {
        if (!h.canary() && &plan_.workloads[h.workload] == &w) {
          most = std::max(most, static_cast<int>(g.clients.size()));
        }
      }
    }
    return most;
  }

  // The tenants section of the policy file (tiers "untrusted" and "trusted" as in
  // cmd/demo/policy.yaml), plus the canary reservation when the plan keeps one.
  Value Policy() {
    struct TenantAcc {
      std::string tier;
      std::vector<std::string> namespaces;
      int64_t memory_mib = 0;
      std::vector<std::string> profiles;
      bool shared = false;
      bool mps = false;
      int64_t mps_pinned_mib = 0;
      int mps_percent = 100;
    };
    std::vector<std::pair<std::string, TenantAcc>> tenants;
    for (const WorkloadPlan& w : plan_.workloads) {
      if (w.mechanism == Mechanism::kVmBoundary) continue;
      auto it = std::find_if(tenants.begin(), tenants.end(),
                             [&](const auto& t) { return t.first == w.spec.tenant; });
      if (it == tenants.end()) {
        tenants.push_back({w.spec.tenant, TenantAcc{}});
        it = tenants.end() - 1;
        it->second.tier = TrustName(w.spec.trust);
      }
      TenantAcc& t = it->second;
      if (std::find(t.namespaces.begin(), t.namespaces.end(), w.spec.namespace_name) ==
          t.namespaces.end()) {
        t.namespaces.push_back(w.spec.namespace_name);
      }
      int64_t memory = w.sizing.total_mib;
      if (w.mechanism == Mechanism::kMig) {
        memory = *w.profile->memory_mib;
        if (std::find(t.profiles.begin(), t.profiles.end(), w.profile->name) == t.profiles.end()) {
          t.profiles.push_back(w.profile->name);
        }
      } else if (w.mechanism == Mechanism::kExclusive) {
        for (const topology::GpuType& type : plan_.gpu_types) {
          if (type.name == w.gpu_type && type.memory_mib)
            memory = *type.memory_mib * w.gpus_per_replica;
        }
      } else {
        t.shared = true;
      }
      if (w.mechanism == Mechanism::kMps) {
        t.mps = true;
        t.mps_pinned_mib = std::max(t.mps_pinned_mib, w.sizing.total_mib);
        t.mps_percent = std::min(t.mps_percent, std::max(1, 100 / std::max(2, SharedClientsOf(w))));
      }
      t.memory_mib = std::max(t.memory_mib, memory);
    }
    Value list = b_.Arr();
    for (const auto& [name, t] : tenants) {
      Value o = b_.Obj();
      b_.Set(o, "name", name);
      b_.Set(o, "tier", t.tier);
      b_.Set(o, "namespaces", b_.Strings(t.namespaces));
      Value limits = b_.Obj();
      b_.Set(limits, "gpuMemoryPerPod", Mi(t.memory_mib));
      if (!t.profiles.empty()) b_.Set(limits, "migProfiles", b_.Strings(t.profiles));
      if (t.shared) b_.SetInt(limits, "sharedReplicasPerPod", 1);
      if (t.mps) {
        Value mps = b_.Obj();
        b_.SetInt(mps, "maxActiveThreadPercentage", t.mps_percent);
        b_.Set(mps, "maxPinnedMemory", Mi(t.mps_pinned_mib));
        b_.Set(limits, "mps", std::move(mps));
      }
      b_.Set(o, "limits", std::move(limits));
      b_.Push(list, std::move(o));
    }
    Value policy = b_.Obj();
    b_.Set(policy, "tenants", std::move(list));
    if (plan_.canary_profile) {
      Value canary = b_.Obj();
      b_.Set(canary, "migProfile", *plan_.canary_profile);
      b_.SetInt(canary, "reserve", 1);
      b_.Set(policy, "canary", std::move(canary));
    }
    return policy;
  }

  const Plan& plan_;
  rapidjson::Document& doc_;
  Builder b_;
  Value mig_parted_;
  Value device_plugin_;
  std::map<std::string, std::string> mig_config_;     // node -> mig-parted config name
  std::map<std::string, std::string> plugin_config_;  // node -> device-plugin config name
};

// ---- YAML
// -----------------------------------------------------------------------------------------

bool NeedsQuotes(absl::string_view s) {
  if (s.empty()) return true;
  static const std::set<std::string> kReserved = {"true", "false", "yes", "no", "on",
                                                  "off",  "null",  "~",   "y",  "n"};
  if (kReserved.count(absl::AsciiStrToLower(s))) return true;
  double d;
  if (absl::SimpleAtod(s, &d)) return true;
  if (absl::ascii_isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '.')
    return true;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '/' &&
        c != '-') {
      return true;
    }
  }
  return false;
}

std::string Quote(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += "\"";
  return out;
}

std::string YamlString(absl::string_view s) { return NeedsQuotes(s) ? Quote(s) : std::string(s); }

std::string YamlScalar(const Value& v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsInt64()) return absl::StrCat(v.GetInt64());
  if (v.IsUint64()) return absl::StrCat(v.GetUint64());
  if (v.IsNumber()) return absl::StrCat(v.GetDouble());
  if (v.IsString()) return YamlString(common::AsStringView(v));
  if (v.IsObject()) return "{}";
  return "[]";
}

bool IsBlock(const Value& v) {
  return (v.IsObject() && v.MemberCount() > 0) || (v.IsArray() && !v.Empty());
}

void EmitYaml(const Value& v, int indent, std::string& out) {
  std::string pad(indent, ' ');
  if (v.IsObject()) {
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
      absl::StrAppend(&out, pad, YamlString(common::AsStringView(it->name)), ":");
      if (IsBlock(it->value)) {
        out += "\n";
        EmitYaml(it->value, indent + 2, out);
      } else {
        absl::StrAppend(&out, " ", YamlScalar(it->value), "\n");
      }
    }
    return;
  }
  if (v.IsArray()) {
    for (const Value& item : v.GetArray()) {
      if (!IsBlock(item)) {
        absl::StrAppend(&out, pad, "- ", YamlScalar(item), "\n");
      } else if (item.IsObject()) {
        // The first key shares the dash's line: "- name: x".
        std::string block;
        EmitYaml(item, indent + 2, block);
        out += pad;
        out += "- ";
        out.append(block.data() + indent + 2, block.size() - indent - 2);
      } else {
        absl::StrAppend(&out, pad, "-\n");
        EmitYaml(item, indent + 2, out);
      }
    }
    return;
  }
  absl::StrAppend(&out, pad, YamlScalar(v), "\n");
}

std::string ToYaml(const Value& v, int indent = 0) {
  std::string out;
  EmitYaml(v, indent, out);
  return out;
}

std::string ToPrettyJson(const Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.SetIndent(' ', 2);
  v.Accept(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// ---- Text
// -----------------------------------------------------------------------------------------

const Value& Member(const Value& obj, const char* key) {
  static const Value kNull;
  const Value* v = common::FindMember(obj, key);
  return v ? *v : kNull;
}

std::string Heading(absl::string_view title) {
  return absl::StrCat("\n", title, "\n", std::string(title.size(), '-'), "\n");
}

std::string RenderText(const Plan& plan, const rapidjson::Document& doc) {
  std::string out = "gpu-tenancy plan\n================\n";
  // Fleet.
  std::vector<std::string> nodes;
  for (const topology::NodePlan& n : plan.nodes) {
    std::string zone = n.zone.empty() ? "" : absl::StrCat(", zone ", n.zone);
    nodes.push_back(
        absl::StrCat(n.name, ": ", n.gpus.size(), " x ", plan.gpus[n.gpus.front()].gpu_type, zone));
  }
  absl::StrAppend(&out, "Fleet: ", plan.gpus.size(), " GPUs on ", plan.nodes.size(), " nodes (",
                  absl::StrJoin(nodes, "; "), ")\n\n");
  const Value& summary = Member(doc, "summary");
  absl::StrAppend(&out, "Summary: ", common::AsStringView(Member(summary, "text")), ".\n");
  absl::StrAppend(&out, "  Baseline: ", common::AsStringView(Member(summary, "baseline")), "\n");
  absl::StrAppend(&out, "  No packing of these decisions can use fewer than ", plan.lower_bound,
                  " GPUs (memory and compute slices, shared memory)",
                  plan.gpus_used == plan.lower_bound ? ", so this one is optimal.\n"
                                                     : "; this first-fit packing uses more.\n");

  out += Heading("Workloads");
  for (const WorkloadPlan& w : plan.workloads) {
    std::string replicas = absl::StrCat(w.replicas, w.replicas == 1 ? " replica" : " replicas");
    if (w.spec.mirrored) {
      std::vector<std::string> zones;
      for (const std::string& z : w.replica_zones) {
        if (std::find(zones.begin(), zones.end(), z) == zones.end()) zones.push_back(z);
      }
      absl::StrAppend(&replicas, ", mirrored over zones ", absl::StrJoin(zones, ", "));
    }
    absl::StrAppend(&out, w.spec.name, "  tenant ", w.spec.tenant, " (", TrustName(w.spec.trust),
                    ", ", w.spec.training ? "training" : LatencyName(w.spec.latency), "), ",
                    replicas, "\n");
    absl::StrAppend(&out, "  memory from ", w.sizing.source, ":\n");
    for (const topology::MemoryTerm& t : w.sizing.terms) {
      std::string gib = topology::GiBText(t.bytes, true);
      absl::StrAppend(&out, "    ", t.name,
                      std::string(std::max<size_t>(1, 11 - t.name.size()), ' '),
                      std::string(std::max<size_t>(0, 11 - std::min<size_t>(11, gib.size())), ' '),
                      gib, "  ", t.how, "\n");
    }
    std::string total = topology::GiBText(w.sizing.total_bytes, true);
    absl::StrAppend(&out, "    total      ",
                    std::string(11 - std::min<size_t>(11, total.size()), ' '), total, "\n");
    std::string what;
    switch (w.mechanism) {
      case Mechanism::kMig:
        what = absl::StrCat("MIG ", w.profile->name, " on ", w.gpu_type);
        break;
      case Mechanism::kExclusive:
        what = absl::StrCat("whole GPU", w.gpus_per_replica > 1 ? "s" : "", " (",
                            w.gpus_per_replica, " x ", w.gpu_type, " per replica)");
        break;
      case Mechanism::kTimeslice:
        what = absl::StrCat("time-sliced ", w.gpu_type);
        break;
      case Mechanism::kMps:
        what = absl::StrCat("MPS on ", w.gpu_type, " with a memory limit");
        break;
      case Mechanism::kVmBoundary:
        what = "VM boundary: not placed by this plan";
        break;
    }
    absl::StrAppend(&out, "  mechanism: ", what, "\n");
    if (!w.rounding.empty()) absl::StrAppend(&out, "    ", w.rounding, "\n");
    for (const std::string& r : w.reasons) absl::StrAppend(&out, "  why: ", r, "\n");
    for (const std::string& r : w.warnings) absl::StrAppend(&out, "  WARNING: ", r, "\n");
    out += "\n";
  }

  out += Heading("GPUs");
  for (const GpuPlan& g : plan.gpus) {
    std::string zone = g.zone.empty() ? "" : absl::StrCat(", zone ", g.zone);
    absl::StrAppend(&out, g.node, " GPU ", g.index, " (", g.gpu_type, zone,
                    "): ", topology::GpuUseName(g.use));
    if (g.use == GpuUse::kMig) {
      std::vector<std::string> cut;
      for (const auto& [name, count] : MigDevices(g)) {
        cut.push_back(count == 1 ? name : absl::StrCat(count, " x ", name));
      }
      absl::StrAppend(&out, ", cut ", absl::StrJoin(cut, " + "), "\n");
      for (const topology::PlannedInstance& inst : g.instances) {
        int last = inst.start + inst.profile->memory_slices - 1;
        std::string slices = last == inst.start ? absl::StrCat("slice  ", inst.start)
                                                : absl::StrCat("slices ", inst.start, "-", last);
        absl::StrAppend(&out, "    ", slices,
                        std::string(12 - std::min<size_t>(11, slices.size()), ' '),
                        inst.profile->name,
                        std::string(12 - std::min<size_t>(11, inst.profile->name.size()), ' '),
                        HolderName(plan, inst.holder), "\n");
      }
    } else if (g.use == GpuUse::kIdle) {
      out += "\n";
    } else {
      std::vector<std::string> who;
      for (const topology::Holder& h : g.clients) who.push_back(HolderName(plan, h));
      absl::StrAppend(&out, ": ", absl::StrJoin(who, ", "));
      if (g.use != GpuUse::kExclusive && g.memory_mib) {
        absl::StrAppend(&out, " (", topology::GiBText(g.shared_memory_mib * topology::kMiB, true),
                        " of ", topology::GiBText(*g.memory_mib * topology::kMiB, false),
                        " declared)");
      }
      out += "\n";
    }
  }

  out += Heading("nvidia-smi commands");
  out +=
      "# -cgi creates instances in the order given and each takes its profile's highest free\n"
      "# placement (the behaviour NVIDIA's guide documents), so this order reproduces the\n"
      "# geometry above. Usually mig-manager applies the mig-parted config below instead.\n";
  for (const Value& node : Member(doc, "nvidiaSmi").GetArray()) {
    absl::StrAppend(&out, "# on ", common::AsStringView(Member(node, "node")), "\n");
    for (const Value& c : Member(node, "commands").GetArray()) {
      absl::StrAppend(&out, common::AsStringView(c), "\n");
    }
  }

  out += Heading("mig-parted config (mig-manager ConfigMap)");
  out += ToYaml(Member(doc, "migParted"));

  out += Heading("Device-plugin sharing config (time-slicing / MPS)");
  const Value& plugin = Member(Member(doc, "devicePlugin"), "configs");
  if (plugin.IsObject() && plugin.MemberCount() > 0) {
    out += "# one named config per entry of the device plugin's ConfigMap\n";
    out += ToYaml(plugin);
  } else {
    out += "none: no workload shares a full GPU in this plan\n";
  }

  out += Heading("Node labels (nvidia.com/mig.config, nvidia.com/device-plugin.config)");
  bool labelled = false;
  for (const Value& node : Member(doc, "nodeLabels").GetArray()) {
    for (const Value& c : Member(node, "commands").GetArray()) {
      absl::StrAppend(&out, common::AsStringView(c), "\n");
      labelled = true;
    }
  }
  if (!labelled) out += "(no node needs a label)\n";

  out += Heading("Pod resources (per workload)");
  absl::StrAppend(&out, "# mirrored workloads spread over the ", kZoneLabel, " node label\n");
  out += ToYaml(Member(doc, "pods"));

  out += Heading("ResourceClaims (DRA, NVIDIA k8s-dra-driver-gpu)");
  out +=
      "# A ResourceClaimTemplate gives each pod its own device; a ResourceClaim is shared by the\n"
      "# workload's pods (how DRA expresses sharing).\n";
  bool first = true;
  for (const Value& claim : Member(doc, "resourceClaims").GetArray()) {
    if (!first) out += "---\n";
    first = false;
    out += ToYaml(claim);
  }

  out += Heading("Policy file: tenants section");
  out += "# tiers \"untrusted\" and \"trusted\" as in cmd/demo/policy.yaml\n";
  out += ToYaml(Member(doc, "policy"));

  std::vector<std::string> warnings = PlanDocument::AllWarnings(plan);
  if (!warnings.empty()) {
    out += Heading("Warnings");
    for (const std::string& w : warnings) absl::StrAppend(&out, "- ", w, "\n");
  }
  return out;
}

}  // namespace

int RunPlan(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, {"input", "o", "output"}, {"help"});
  if (!flags.ok()) return UsageError(flags.status(), kUsage);
  if (flags->Has("help")) {
    std::cout << kUsage;
    return 0;
  }
  std::string format = flags->Get("o", flags->Get("output", "text"));
  if (format != "text" && format != "yaml" && format != "json") {
    return UsageError(absl::InvalidArgumentError("-o must be text, yaml or json"), kUsage);
  }
  if (!flags->positional.empty()) {
    return UsageError(absl::InvalidArgumentError(
                          absl::StrCat("unexpected argument \"", flags->positional.front(), "\"")),
                      kUsage);
  }
  if (!flags->Has("input"))
    return UsageError(absl::InvalidArgumentError("--input is required"), kUsage);
  std::string path = flags->Get("input");
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return Fail(text.status());
  absl::StatusOr<topology::PlanInput> input = common::ParsePlanInput(*text);
  if (!input.ok()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(path, ": ", input.status().message())));
  }
  absl::StatusOr<Plan> plan = topology::MakePlan(*input, common::BuiltinCatalog());
  if (!plan.ok()) {
    std::cerr << "error: " << plan.status().message() << "\n";
    return plan.status().code() == absl::StatusCode::kResourceExhausted ? 1 : 2;
  }
  rapidjson::Document doc;
  PlanDocument(*plan, doc).Build();
  if (format == "json") {
    std::cout << ToPrettyJson(doc) << "\n";
  } else if (format == "yaml") {
    std::cout << "# gpu-tenancy plan of " << path << "\n" << ToYaml(doc);
  } else {
    std::cout << RenderText(*plan, doc);
  }
  return 0;
}

}  // namespace cmd
