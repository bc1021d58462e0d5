#include "cmd/serve_extender.h"

#include <string>
#include <utility>

#include "absl/strings/str_split.h"
#include "common/json.h"
#include "extender/allocations.h"
#include "extender/device_attribution.h"
#include "extender/fair_share_view.h"
#include "extender/inventory.h"
#include "extender/preempt.h"
#include "extender/verbs.h"
#include "wire/extender_codec.h"

namespace cmd {
namespace {

// The audit event for one node of a preempt answer that changed or dropped its victims.
common::PreemptAudit PreemptEvent(const extender::PreemptReply& reply,
                                  const extender::PreemptNode& node) {
  common::PreemptAudit a;
  a.outcome = node.outcome == extender::PreemptNode::Outcome::kDropped
                  ? common::PreemptAudit::Outcome::kDropped
                  : common::PreemptAudit::Outcome::kChanged;
  std::pair<std::string, std::string> ns_name = absl::StrSplit(reply.pod, absl::MaxSplits('/', 1));
  a.namespace_name = ns_name.first;
  a.pod = ns_name.second;
  a.uid = reply.uid;
  a.tenant = {reply.tenant, reply.tier};
  a.node = node.node;
  a.proposed_victims = node.proposed;
  a.victims = node.victims;
  a.reason = node.reason;
  return a;
}

}  // namespace

ExtenderService::ExtenderService(const kube::ClusterState& state, extender::BindBackend* binder,
                                 common::AuditLog* audit)
    : state_(state), binder_(binder), audit_(audit) {}

std::vector<server::PostRoute> ExtenderService::Routes() {
  std::vector<server::PostRoute> routes;
  routes.push_back({"/extender/filter", [this](absl::string_view body) { return Filter(body); },
                    /*waits_on_io=*/false});
  routes.push_back({"/extender/prioritize",
                    [this](absl::string_view body) {
                      std::shared_ptr<const topology::ModelState> s = state_.Current();
                      extender::VerbReply r = extender::Prioritize(body, s.get());
                      return server::Reply{r.http_status, std::move(r.body), {}};
                    },
                    /*waits_on_io=*/false});
  // An audit line is a write(2) that a full disk or pipe can stall.
  routes.push_back({"/extender/preempt", [this](absl::string_view body) { return Preempt(body); },
                    /*waits_on_io=*/audit_ != nullptr});
  routes.push_back({"/extender/bind", [this](absl::string_view body) { return Bind(body); }});
  return routes;
}

server::Reply ExtenderService::Filter(absl::string_view body) {
  std::shared_ptr<const topology::ModelState> s = state_.Current();
  extender::VerbReply r = extender::Filter(body, s.get());
  for (const auto& [key, n] : r.rejections) {
    filter_rejections_.Add({key.first, key.second}, static_cast<uint64_t>(n));
  }
  return server::Reply{r.http_status, std::move(r.body), {}};
}

server::Reply ExtenderService::Preempt(absl::string_view body) {
  std::shared_ptr<const topology::ModelState> s = state_.Current();
  extender::PreemptReply r = extender::Preempt(body, s.get());
  for (const extender::PreemptNode& n : r.nodes) {
    preempt_nodes_.Add({r.tenant, extender::OutcomeName(n.outcome)});
    if (audit_ && n.outcome != extender::PreemptNode::Outcome::kKept) {
      audit_->Write(PreemptEvent(r, n));
    }
  }
  return server::Reply{r.http_status, std::move(r.body), {}};
}

server::Reply ExtenderService::Bind(absl::string_view body) {
  if (!binder_) {
    return server::Reply{200,
                         wire::EncodeBindingResult(
                             "gpu-tenancy: bind needs a live cluster (--kubeconfig or in-cluster), "
                             "not a cluster file"),
                         {}};
  }
  extender::VerbReply r = extender::Bind(body, *binder_);
  if (r.http_status == 200) binds_.Add({r.kept ? "bound" : "failed"});
  return server::Reply{r.http_status, std::move(r.body), {}};
}

void ExtenderService::Collect(common::MetricsText& out) const {
  filter_rejections_.Collect(out);
  binds_.Collect(out);
  preempt_nodes_.Collect(out);
  if (std::shared_ptr<const topology::ModelState> current = state_.Current()) {
    extender::AppendInventoryMetrics(*current, out);
    extender::AppendTenantMetrics(extender::Allocations(*current), out);
    extender::AppendShareMetrics(topology::MakeLedger(*current->snapshot, *current->policy), out);
    extender::AppendDeviceMetrics(extender::AttributeDevices(*current), out);
  }
}

std::vector<server::PostRoute> BenchBaselineRoutes() {
  std::vector<server::PostRoute> routes;
  routes.push_back({"/bench/echo",
                    [](absl::string_view) {
                      return server::Reply{200, R"({"ok":true})", {}};
                    },
                    /*waits_on_io=*/false});
  routes.push_back(
      {"/bench/parse",
       [](absl::string_view body) {
         absl::StatusOr<rapidjson::Document> doc = common::ParseJson(body);
         if (!doc.ok()) {
           return server::Reply{400, wire::EncodeHttpError(doc.status().message()), {}};
         }
         return server::Reply{200, R"({"ok":true})", {}};
       },
       /*waits_on_io=*/false});
  routes.push_back(
      {"/bench/parse-echo",
       [](absl::string_view body) {
         // What a full-Node filter that keeps every node must do at the least.
         absl::StatusOr<wire::ExtenderArgs> args = wire::ParseExtenderArgs(body);
         if (!args.ok()) {
           return server::Reply{400, wire::EncodeHttpError(args.status().message()), {}};
         }
         wire::FilterReply keep_all;
         for (size_t i = 0; i < args->node_names.size(); ++i) keep_all.kept.push_back(i);
         return server::Reply{200, wire::EncodeFilterResult(*args, keep_all), {}};
       },
       /*waits_on_io=*/false});
  return routes;
}

}  // namespace cmd
