#include "plan/fleet_packing.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "plan/mig_creation.h"
#include "plan/mig_packing.h"
#include "plan/mig_profile_choice.h"
#include "plan/quantity_text.h"
#include "topology/mig_layout.h"

namespace plan {
namespace {

using topology::CheckLayout;
using topology::GpuModel;
using topology::MigProfile;
using topology::PlacedInstance;
using topology::PlaceProfiles;

// Packing state beside the Plan being built.
class Packer {
 public:
  Packer(Plan& plan, std::vector<int> gpu_type, std::vector<int> gpu_node)
      : plan_(plan),
        gpu_type_(std::move(gpu_type)),
        gpu_node_(std::move(gpu_node)),
        mig_profiles_(plan.gpus.size()),
        mig_holders_(plan.gpus.size()),
        node_mps_need_(plan.nodes.size(), 0) {}

  [[nodiscard]] absl::Status Run(std::vector<PackingItem> items) {
    std::vector<PackingItem> exclusive, mig, shared;
    for (PackingItem& item : items) {
      switch (item.mechanism) {
        case Mechanism::kExclusive:
          exclusive.push_back(std::move(item));
          break;
        case Mechanism::kMig:
          mig.push_back(std::move(item));
          break;
        case Mechanism::kTimeslice:
        case Mechanism::kMps:
          shared.push_back(std::move(item));
          break;
        case Mechanism::kVmBoundary:
          break;
      }
    }
    std::stable_sort(exclusive.begin(), exclusive.end(),
                     [](const PackingItem& a, const PackingItem& b) { return a.gpus > b.gpus; });
    for (const PackingItem& item : exclusive) RETURN_IF_ERROR(PlaceExclusive(item));
    // Largest first; among equals, zone-bound replicas before free ones (they have fewer GPUs).
    std::stable_sort(mig.begin(), mig.end(), [](const PackingItem& a, const PackingItem& b) {
      if (a.profile->memory_slices != b.profile->memory_slices) {
        return a.profile->memory_slices > b.profile->memory_slices;
      }
      if (a.profile->compute_slices != b.profile->compute_slices) {
        return a.profile->compute_slices > b.profile->compute_slices;
      }
      return !a.zone.empty() && b.zone.empty();
    });
    RETURN_IF_ERROR(PlaceMig(mig));
    if (plan_.canary_profile) PlaceCanaries(*plan_.canary_profile);
    std::stable_sort(shared.begin(), shared.end(), [](const PackingItem& a, const PackingItem& b) {
      if (a.memory_mib != b.memory_mib) return a.memory_mib > b.memory_mib;
      return !a.zone.empty() && b.zone.empty();
    });
    for (const PackingItem& item : shared) RETURN_IF_ERROR(PlaceShared(item));
    return Finish();
  }

 private:
  const WorkloadPlan& W(const Holder& h) const { return plan_.workloads[h.workload]; }

  std::string Who(const PackingItem& item) const {
    const WorkloadPlan& w = W(item.holder);
    std::string who = absl::StrCat("workload \"", w.spec.name, "\"");
    if (w.replicas > 1)
      absl::StrAppend(&who, " replica ", item.holder.replica + 1, " of ", w.replicas);
    return who;
  }

  std::string Where(const PackingItem& item) const {
    std::string where = plan_.gpu_types[item.type].name;
    if (!item.zone.empty()) absl::StrAppend(&where, " in zone ", item.zone);
    return where;
  }

  int CountType(const PackingItem& item) const {
    int n = 0;
    for (size_t g = 0; g < plan_.gpus.size(); ++g) {
      n += gpu_type_[g] == item.type && ZoneOk(g, item);
    }
    return n;
  }

  bool ZoneOk(size_t g, const PackingItem& item) const {
    return item.zone.empty() || plan_.gpus[g].zone == item.zone;
  }

  bool NodeAccepts(int node, GpuUse use) const {
    const NodePlan& n = plan_.nodes[node];
    switch (use) {
      case GpuUse::kMig:
        return n.full_gpu_mode != GpuUse::kMps;
      case GpuUse::kMps:
        return !n.has_mig && (n.full_gpu_mode == GpuUse::kIdle || n.full_gpu_mode == GpuUse::kMps);
      default:
        return n.full_gpu_mode == GpuUse::kIdle || n.full_gpu_mode == use;
    }
  }

  [[nodiscard]] absl::Status PlaceExclusive(const PackingItem& item) {
    for (int node = static_cast<int>(plan_.nodes.size()) - 1; node >= 0; --node) {
      const NodePlan& n = plan_.nodes[node];
      if (!item.zone.empty() && n.zone != item.zone) continue;
      if (!NodeAccepts(node, GpuUse::kExclusive)) continue;
      std::vector<int> idle;
      for (auto it = n.gpus.rbegin(); it != n.gpus.rend(); ++it) {
        if (gpu_type_[*it] == item.type && plan_.gpus[*it].use == GpuUse::kIdle)
          idle.push_back(*it);
      }
      if (static_cast<int>(idle.size()) < item.gpus) continue;
      for (int k = 0; k < item.gpus; ++k) {
        GpuPlan& gpu = plan_.gpus[idle[k]];
        gpu.use = GpuUse::kExclusive;
        gpu.clients = {item.holder};
      }
      plan_.nodes[node].full_gpu_mode = GpuUse::kExclusive;
      return absl::OkStatus();
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        Who(item), " cannot fit: it needs ", Plural(item.gpus, "whole GPU", "whole GPUs"),
        item.gpus > 1 ? " on one node" : "", " and no node has ", item.gpus, " idle ", Where(item),
        " left (the fleet has ", CountType(item),
        "; time-sliced or MPS nodes cannot host exclusive GPUs)"));
  }

  // All MIG instances of one GPU type at once, so the packer can search for the fewest GPUs.
  // Exclusive GPUs are taken already; MPS nodes are chosen later, so every idle GPU may host MIG.
  [[nodiscard]] absl::Status PlaceMig(const std::vector<PackingItem>& mig) {
    std::map<int, std::vector<const PackingItem*>> by_type;
    for (const PackingItem& item : mig) by_type[item.type].push_back(&item);
    for (const auto& [type, items] : by_type) {
      const GpuModel& model = *plan_.gpu_types[type].model;
      std::vector<int> gpus;
      std::vector<std::string> zones;
      for (size_t g = 0; g < plan_.gpus.size(); ++g) {
        if (gpu_type_[g] != type || plan_.gpus[g].use != GpuUse::kIdle) continue;
        if (!NodeAccepts(gpu_node_[g], GpuUse::kMig)) continue;
        gpus.push_back(static_cast<int>(g));
        zones.push_back(plan_.gpus[g].zone);
      }
      std::vector<MigItem> packed;
      for (const PackingItem* item : items) packed.push_back({item->profile, item->zone});
      MigPacking packing = PackMigItems(model, std::move(packed), std::move(zones));
      if (packing.gpu_of_item.empty()) {
        const PackingItem& item = *items[packing.failed_item];
        return absl::ResourceExhaustedError(
            absl::StrCat(Who(item), " cannot fit: no room for its ", item.profile->name, " on any ",
                         Where(item), " (the fleet has ", CountType(item),
                         ", all cut or taken): add GPUs, drop replicas or shrink the workload"));
      }
      for (size_t i = 0; i < items.size(); ++i) {
        int g = gpus[packing.gpu_of_item[i]];
        plan_.gpus[g].use = GpuUse::kMig;
        plan_.nodes[gpu_node_[g]].has_mig = true;
        mig_profiles_[g].push_back(items[i]->profile);
        mig_holders_[g].push_back(items[i]->holder);
      }
    }
    return absl::OkStatus();
  }

  void PlaceCanaries(const std::string& wanted) {
    for (size_t node = 0; node < plan_.nodes.size(); ++node) {
      NodePlan& n = plan_.nodes[node];
      if (!n.has_mig) continue;
      const GpuModel* model = nullptr;
      for (int g : n.gpus) {
        if (plan_.gpus[g].use == GpuUse::kMig) {
          model = plan_.gpus[g].model;
          break;
        }
      }
      const MigProfile* profile = model->FindProfile(wanted);
      if (!profile) {
        for (const MigProfile& p : model->profiles) {
          if (IsAttributeVariant(p)) continue;
          if (!profile || p.memory_slices < profile->memory_slices ||
              (p.memory_slices == profile->memory_slices &&
               p.compute_slices < profile->compute_slices)) {
            profile = &p;
          }
        }
        plan_.warnings.push_back(absl::StrCat("node ", n.name, ": ", model->model, " has no ",
                                              wanted, "; its canary slice is a ", profile->name));
      }
      bool placed = false;
      for (int g : n.gpus) {
        if (plan_.gpus[g].use != GpuUse::kMig || plan_.gpus[g].model != model) continue;
        std::vector<const MigProfile*> candidate = mig_profiles_[g];
        candidate.push_back(profile);
        if (PlaceProfiles(*model, candidate)) {
          mig_profiles_[g] = std::move(candidate);
          mig_holders_[g].push_back(Holder{});
          placed = true;
          break;
        }
      }
      for (int g : n.gpus) {
        if (placed) break;
        if (plan_.gpus[g].use != GpuUse::kIdle || plan_.gpus[g].model != model) continue;
        plan_.gpus[g].use = GpuUse::kMig;
        mig_profiles_[g] = {profile};
        mig_holders_[g] = {Holder{}};
        placed = true;
        plan_.warnings.push_back(
            absl::StrCat("node ", n.name, ": its MIG GPUs are full, so the canary ", profile->name,
                         " takes GPU ", plan_.gpus[g].index, " on its own"));
      }
      if (!placed) {
        plan_.warnings.push_back(absl::StrCat("node ", n.name, ": no room for a canary ",
                                              profile->name,
                                              " slice; free a slice or drop the canary"));
      }
    }
  }

  // MPS gives every client of a node the same cap: GPU memory / replicas, replicas >= 2.
  bool MpsFits(size_t g, const PackingItem& item, int clients_after) const {
    int node = gpu_node_[g];
    int replicas = std::max({2, plan_.nodes[node].shared_replicas, clients_after});
    int64_t need = std::max(node_mps_need_[node], item.memory_mib);
    return clients_after <= kMaxMpsClients && need <= *plan_.gpus[g].memory_mib / replicas;
  }

  bool SharedFits(size_t g, const PackingItem& item) const {
    const GpuPlan& gpu = plan_.gpus[g];
    if (gpu.shared_memory_mib + item.memory_mib > *gpu.memory_mib) return false;
    if (item.mechanism == Mechanism::kMps) {
      return MpsFits(g, item, static_cast<int>(gpu.clients.size()) + 1);
    }
    return true;
  }

  void AddShared(size_t g, const PackingItem& item) {
    GpuPlan& gpu = plan_.gpus[g];
    NodePlan& node = plan_.nodes[gpu_node_[g]];
    gpu.clients.push_back(item.holder);
    gpu.shared_memory_mib += item.memory_mib;
    node.shared_replicas =
        std::max({2, node.shared_replicas, static_cast<int>(gpu.clients.size())});
    if (item.mechanism == Mechanism::kMps) {
      node_mps_need_[gpu_node_[g]] = std::max(node_mps_need_[gpu_node_[g]], item.memory_mib);
    }
  }

  [[nodiscard]] absl::Status PlaceShared(const PackingItem& item) {
    GpuUse use = item.mechanism == Mechanism::kMps ? GpuUse::kMps : GpuUse::kTimeslice;
    for (size_t g = 0; g < plan_.gpus.size(); ++g) {
      if (plan_.gpus[g].use != use || gpu_type_[g] != item.type || !ZoneOk(g, item)) continue;
      if (!SharedFits(g, item)) continue;
      AddShared(g, item);
      return absl::OkStatus();
    }
    for (size_t g = 0; g < plan_.gpus.size(); ++g) {
      if (plan_.gpus[g].use != GpuUse::kIdle || gpu_type_[g] != item.type || !ZoneOk(g, item))
        continue;
      if (!NodeAccepts(gpu_node_[g], use) || !SharedFits(g, item)) continue;
      plan_.gpus[g].use = use;
      plan_.nodes[gpu_node_[g]].full_gpu_mode = use;
      AddShared(g, item);
      return absl::OkStatus();
    }
    std::string why = use == GpuUse::kMps
                          ? "a node shares its full GPUs one way only (time-slicing or MPS); MPS "
                            "needs a node without MIG GPUs and caps every client at GPU memory / "
                            "replicas, at most 48 clients per GPU"
                          : "a node shares its full GPUs one way only (time-slicing or MPS), an "
                            "exclusive GPU cannot sit on a time-sliced node, and declared memory "
                            "must add up to at most the card's";
    return absl::ResourceExhaustedError(absl::StrCat(Who(item), " cannot fit: no ", Where(item),
                                                     " has ", MibText(item.memory_mib, true),
                                                     " of shareable memory left (", why, ")"));
  }

  [[nodiscard]] absl::Status Finish() {
    for (size_t g = 0; g < plan_.gpus.size(); ++g) {
      GpuPlan& gpu = plan_.gpus[g];
      if (gpu.use != GpuUse::kMig) continue;
      auto layout = PlaceProfiles(*gpu.model, mig_profiles_[g]);
      if (!layout)
        return absl::InternalError(absl::StrCat("lost the layout of ", gpu.node, "/", gpu.index));
      absl::Status s = CheckLayout(*gpu.model, *layout);
      if (!s.ok()) {
        return absl::InternalError(
            absl::StrCat(gpu.node, "/", gpu.index, ": invalid layout: ", s.message()));
      }
      CreationOrder creation = PlanCreation(*gpu.model, *layout);
      s = CheckLayout(*gpu.model, creation.layout);
      if (!s.ok()) {
        return absl::InternalError(
            absl::StrCat(gpu.node, "/", gpu.index, ": invalid layout: ", s.message()));
      }
      gpu.create_order = creation.order;
      gpu.create_order_verified = creation.verified;
      if (!creation.verified) {
        plan_.warnings.push_back(absl::StrCat(
            gpu.node, " GPU ", gpu.index,
            ": no -cgi order is known to produce this layout; create "
            "the instances with explicit placements (NVML CreateGpuInstanceWithPlacement)"));
      }
      // Instances of one profile are interchangeable: hand them out in the order they were packed.
      std::vector<bool> taken(mig_holders_[g].size(), false);
      for (const PlacedInstance& inst : creation.layout) {
        PlannedInstance planned{inst.profile, inst.start, Holder{}};
        for (size_t k = 0; k < mig_profiles_[g].size(); ++k) {
          if (!taken[k] && mig_profiles_[g][k] == inst.profile) {
            taken[k] = true;
            planned.holder = mig_holders_[g][k];
            break;
          }
        }
        gpu.instances.push_back(planned);
      }
    }
    return absl::OkStatus();
  }

  Plan& plan_;
  std::vector<int> gpu_type_;
  std::vector<int> gpu_node_;
  std::vector<std::vector<const MigProfile*>> mig_profiles_;
  std::vector<std::vector<Holder>> mig_holders_;
  std::vector<int64_t> node_mps_need_;
};

}  // namespace

absl::Status PackFleet(std::vector<PackingItem> items, const std::vector<int>& gpu_type,
                       const std::vector<int>& gpu_node, Plan& plan) {
  return Packer(plan, gpu_type, gpu_node).Run(std::move(items));
}

}  // namespace plan
