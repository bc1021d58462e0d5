// The GPU inventory as operators read it: Prometheus gauges of what each node offers and has
// free (per MIG profile, shared replicas, GPU memory), rolled up per pool. Pure: renders an
// immutable snapshot; label values are node, pool and resource names only (no pod names), so
// cardinality is bounded by the fleet.
#ifndef GPU_TENANCY_EXTENDER_INVENTORY_H_
#define GPU_TENANCY_EXTENDER_INVENTORY_H_

#include <string>

#include "absl/strings/string_view.h"
#include "common/prometheus_text.h"
#include "topology/snapshot.h"

namespace extender {

void AppendInventoryMetrics(const topology::ModelState& state, common::MetricsText& out);

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_INVENTORY_H_
