#include "plan/document_tree.h"

#include "absl/strings/str_cat.h"
#include "plan/quantity_text.h"
#include "topology/wellknown.h"

namespace plan {
namespace {

Tree StringOrNull(absl::string_view s) { return s.empty() ? Tree::Null() : Tree::String(s); }

Tree MemoryTree(const MemorySizing& sizing) {
  Tree terms = Tree::List();
  for (const MemoryTerm& t : sizing.terms) {
    terms.Push(Tree::Map()
                   .SetString("name", t.name)
                   .SetInt("bytes", t.bytes)
                   .SetString("gib", GiBText(t.bytes, true))
                   .SetString("how", t.how));
  }
  Tree memory = Tree::Map();
  memory.SetString("source", sizing.source)
      .Set("terms", std::move(terms))
      .SetInt("totalBytes", sizing.total_bytes)
      .SetInt("totalMiB", sizing.total_mib)
      .SetString("total", GiBText(sizing.total_bytes, true));
  return memory;
}

Tree WorkloadsTree(const Plan& plan) {
  Tree out = Tree::List();
  for (const WorkloadPlan& w : plan.workloads) {
    Tree zones = Tree::List();
    if (w.spec.mirrored) {
      for (const std::string& z : w.replica_zones) zones.Push(Tree::String(z));
    }
    Tree o = Tree::Map();
    o.SetString("name", w.spec.name)
        .SetString("tenant", w.spec.tenant)
        .SetString("namespace", w.spec.namespace_name)
        .SetString("trust", TrustName(w.spec.trust))
        .SetString("latency", LatencyName(w.spec.latency))
        .SetBool("training", w.spec.training)
        .SetInt("replicas", w.replicas)
        .SetBool("mirrored", w.spec.mirrored)
        .Set("replicaZones", std::move(zones))
        .SetString("mechanism", MechanismName(w.mechanism))
        .Set("gpu", StringOrNull(w.gpu_type))
        .Set("profile", w.profile ? Tree::String(w.profile->name) : Tree::Null())
        .SetInt("gpusPerReplica", w.gpus_per_replica)
        .Set("memory", MemoryTree(w.sizing))
        .SetString("rounding", w.rounding)
        .Set("reasons", Tree::Strings(w.reasons))
        .Set("warnings", Tree::Strings(w.warnings))
        .SetInt("baselineGpus", w.baseline_gpus)
        .SetInt("baselineReplicaGpus", w.baseline_replica_gpus);
    out.Push(std::move(o));
  }
  return out;
}

Tree HolderTree(const Plan& plan, const Holder& h) {
  Tree o = Tree::Map();
  if (h.canary()) return o.Set("workload", Tree::Null()).SetBool("canary", true);
  return o.SetString("workload", plan.workloads[h.workload].spec.name)
      .SetInt("replica", h.replica + 1)
      .SetBool("canary", false);
}

Tree GpusTree(const Plan& plan) {
  Tree out = Tree::List();
  for (const GpuPlan& g : plan.gpus) {
    Tree instances = Tree::List();
    for (const PlannedInstance& inst : g.instances) {
      Tree i = HolderTree(plan, inst.holder);
      i.SetString("profile", inst.profile->name)
          .Set("profileId", inst.profile->id ? Tree::Int(*inst.profile->id) : Tree::Null())
          .SetInt("start", inst.start)
          .SetInt("memorySlices", inst.profile->memory_slices)
          .SetInt("computeSlices", inst.profile->compute_slices);
      instances.Push(std::move(i));
    }
    Tree clients = Tree::List();
    for (const Holder& h : g.clients) clients.Push(HolderTree(plan, h));
    Tree o = Tree::Map();
    o.SetString("node", g.node)
        .SetString("zone", g.zone)
        .SetInt("index", g.index)
        .SetString("gpu", g.gpu_type)
        .Set("memoryMiB", g.memory_mib ? Tree::Int(*g.memory_mib) : Tree::Null())
        .SetString("use", GpuUseName(g.use))
        .Set("instances", std::move(instances))
        .Set("clients", std::move(clients));
    if (g.use == GpuUse::kTimeslice || g.use == GpuUse::kMps) {
      o.SetInt("sharedMemoryMiB", g.shared_memory_mib);
    }
    if (g.use == GpuUse::kMig) {
      Tree order = Tree::List();
      for (const topology::MigProfile* p : g.create_order) order.Push(Tree::String(ProfileArg(*p)));
      o.Set("createOrder", std::move(order))
          .SetBool("createOrderVerified", g.create_order_verified);
    }
    out.Push(std::move(o));
  }
  return out;
}

Tree NodeCommandsTree(const std::vector<NodeCommands>& nodes) {
  Tree out = Tree::List();
  for (const NodeCommands& n : nodes) {
    out.Push(Tree::Map().SetString("node", n.node).Set("commands", Tree::Strings(n.commands)));
  }
  return out;
}

Tree NodeLabelsTree(const std::vector<NodeLabels>& nodes) {
  Tree out = Tree::List();
  for (const NodeLabels& n : nodes) {
    Tree labels = Tree::Map();
    for (const auto& [key, value] : n.labels) labels.SetString(key, value);
    out.Push(Tree::Map()
                 .SetString("node", n.node)
                 .Set("labels", std::move(labels))
                 .Set("commands", Tree::Strings(n.commands)));
  }
  return out;
}

Tree WorkloadSelector(const std::string& workload) {
  return Tree::Map().Set("matchLabels", Tree::Map().SetString(topology::kWorkloadLabel, workload));
}

Tree PodTemplateTree(const PodSnippet& pod) {
  Tree container = Tree::Map();
  container.SetString("name", "main")
      .Set("resources", Tree::Map().Set("limits", Tree::Map().SetInt(pod.resource, pod.count)));
  Tree spec = Tree::Map();
  spec.Set("containers", Tree::List().Push(std::move(container)));
  if (pod.spread_over_zones) {
    Tree constraint = Tree::Map();
    constraint.SetInt("maxSkew", 1)
        .SetString("topologyKey", topology::kZoneLabel)
        .SetString("whenUnsatisfiable", "DoNotSchedule")
        .Set("labelSelector", WorkloadSelector(pod.workload));
    spec.Set("topologySpreadConstraints", Tree::List().Push(std::move(constraint)));
  }
  Tree metadata = Tree::Map();
  metadata.SetString("namespace", pod.namespace_name)
      .Set("labels", Tree::Map().SetString(topology::kWorkloadLabel, pod.workload));
  if (pod.memory_annotation) {
    metadata.Set("annotations", Tree::Map().SetString(pod.memory_annotation->first,
                                                      pod.memory_annotation->second));
  }
  return Tree::Map().Set("metadata", std::move(metadata)).Set("spec", std::move(spec));
}

// The opaque GpuConfig that makes a shared claim time-sliced or MPS.
Tree SharingConfigTree(const ClaimSnippet& claim) {
  Tree sharing = Tree::Map();
  if (claim.mechanism == Mechanism::kMps) {
    sharing.SetString("strategy", "MPS")
        .Set("mpsConfig", Tree::Map()
                              .SetInt("defaultActiveThreadPercentage", claim.mps_thread_percent)
                              .SetString("defaultPinnedDeviceMemoryLimit", claim.pinned_memory));
  } else {
    sharing.SetString("strategy", "TimeSlicing")
        .Set("timeSlicingConfig", Tree::Map().SetString("interval", "Default"));
  }
  Tree parameters = Tree::Map();
  parameters.SetString("apiVersion", "resource.nvidia.com/v1beta1")
      .SetString("kind", "GpuConfig")
      .Set("sharing", std::move(sharing));
  Tree config = Tree::Map();
  config.Set("requests", Tree::List().Push(Tree::String("gpu")))
      .Set("opaque", Tree::Map()
                         .SetString("driver", "gpu.nvidia.com")
                         .Set("parameters", std::move(parameters)));
  return Tree::List().Push(std::move(config));
}

}  // namespace

Tree Tree::Bool(bool b) {
  Tree t(Kind::kBool);
  t.boolean = b;
  return t;
}

Tree Tree::Int(int64_t n) {
  Tree t(Kind::kInt);
  t.integer = n;
  return t;
}

Tree Tree::String(absl::string_view s) {
  Tree t(Kind::kString);
  t.string = std::string(s);
  return t;
}

Tree Tree::Strings(const std::vector<std::string>& items) {
  Tree t = List();
  for (const std::string& s : items) t.Push(String(s));
  return t;
}

Tree& Tree::Set(absl::string_view key, Tree value) {
  members.emplace_back(std::string(key), std::move(value));
  return *this;
}

Tree& Tree::Push(Tree item) {
  items.push_back(std::move(item));
  return *this;
}

Tree MigPartedTree(const std::vector<MigPartedConfig>& configs) {
  Tree by_name = Tree::Map();
  for (const MigPartedConfig& c : configs) {
    Tree entries = Tree::List();
    for (const MigPartedEntry& e : c.entries) {
      Tree devices = Tree::List();
      for (int i : e.devices) devices.Push(Tree::Int(i));
      Tree entry = Tree::Map();
      entry.Set("devices", std::move(devices)).SetBool("mig-enabled", e.mig_enabled);
      if (e.mig_enabled) {
        Tree mig_devices = Tree::Map();
        for (const auto& [profile, count] : e.mig_devices) mig_devices.SetInt(profile, count);
        entry.Set("mig-devices", std::move(mig_devices));
      }
      entries.Push(std::move(entry));
    }
    by_name.Set(c.name, std::move(entries));
  }
  return Tree::Map().SetString("version", "v1").Set("mig-configs", std::move(by_name));
}

Tree DevicePluginConfigsTree(const std::vector<DevicePluginConfig>& configs) {
  Tree out = Tree::Map();
  for (const DevicePluginConfig& c : configs) {
    Tree resource = Tree::Map().SetString("name", "nvidia.com/gpu").SetInt("replicas", c.replicas);
    Tree method = Tree::Map();
    method.SetBool("renameByDefault", true)
        .SetBool("failRequestsGreaterThanOne", true)
        .Set("resources", Tree::List().Push(std::move(resource)));
    Tree sharing = Tree::Map().Set(c.mps ? "mps" : "timeSlicing", std::move(method));
    out.Set(c.name, Tree::Map().SetString("version", "v1").Set("sharing", std::move(sharing)));
  }
  return out;
}

Tree PodsTree(const std::vector<PodSnippet>& pods) {
  Tree out = Tree::List();
  for (const PodSnippet& pod : pods) {
    out.Push(Tree::Map()
                 .SetString("workload", pod.workload)
                 .SetString("tenant", pod.tenant)
                 .SetInt("replicas", pod.replicas)
                 .Set("podTemplate", PodTemplateTree(pod)));
  }
  return out;
}

Tree ClaimTree(const ClaimSnippet& claim) {
  Tree request = Tree::Map();
  request.SetString("name", "gpu");
  if (claim.mechanism == Mechanism::kMig) {
    Tree cel = Tree::Map().SetString(
        "expression",
        absl::StrCat("device.attributes['gpu.nvidia.com'].profile == '", claim.mig_profile, "'"));
    request.SetString("deviceClassName", "mig.nvidia.com")
        .Set("selectors", Tree::List().Push(Tree::Map().Set("cel", std::move(cel))));
  } else {
    request.SetString("deviceClassName", "gpu.nvidia.com");
    if (claim.mechanism == Mechanism::kExclusive) {
      request.SetString("allocationMode", "ExactCount").SetInt("count", claim.gpus);
    }
  }
  Tree devices = Tree::Map();
  devices.Set("requests", Tree::List().Push(std::move(request)));
  if (claim.shared()) devices.Set("config", SharingConfigTree(claim));
  Tree claim_spec = Tree::Map().Set("devices", std::move(devices));
  Tree o = Tree::Map();
  o.SetString("apiVersion", "resource.k8s.io/v1beta1")
      .SetString("kind", claim.shared() ? "ResourceClaim" : "ResourceClaimTemplate")
      .Set("metadata",
           Tree::Map().SetString("name", claim.name).SetString("namespace", claim.namespace_name));
  // A template's spec holds the spec of the claims it makes.
  if (claim.shared()) return o.Set("spec", std::move(claim_spec));
  return o.Set("spec", Tree::Map().Set("spec", std::move(claim_spec)));
}

Tree PolicyTree(const PolicySection& policy) {
  Tree tenants = Tree::List();
  for (const PolicyTenant& t : policy.tenants) {
    Tree limits = Tree::Map();
    limits.SetString("gpuMemoryPerPod", MiQuantity(t.gpu_memory_mib_per_pod));
    if (!t.mig_profiles.empty()) limits.Set("migProfiles", Tree::Strings(t.mig_profiles));
    if (t.shared) limits.SetInt("sharedReplicasPerPod", 1);
    if (t.mps) {
      limits.Set("mps", Tree::Map()
                            .SetInt("maxActiveThreadPercentage", t.mps_thread_percent)
                            .SetString("maxPinnedMemory", MiQuantity(t.mps_pinned_mib)));
    }
    tenants.Push(Tree::Map()
                     .SetString("name", t.name)
                     .SetString("tier", t.tier)
                     .Set("namespaces", Tree::Strings(t.namespaces))
                     .Set("limits", std::move(limits)));
  }
  Tree out = Tree::Map().Set("tenants", std::move(tenants));
  if (policy.canary_profile) {
    out.Set("canary",
            Tree::Map().SetString("migProfile", *policy.canary_profile).SetInt("reserve", 1));
  }
  return out;
}

Tree DocumentTree(const PlanDocument& doc) {
  const Summary& s = doc.summary;
  Tree summary = Tree::Map();
  summary.SetInt("gpusUsed", s.gpus_used)
      .SetInt("gpusInFleet", s.gpus_in_fleet)
      .SetInt("baselineGpus", s.baseline_gpus)
      .SetInt("gpusSaved", s.gpus_saved)
      .SetInt("baselineReplicaGpus", s.baseline_replica_gpus)
      .SetInt("lowerBound", s.lower_bound)
      .SetBool("optimal", s.optimal)
      .SetInt("maxTenantsPerGpu", s.max_tenants_per_gpu)
      .SetString("baseline", s.baseline)
      .SetString("text", s.text);
  Tree claims = Tree::List();
  for (const ClaimSnippet& c : doc.claims) claims.Push(ClaimTree(c));
  Tree out = Tree::Map();
  out.Set("summary", std::move(summary))
      .Set("workloads", WorkloadsTree(doc.plan))
      .Set("gpus", GpusTree(doc.plan))
      .Set("nvidiaSmi", NodeCommandsTree(doc.nvidia_smi))
      .Set("migParted", MigPartedTree(doc.mig_configs))
      .Set("devicePlugin",
           Tree::Map().Set("configs", DevicePluginConfigsTree(doc.device_plugin_configs)))
      .Set("nodeLabels", NodeLabelsTree(doc.node_labels))
      .Set("pods", PodsTree(doc.pods))
      .Set("resourceClaims", std::move(claims))
      .Set("policy", PolicyTree(doc.policy))
      .Set("warnings", Tree::Strings(doc.warnings));
  return out;
}

}  // namespace plan
