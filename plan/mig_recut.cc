#include "plan/mig_recut.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plan/mig_packing.h"

namespace plan {
namespace {

using topology::GpuModel;
using topology::MigProfile;
using topology::PlacedInstance;

// The profile leftover space is cut into: fewest memory slices, then fewest compute slices,
// plain before media-extension variants ("1g.10gb" before "1g.10gb+me").
const MigProfile* SmallestProfile(const GpuModel& model) {
  const MigProfile* best = nullptr;
  auto key = [](const MigProfile& p) {
    return std::make_tuple(p.memory_slices, p.compute_slices, p.name.find('+') != std::string::npos,
                           p.name);
  };
  for (const MigProfile& p : model.profiles) {
    if (!best || key(p) < key(*best)) best = &p;
  }
  return best;
}

class RecutSearch {
 public:
  RecutSearch(const RecutProblem& problem, int64_t budget)
      : problem_(problem), budget_(budget), nodes_(problem.nodes.size()) {
    const size_t pods = problem.pods.size();
    resolved_.resize(pods);
    eligible_.resize(pods);
    wants_.resize(pods);
    for (size_t p = 0; p < pods; ++p) {
      for (const auto& [name, count] : problem.pods[p].profiles) wants_[p][name] += count;
      for (size_t n : problem.pods[p].nodes) {
        if (n >= problem.nodes.size() || !problem.nodes[n].model) continue;
        std::vector<const MigProfile*> want;
        bool known = true;
        for (const auto& [name, count] : problem.pods[p].profiles) {
          const MigProfile* profile = problem.nodes[n].model->FindProfile(name);
          if (!profile) known = false;
          for (int64_t i = 0; profile && i < count; ++i) want.push_back(profile);
        }
        if (!known) continue;
        eligible_[p].push_back(n);
        resolved_[p].push_back(std::move(want));
      }
    }
    ClassifyNodes();
    // Larger pods first: they constrain the most, so bounds bite early.
    order_.resize(pods);
    for (size_t p = 0; p < pods; ++p) order_[p] = p;
    std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
      return std::make_pair(eligible_[a].empty(), -Slices(a)) <
             std::make_pair(eligible_[b].empty(), -Slices(b));
    });
    assignment_.assign(pods, -1);
    best_assignment_ = assignment_;
    best_recut_.assign(problem.nodes.size(), false);
  }

  RecutProposal Run() {
    Visit(0);
    RecutProposal out;
    out.cost = best_;
    out.exhaustive = !stopped_;
    std::vector<std::vector<const MigProfile*>> profiles(problem_.nodes.size());
    std::vector<std::vector<size_t>> pods_on(problem_.nodes.size());
    for (size_t p = 0; p < best_assignment_.size(); ++p) {
      const int slot = best_assignment_[p];
      if (slot < 0) {
        out.unserved.push_back(p);
        continue;
      }
      const size_t n = eligible_[p][slot];
      pods_on[n].push_back(p);
      const auto& want = resolved_[p][slot];
      profiles[n].insert(profiles[n].end(), want.begin(), want.end());
    }
    for (size_t n = 0; n < problem_.nodes.size(); ++n) {
      if (pods_on[n].empty()) continue;
      if (!best_recut_[n]) {
        for (size_t p : pods_on[n]) out.fits_now.emplace_back(p, n);
        continue;
      }
      const RecutNode& node = problem_.nodes[n];
      std::vector<const MigProfile*> all = node.keep;
      all.insert(all.end(), profiles[n].begin(), profiles[n].end());
      NodeRecut recut{n, {}, pods_on[n]};
      // The search checked these fit; the geometry only adds the leftover fill.
      if (auto geometry = RecutGeometry(*node.model, node.gpus, all)) recut.gpus = *geometry;
      out.recuts.push_back(std::move(recut));
    }
    std::sort(out.fits_now.begin(), out.fits_now.end());
    return out;
  }

 private:
  struct NodeState {
    bool recut = false;
    int pods = 0;
    std::vector<const MigProfile*> profiles;  // of every pod assigned, as-is or not
    std::map<std::string, int64_t, std::less<>> used_now;
  };
  struct Undo {
    bool opened = false;  // this step re-cut the node
    bool as_is = false;
  };

  int Slices(size_t pod) const {
    int slices = 0;
    if (!resolved_[pod].empty()) {
      for (const MigProfile* p : resolved_[pod].front()) slices += p->memory_slices;
    }
    return slices;
  }

  // Nodes alike in everything the search reads get one class: trying one of them untouched is
  // as good as trying any.
  void ClassifyNodes() {
    std::vector<std::vector<size_t>> users(problem_.nodes.size());
    for (size_t p = 0; p < eligible_.size(); ++p) {
      for (size_t n : eligible_[p]) users[n].push_back(p);
    }
    std::map<std::string, int> ids;
    class_of_.resize(problem_.nodes.size());
    for (size_t n = 0; n < problem_.nodes.size(); ++n) {
      const RecutNode& node = problem_.nodes[n];
      std::vector<std::string> keep;
      for (const MigProfile* p : node.keep) keep.push_back(p->name);
      std::sort(keep.begin(), keep.end());
      std::string key = absl::StrCat(
          node.model ? node.model->model : "", "|", node.gpus, "|", absl::StrJoin(keep, ","), "|",
          absl::StrJoin(node.free_now, ",", absl::PairFormatter("=")), "|", node.drained_pods, "|",
          absl::StrJoin(node.drained_tenants, ","), "|", absl::StrJoin(users[n], ","));
      class_of_[n] = ids.emplace(std::move(key), static_cast<int>(ids.size())).first->second;
    }
  }

  bool Feasible(size_t n, const std::vector<const MigProfile*>& extra) {
    const RecutNode& node = problem_.nodes[n];
    std::vector<const MigProfile*> all = node.keep;
    all.insert(all.end(), nodes_[n].profiles.begin(), nodes_[n].profiles.end());
    all.insert(all.end(), extra.begin(), extra.end());
    std::vector<std::string> names;
    for (const MigProfile* p : all) names.push_back(p->name);
    std::sort(names.begin(), names.end());
    std::string key =
        absl::StrCat(node.model->model, "|", node.gpus, "|", absl::StrJoin(names, ","));
    auto [it, inserted] = feasible_.try_emplace(std::move(key), false);
    if (inserted) {
      absl::StatusOr<std::vector<std::vector<PlacedInstance>>> packed =
          PackProfiles(*node.model, all);
      it->second = packed.ok() && static_cast<int>(packed->size()) <= node.gpus;
    }
    return it->second;
  }

  bool FitsAsIs(size_t n, size_t pod) const {
    const NodeState& state = nodes_[n];
    if (state.recut) return false;
    const RecutNode& node = problem_.nodes[n];
    for (const auto& [name, count] : wants_[pod]) {
      auto free = node.free_now.find(name);
      auto used = state.used_now.find(name);
      const int64_t held = used == state.used_now.end() ? 0 : used->second;
      if (free == node.free_now.end() || held + count > free->second) return false;
    }
    return true;
  }

  std::optional<Undo> Apply(size_t pod, int slot) {
    const size_t n = eligible_[pod][slot];
    NodeState& state = nodes_[n];
    const auto& want = resolved_[pod][slot];
    Undo undo;
    if (FitsAsIs(n, pod)) {
      undo.as_is = true;
      for (const auto& [name, count] : wants_[pod]) state.used_now[name] += count;
    } else {
      if (!Feasible(n, want)) return std::nullopt;
      if (!state.recut) {
        undo.opened = true;
        state.recut = true;
        const RecutNode& node = problem_.nodes[n];
        cost_.drained_pods += node.drained_pods;
        cost_.recut_nodes += 1;
        for (const std::string& t : node.drained_tenants) {
          if (tenants_[t]++ == 0) cost_.drained_tenants += 1;
        }
      }
    }
    state.profiles.insert(state.profiles.end(), want.begin(), want.end());
    state.pods += 1;
    cost_.served += 1;
    assignment_[pod] = slot;
    return undo;
  }

  void Revert(size_t pod, int slot, const Undo& undo) {
    const size_t n = eligible_[pod][slot];
    NodeState& state = nodes_[n];
    state.profiles.resize(state.profiles.size() - resolved_[pod][slot].size());
    state.pods -= 1;
    cost_.served -= 1;
    assignment_[pod] = -1;
    if (undo.as_is) {
      for (const auto& [name, count] : wants_[pod]) state.used_now[name] -= count;
    }
    if (undo.opened) {
      state.recut = false;
      const RecutNode& node = problem_.nodes[n];
      cost_.drained_pods -= node.drained_pods;
      cost_.recut_nodes -= 1;
      for (const std::string& t : node.drained_tenants) {
        if (--tenants_[t] == 0) cost_.drained_tenants -= 1;
      }
    }
  }

  void Visit(size_t depth) {
    if (++steps_ > budget_) {
      stopped_ = true;
      return;
    }
    if (depth == order_.size()) {
      if (cost_.BetterThan(best_)) {
        best_ = cost_;
        best_assignment_ = assignment_;
        best_recut_.resize(nodes_.size());
        for (size_t n = 0; n < nodes_.size(); ++n) best_recut_[n] = nodes_[n].recut;
      }
      return;
    }
    RecutCost optimistic = cost_;
    optimistic.served += static_cast<int>(order_.size() - depth);
    if (!optimistic.BetterThan(best_)) return;

    const size_t pod = order_[depth];
    // Cheapest first: free today, a node already re-cut, then new re-cuts by what they drain.
    struct Option {
      int category;
      int drained;
      size_t tenants;
      int slot;
    };
    std::vector<Option> options;
    for (size_t slot = 0; slot < eligible_[pod].size(); ++slot) {
      const size_t n = eligible_[pod][slot];
      const RecutNode& node = problem_.nodes[n];
      int category = FitsAsIs(n, pod) ? 0 : nodes_[n].recut ? 1 : 2;
      options.push_back({category, category == 2 ? node.drained_pods : 0,
                         category == 2 ? node.drained_tenants.size() : 0, static_cast<int>(slot)});
    }
    std::stable_sort(options.begin(), options.end(), [](const Option& a, const Option& b) {
      return std::tie(a.category, a.drained, a.tenants) <
             std::tie(b.category, b.drained, b.tenants);
    });
    std::vector<int> tried_classes;
    for (const Option& o : options) {
      const size_t n = eligible_[pod][o.slot];
      if (nodes_[n].pods == 0) {
        if (std::find(tried_classes.begin(), tried_classes.end(), class_of_[n]) !=
            tried_classes.end()) {
          continue;
        }
        tried_classes.push_back(class_of_[n]);
      }
      std::optional<Undo> undo = Apply(pod, o.slot);
      if (!undo) continue;
      Visit(depth + 1);
      Revert(pod, o.slot, *undo);
      if (stopped_) return;
    }
    Visit(depth + 1);  // leave it unserved
  }

  const RecutProblem& problem_;
  const int64_t budget_;
  std::vector<NodeState> nodes_;
  std::vector<std::vector<size_t>> eligible_;  // per pod: nodes whose model has its profiles
  std::vector<std::vector<std::vector<const MigProfile*>>> resolved_;  // per pod, per slot
  std::vector<std::map<std::string, int64_t, std::less<>>> wants_;     // per pod: by profile name
  std::vector<int> class_of_;
  std::vector<size_t> order_;
  absl::flat_hash_map<std::string, bool> feasible_;
  std::map<std::string, int> tenants_;  // drained tenants -> re-cut nodes draining them
  std::vector<int> assignment_;         // per pod: slot into eligible_, or -1
  RecutCost cost_;
  RecutCost best_;
  std::vector<int> best_assignment_;
  std::vector<bool> best_recut_;
  int64_t steps_ = 0;
  bool stopped_ = false;
};

}  // namespace

bool RecutCost::BetterThan(const RecutCost& other) const {
  return std::make_tuple(-served, drained_pods, drained_tenants, recut_nodes) <
         std::make_tuple(-other.served, other.drained_pods, other.drained_tenants,
                         other.recut_nodes);
}

RecutProposal ProposeRecuts(const RecutProblem& problem, int64_t step_budget) {
  return RecutSearch(problem, step_budget).Run();
}

std::optional<std::vector<std::vector<PlacedInstance>>> RecutGeometry(
    const GpuModel& model, int gpus, const std::vector<const MigProfile*>& profiles) {
  absl::StatusOr<std::vector<std::vector<PlacedInstance>>> packed = PackProfiles(model, profiles);
  if (!packed.ok() || static_cast<int>(packed->size()) > gpus) return std::nullopt;
  std::vector<std::vector<PlacedInstance>> layouts = *std::move(packed);
  layouts.resize(gpus);
  const MigProfile* fill = SmallestProfile(model);
  if (!fill) return layouts;
  for (std::vector<PlacedInstance>& layout : layouts) {
    std::vector<const MigProfile*> cut;
    for (const PlacedInstance& i : layout) cut.push_back(i.profile);
    while (true) {
      cut.push_back(fill);
      std::optional<std::vector<PlacedInstance>> more = PlaceProfiles(model, cut);
      if (!more) break;
      layout = *std::move(more);
    }
  }
  return layouts;
}

}  // namespace plan
