#include "kube/live_source.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "wire/disruption_budget_codec.h"
#include "wire/k8s_codec.h"

namespace kube {
namespace {

void Warn(absl::string_view what, const absl::Status& status) {
  common::Log(common::LogLevel::kWarn, "object ignored",
              {{"kind", what}, {"reason", status.message()}});
}

std::string NameOf(const common::JsonValue& object) {
  const common::JsonValue* meta = common::FindMember(object, "metadata");
  return meta ? std::string(common::StringOr(*meta, "name")) : std::string();
}

std::string UidOrKey(const common::JsonValue& object) {
  const common::JsonValue* meta = common::FindMember(object, "metadata");
  if (!meta) return "";
  absl::string_view uid = common::StringOr(*meta, "uid");
  if (!uid.empty()) return std::string(uid);
  return absl::StrCat(common::StringOr(*meta, "namespace"), "/", common::StringOr(*meta, "name"));
}

}  // namespace

LiveSource::LiveSource(Api& client, ClusterState& state, LiveSourceOptions options)
    : state_(state), options_(options) {
  state_.RequireNamespaces();
  if (options.dra) {
    state_.RequireDra();
    dra_ = std::make_unique<DraSource>(client, state, options.reflector);
  }
  nodes_ = std::make_unique<Reflector>(
      client, "/api/v1/nodes",
      ReflectorHandler{[this](const std::vector<const common::JsonValue*>& items) {
                         std::vector<topology::NodeFacts> nodes;
                         for (const common::JsonValue* item : items) {
                           absl::StatusOr<topology::NodeFacts> n = wire::ParseNode(*item);
                           if (n.ok())
                             nodes.push_back(*std::move(n));
                           else
                             Warn("Node", n.status());
                         }
                         state_.ReplaceNodes(std::move(nodes));
                       },
                       [this](absl::string_view type, const common::JsonValue& object) {
                         if (type == "DELETED") {
                           state_.DeleteNode(NameOf(object));
                           return;
                         }
                         absl::StatusOr<topology::NodeFacts> n = wire::ParseNode(object);
                         if (n.ok())
                           state_.UpsertNode(*std::move(n));
                         else
                           Warn("Node", n.status());
                       }},
      options.reflector);
  pods_ = std::make_unique<Reflector>(
      client, "/api/v1/pods",
      ReflectorHandler{[this](const std::vector<const common::JsonValue*>& items) {
                         state_.ReplacePods(
                             [&](ClusterState::PodSink offer) {
                               for (const common::JsonValue* item : items) {
                                 absl::StatusOr<topology::PodFacts> p = wire::ParsePod(*item);
                                 if (p.ok())
                                   offer(*std::move(p));
                                 else
                                   Warn("Pod", p.status());
                               }
                             },
                             pod_list_began_);
                       },
                       [this](absl::string_view type, const common::JsonValue& object) {
                         if (type == "DELETED") {
                           state_.DeletePod(UidOrKey(object));
                           return;
                         }
                         absl::StatusOr<topology::PodFacts> p = wire::ParsePod(object);
                         if (p.ok())
                           state_.UpsertPod(*std::move(p));
                         else
                           Warn("Pod", p.status());
                       }},
      options.reflector);
  pods_->OnListBegins([this] { pod_list_began_ = state_.CommitMark(); });
  auto labels_of = [](const common::JsonValue& object) {
    const common::JsonValue* meta = common::FindMember(object, "metadata");
    const common::JsonValue* labels = meta ? common::FindMember(*meta, "labels") : nullptr;
    topology::Labels out;
    if (labels) {
      absl::StatusOr<topology::Labels> parsed = wire::ParseStringMap(*labels, "metadata.labels");
      if (parsed.ok()) out = *std::move(parsed);
    }
    return out;
  };
  namespaces_ = std::make_unique<Reflector>(
      client, "/api/v1/namespaces",
      ReflectorHandler{[this, labels_of](const std::vector<const common::JsonValue*>& items) {
                         absl::flat_hash_map<std::string, topology::Labels> all;
                         for (const common::JsonValue* item : items)
                           all[NameOf(*item)] = labels_of(*item);
                         state_.ReplaceNamespaces(std::move(all));
                       },
                       [this, labels_of](absl::string_view type, const common::JsonValue& object) {
                         if (type == "DELETED") {
                           state_.DeleteNamespace(NameOf(object));
                         } else {
                           state_.UpsertNamespace(NameOf(object), labels_of(object));
                         }
                       }},
      options.reflector);
  budgets_ = std::make_unique<Reflector>(
      client, "/apis/policy/v1/poddisruptionbudgets",
      ReflectorHandler{[this](const std::vector<const common::JsonValue*>& items) {
                         std::vector<topology::DisruptionBudget> budgets;
                         for (const common::JsonValue* item : items) {
                           absl::StatusOr<topology::DisruptionBudget> b =
                               wire::ParseDisruptionBudget(*item);
                           if (b.ok())
                             budgets.push_back(*std::move(b));
                           else
                             Warn("PodDisruptionBudget", b.status());
                         }
                         state_.ReplaceDisruptionBudgets(std::move(budgets));
                       },
                       [this](absl::string_view type, const common::JsonValue& object) {
                         const common::JsonValue* meta = common::FindMember(object, "metadata");
                         if (type == "DELETED") {
                           if (meta) {
                             state_.DeleteDisruptionBudget(common::StringOr(*meta, "namespace"),
                                                           common::StringOr(*meta, "name"));
                           }
                           return;
                         }
                         absl::StatusOr<topology::DisruptionBudget> b =
                             wire::ParseDisruptionBudget(object);
                         if (b.ok())
                           state_.UpsertDisruptionBudget(*std::move(b));
                         else
                           Warn("PodDisruptionBudget", b.status());
                       }},
      options.reflector);
}

LiveSource::~LiveSource() { Stop(); }

void LiveSource::Start() {
  // Namespaces first: tenant selectors need their labels before the first decision.
  namespaces_->Start();
  nodes_->Start();
  pods_->Start();
  budgets_->Start();
  if (dra_) dra_->Start();
  expiry_thread_ = std::thread([this] {
    common::NameThisThread("assume-expiry");
    while (true) {
      {
        common::MutexLock lock(&mu_);
        const auto until = std::chrono::steady_clock::now() + options_.expiry_poll;
        while (!stop_.load()) {
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(
              until - std::chrono::steady_clock::now());
          if (left <= std::chrono::milliseconds::zero()) break;
          cv_.WaitFor(&mu_, left);
        }
        if (stop_.load()) return;
      }
      int expired = state_.ExpireAssumptions(options_.reflector.clock->Now());
      if (expired > 0) {
        common::Log(common::LogLevel::kWarn, "bind assumptions expired unconfirmed",
                    {{"count", absl::StrCat(expired)}});
      }
    }
  });
}

void LiveSource::Stop() {
  stop_.store(true);
  {
    common::MutexLock lock(&mu_);  // so the expiry thread cannot miss the wakeup
  }
  cv_.NotifyAll();
  if (expiry_thread_.joinable()) expiry_thread_.join();
  if (dra_) dra_->Stop();
  for (Reflector* r : {budgets_.get(), pods_.get(), nodes_.get(), namespaces_.get()}) {
    if (r) r->Stop();
  }
}

bool LiveSource::synced() const {
  return nodes_->synced() && pods_->synced() && namespaces_->synced() && (!dra_ || dra_->synced());
}

uint64_t LiveSource::watch_restarts() const {
  return nodes_->counters().watch_restarts.load() + pods_->counters().watch_restarts.load() +
         namespaces_->counters().watch_restarts.load() +
         budgets_->counters().watch_restarts.load() + (dra_ ? dra_->watch_restarts() : 0);
}

}  // namespace kube
