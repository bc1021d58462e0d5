// server/metrics: RequestMetrics (counts per route and code, the latency histogram's buckets,
// sum and count) and LabeledCounter (series per label values, escaping), as Prometheus text.
#include "server/metrics.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace server {
namespace {

// The lines of `text` that start with `prefix`, in order.
std::vector<std::string> Lines(const std::string& text, absl::string_view prefix) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, prefix)) out.emplace_back(line);
  }
  return out;
}

std::string Render(const RequestMetrics& m) {
  std::string out;
  {
    common::MetricsText text(out);
    m.Collect(text);
  }
  return out;
}

TEST(RequestMetricsTest, NoRoutesOnlyHeaders) {
  RequestMetrics m;
  std::string out = "kept\n";
  {
    common::MetricsText text(out);
    m.Collect(text);
  }
  EXPECT_EQ(out,
            "kept\n"
            "# HELP gpu_tenancy_http_requests_total HTTP requests served, by route and code.\n"
            "# TYPE gpu_tenancy_http_requests_total counter\n"
            "# HELP gpu_tenancy_http_request_duration_seconds Time from request read to reply, "
            "by route.\n"
            "# TYPE gpu_tenancy_http_request_duration_seconds histogram\n");
}

TEST(RequestMetricsTest, CountsPerRouteAndCode) {
  RequestMetrics m;
  const size_t filter = m.AddRoute("/filter");
  const size_t bind = m.AddRoute("/bind");
  EXPECT_EQ(filter, 0u);
  EXPECT_EQ(bind, 1u);
  struct Row {
    size_t route;
    int code;
    int times;
  };
  const std::vector<Row> rows = {
      {filter, 200, 3}, {filter, 400, 1}, {filter, 503, 2}, {filter, 302, 1}, {bind, 500, 1},
      {bind, 413, 2},   {bind, 415, 1},   {bind, 403, 1},   {bind, 404, 1},
  };
  for (const Row& row : rows) {
    for (int i = 0; i < row.times; ++i) m.Record(row.route, row.code, 0.001);
  }
  // Known codes in their fixed order, then every other code as "other"; zero counts omitted.
  EXPECT_EQ(Lines(Render(m), "gpu_tenancy_http_requests_total{"),
            (std::vector<std::string>{
                "gpu_tenancy_http_requests_total{route=\"/filter\",code=\"200\"} 3",
                "gpu_tenancy_http_requests_total{route=\"/filter\",code=\"400\"} 1",
                "gpu_tenancy_http_requests_total{route=\"/filter\",code=\"other\"} 3",
                "gpu_tenancy_http_requests_total{route=\"/bind\",code=\"403\"} 1",
                "gpu_tenancy_http_requests_total{route=\"/bind\",code=\"404\"} 1",
                "gpu_tenancy_http_requests_total{route=\"/bind\",code=\"413\"} 2",
                "gpu_tenancy_http_requests_total{route=\"/bind\",code=\"415\"} 1",
                "gpu_tenancy_http_requests_total{route=\"/bind\",code=\"500\"} 1",
            }));
}

TEST(RequestMetricsTest, HistogramBucketsAreCumulative) {
  struct Row {
    std::string name;
    std::vector<double> seconds;
    std::vector<int> buckets;  // at le 0.0001 ... 2.5
    std::string sum;
  };
  const std::vector<Row> rows = {
      {"nothing recorded", {}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "0"},
      {"a bound is inclusive", {0.001}, {0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1}, "0.001"},
      {"fast and slow", {0.00005, 0.03, 0.3}, {1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 3}, "0.33005"},
      {"past the last bucket", {3.0, 0.0}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, "3"},
  };
  const std::vector<std::string> bounds = {"0.0001", "0.00025", "0.0005", "0.001",
                                           "0.0025", "0.005",   "0.01",   "0.025",
                                           "0.05",   "0.1",     "0.5",    "2.5"};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    RequestMetrics m;
    m.AddRoute("/other");
    const size_t r = m.AddRoute("/prioritize");
    for (double s : row.seconds) m.Record(r, 200, s);
    const std::string out = Render(m);
    std::vector<std::string> want;
    for (size_t i = 0; i < bounds.size(); ++i) {
      want.push_back(absl::StrCat("gpu_tenancy_http_request_duration_seconds_bucket{route=\"/",
                                  "prioritize\",le=\"", bounds[i], "\"} ", row.buckets[i]));
    }
    want.push_back(absl::StrCat(
        "gpu_tenancy_http_request_duration_seconds_bucket{route=\"/prioritize\",le=\"+Inf\"} ",
        row.seconds.size()));
    EXPECT_EQ(Lines(out, "gpu_tenancy_http_request_duration_seconds_bucket{route=\"/prioritize\""),
              want);
    EXPECT_EQ(
        Lines(out, "gpu_tenancy_http_request_duration_seconds_sum{route=\"/prioritize\"}"),
        std::vector<std::string>{absl::StrCat(
            "gpu_tenancy_http_request_duration_seconds_sum{route=\"/prioritize\"} ", row.sum)});
    EXPECT_EQ(Lines(out, "gpu_tenancy_http_request_duration_seconds_count{route=\"/prioritize\"}"),
              std::vector<std::string>{absl::StrCat(
                  "gpu_tenancy_http_request_duration_seconds_count{route=\"/prioritize\"} ",
                  row.seconds.size())});
    // The other route is rendered with zeros, not skipped.
    EXPECT_EQ(Lines(out, "gpu_tenancy_http_request_duration_seconds_count{route=\"/other\"}"),
              std::vector<std::string>{
                  "gpu_tenancy_http_request_duration_seconds_count{route=\"/other\"} 0"});
  }
}

TEST(RequestMetricsTest, ConcurrentRecordsAreAllCounted) {
  RequestMetrics m;
  const size_t r = m.AddRoute("/validate");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) m.Record(r, i % 2 ? 200 : 403, 0.002);
    });
  }
  for (std::thread& t : threads) t.join();
  const std::string out = Render(m);
  EXPECT_EQ(Lines(out, "gpu_tenancy_http_requests_total{"),
            (std::vector<std::string>{
                "gpu_tenancy_http_requests_total{route=\"/validate\",code=\"200\"} 2000",
                "gpu_tenancy_http_requests_total{route=\"/validate\",code=\"403\"} 2000"}));
  EXPECT_TRUE(absl::StrContains(
      out, "gpu_tenancy_http_request_duration_seconds_count{route=\"/validate\"} 4000\n"));
  EXPECT_TRUE(absl::StrContains(
      out,
      "gpu_tenancy_http_request_duration_seconds_bucket{route=\"/validate\",le=\"0.001\"} 0\n"));
  EXPECT_TRUE(absl::StrContains(out,
                                "gpu_tenancy_http_request_duration_seconds_bucket{route=\"/"
                                "validate\",le=\"0.0025\"} 4000\n"));
  EXPECT_TRUE(absl::StrContains(
      out, "gpu_tenancy_http_request_duration_seconds_sum{route=\"/validate\"} 8\n"));
}

TEST(LabeledCounterTest, SeriesSortedByValues) {
  LabeledCounter c("gpu_tenancy_webhook_denials_total", "Denials by rule.", {"rule", "kind"});
  std::string empty;
  {
    common::MetricsText text(empty);
    c.Collect(text);
  }
  EXPECT_EQ(empty,
            "# HELP gpu_tenancy_webhook_denials_total Denials by rule.\n"
            "# TYPE gpu_tenancy_webhook_denials_total counter\n");
  struct Row {
    std::vector<absl::string_view> values;
    uint64_t n;
  };
  const std::vector<Row> rows = {
      {{"tier", "Pod"}, 1},           {{"device", "Pod"}, 2}, {{"tier", "Pod"}, 4},
      {{"tier", "ResourceClaim"}, 1}, {{"device", "Pod"}, 0},
  };
  for (const Row& row : rows) c.Add(row.values, row.n);
  c.Add({"limits", "Pod"});  // n defaults to 1
  std::string out;
  {
    common::MetricsText text(out);
    c.Collect(text);
  }
  EXPECT_EQ(out,
            "# HELP gpu_tenancy_webhook_denials_total Denials by rule.\n"
            "# TYPE gpu_tenancy_webhook_denials_total counter\n"
            "gpu_tenancy_webhook_denials_total{rule=\"device\",kind=\"Pod\"} 2\n"
            "gpu_tenancy_webhook_denials_total{rule=\"limits\",kind=\"Pod\"} 1\n"
            "gpu_tenancy_webhook_denials_total{rule=\"tier\",kind=\"Pod\"} 5\n"
            "gpu_tenancy_webhook_denials_total{rule=\"tier\",kind=\"ResourceClaim\"} 1\n");
}

TEST(LabeledCounterTest, EscapesValues) {
  struct Row {
    std::string value;
    std::string rendered;
  };
  const std::vector<Row> rows = {
      {"plain", "plain"},
      {"say \"no\"", "say \\\"no\\\""},
      {"C:\\dir", "C:\\\\dir"},
      {"two\nlines", "two\\nlines"},  // escaped as the exposition format says, not dropped
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.value);
    LabeledCounter c("m", "h", {"v"});
    c.Add({row.value}, 3);
    std::string out;
    {
      common::MetricsText text(out);
      c.Collect(text);
    }
    EXPECT_EQ(Lines(out, "m{"),
              std::vector<std::string>{absl::StrCat("m{v=\"", row.rendered, "\"} 3")});
  }
}

TEST(LabeledCounterTest, ConcurrentAddsAreAllCounted) {
  LabeledCounter c("m", "h", {"verdict"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) c.Add({t % 2 ? "allowed" : "denied"});
    });
  }
  for (std::thread& t : threads) t.join();
  std::string out;
  {
    common::MetricsText text(out);
    c.Collect(text);
  }
  EXPECT_EQ(Lines(out, "m{"), (std::vector<std::string>{"m{verdict=\"allowed\"} 1000",
                                                        "m{verdict=\"denied\"} 1000"}));
}

}  // namespace
}  // namespace server
