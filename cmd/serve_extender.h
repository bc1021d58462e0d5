// serve's scheduler-extender routes: filter, prioritize, preempt and bind over the live state,
// with their decision counters (labelled by rule codes and the policy's tenants only, so
// bounded however large the cluster) and the inventory series. Testable alone: give it a
// state, a bind backend (or none) and an audit log (or none), call its routes' handlers.
//
//   ExtenderService extender(cluster.state(), cluster.binder(), audit);
//   std::vector<server::PostRoute> routes = extender.Routes();
//   extender.Collect(metrics_text);
//
// The routes and Collect are thread-safe; the service must outlive the server serving them.
#ifndef GPU_TENANCY_CMD_SERVE_EXTENDER_H_
#define GPU_TENANCY_CMD_SERVE_EXTENDER_H_

#include <vector>

#include "common/audit_log.h"
#include "common/prometheus_text.h"
#include "extender/bind.h"
#include "kube/cluster_state.h"
#include "server/metrics.h"
#include "server/server.h"

namespace cmd {

class ExtenderService {
 public:
  // `binder` null: bind answers that it needs a live cluster. `audit` may be null.
  ExtenderService(const kube::ClusterState& state, extender::BindBackend* binder,
                  common::AuditLog* audit);
  ExtenderService(const ExtenderService&) = delete;
  ExtenderService& operator=(const ExtenderService&) = delete;

  // /extender/filter, /extender/prioritize, /extender/preempt and /extender/bind.
  std::vector<server::PostRoute> Routes();
  // The decision counters, then the inventory of the current state (none before it syncs).
  void Collect(common::MetricsText& out) const;

 private:
  server::Reply Filter(absl::string_view body);
  server::Reply Preempt(absl::string_view body);
  server::Reply Bind(absl::string_view body);

  const kube::ClusterState& state_;
  extender::BindBackend* binder_;
  common::AuditLog* audit_;
  server::LabeledCounter filter_rejections_{"gpu_tenancy_filter_rejections_total",
                                            "Nodes the filter rejected, by verdict and rule.",
                                            {"verdict", "rule"}};
  server::LabeledCounter binds_{"gpu_tenancy_binds_total", "Bind calls, by result.", {"result"}};
  server::LabeledCounter preempt_nodes_{
      "gpu_tenancy_preempt_nodes_total",
      "Candidate nodes of preempt calls, by the preemptor's tenant and whether kube-scheduler's "
      "victims were kept, changed or the node dropped.",
      {"tenant", "outcome"}};
};

// /bench/echo, /bench/parse and /bench/parse-echo: what bench/ measures the real routes
// against on the same server (transport only; JSON parsing; a full-Node filter keeping all).
std::vector<server::PostRoute> BenchBaselineRoutes();

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_SERVE_EXTENDER_H_
