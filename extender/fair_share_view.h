// Fair sharing as people read it: per fair-sharing tenant and governed item, what it is
// guaranteed, holds, borrows, lends and its fair share (topology/fair_share.h), for /metrics,
// /debug/allocations, the GPU map and explain. Written from one ledger, so they agree. Pure.
//
// JSON (WriteShareJson): {"tenant","group","weight","aboveFairShare","items":[{"resource",
//   "guaranteed","limit" (null: none of its own),"held","pending","borrowed","lent",
//   "fairShare" (null: the capacity of the item is not known)}]}
#ifndef GPU_TENANCY_EXTENDER_FAIR_SHARE_VIEW_H_
#define GPU_TENANCY_EXTENDER_FAIR_SHARE_VIEW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/prometheus_text.h"
#include "rapidjson/prettywriter.h"
#include "topology/fair_share.h"

namespace extender {

struct ShareLine {
  std::string resource;  // the quota item
  int64_t guaranteed = 0;
  std::optional<int64_t> limit;
  int64_t held = 0;
  int64_t pending = 0;
  int64_t borrowed = 0;
  double lent = 0;
  std::optional<double> fair_share;
};
// One line per governed item, in item order. `items` are the ledger's governed items.
std::vector<ShareLine> ShareLines(const topology::TenantShare& share,
                                  const std::set<std::string, std::less<>>& items);

// gpu_tenancy_tenant_guaranteed, _held, _borrowed, _lent and _fair_share, by tenant and
// resource (the quota item). For a policy without fair sharing the families have no samples
// (declared all the same, so dashboards reading them find them).
void AppendShareMetrics(const topology::FairShareLedger& ledger, common::MetricsText& out);

// "guaranteed 4 · holds 6 (borrows 2) · lends 0 · fair share 5.33" for nvidia.com/gpu, each
// governed item so, joined by "; ".
std::string ShareText(const topology::TenantShare& share,
                      const std::set<std::string, std::less<>>& items);

template <typename Writer>
void WriteShareJson(Writer& w, const topology::TenantShare& share,
                    const std::set<std::string, std::less<>>& items) {
  w.StartObject();
  w.Key("tenant");
  w.String(share.name.data(), static_cast<rapidjson::SizeType>(share.name.size()));
  w.Key("group");
  w.String(share.group.data(), static_cast<rapidjson::SizeType>(share.group.size()));
  w.Key("weight");
  w.Int64(share.weight);
  w.Key("aboveFairShare");
  w.Double(share.above_fair_share);
  w.Key("items");
  w.StartArray();
  for (const ShareLine& line : ShareLines(share, items)) {
    w.StartObject();
    w.Key("resource");
    w.String(line.resource.data(), static_cast<rapidjson::SizeType>(line.resource.size()));
    w.Key("guaranteed");
    w.Int64(line.guaranteed);
    w.Key("limit");
    if (line.limit) {
      w.Int64(*line.limit);
    } else {
      w.Null();
    }
    w.Key("held");
    w.Int64(line.held);
    w.Key("pending");
    w.Int64(line.pending);
    w.Key("borrowed");
    w.Int64(line.borrowed);
    w.Key("lent");
    w.Double(line.lent);
    w.Key("fairShare");
    if (line.fair_share) {
      w.Double(*line.fair_share);
    } else {
      w.Null();
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_FAIR_SHARE_VIEW_H_
