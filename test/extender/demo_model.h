// Helpers for the extender's pure tests: the embedded demo cluster and policy (cmd/demo, see
// the fleet it describes at the top of cluster.yaml) as a topology::ModelState, and
// kube-scheduler's request bodies for a one-container pod.
#ifndef GPU_TENANCY_TEST_EXTENDER_DEMO_MODEL_H_
#define GPU_TENANCY_TEST_EXTENDER_DEMO_MODEL_H_

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_loader.h"
#include "common/yaml_json.h"
#include "gtest/gtest.h"
#include "topology/snapshot.h"
#include "wire/k8s_codec.h"

namespace extender::testing {

// The seven demo nodes, in the order the tests send them.
inline constexpr char kDemoNodes[] =
    R"(["mig-a","mig-b","mig-c","mig-1g","ts-a","excl-a","cpu-a"])";

inline std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(GT_SOURCE_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline std::string ReadTestData(const std::string& relative) {
  return ReadSource("test/testdata/" + relative);
}

inline topology::ClusterData DemoCluster() {
  absl::StatusOr<topology::ClusterData> data =
      wire::ParseClusterText(ReadSource("cmd/demo/cluster.yaml"));
  EXPECT_TRUE(data.ok()) << data.status();
  return data.ok() ? *std::move(data) : topology::ClusterData{};
}

inline topology::Policy DemoPolicy() {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(ReadSource("cmd/demo/policy.yaml"));
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *std::move(policy) : topology::Policy::AllowAll();
}

// The model a request reads, built from `data` with the demo policy.
inline topology::ModelState ModelOf(const topology::ClusterData& data) {
  topology::ModelState state;
  state.policy = std::make_shared<const topology::Policy>(DemoPolicy());
  state.catalog = &common::BuiltinCatalog();
  state.snapshot = std::make_shared<const topology::ClusterSnapshot>(
      topology::BuildSnapshot(data, *state.catalog, *state.policy));
  return state;
}

inline topology::ModelState DemoState() { return ModelOf(DemoCluster()); }

// A pending Pod object named `ns`/p whose one container has `limits_json` as limits and
// requests; `annotations_json` is the metadata.annotations object. Its priority, 1000, is above
// every demo pod's (0), so a full node is one where preemption could make room (the tenant's
// own pods hold it) or not (another tenant's do).
inline std::string PodJson(const std::string& ns, const std::string& limits_json,
                           const std::string& annotations_json = "{}") {
  return absl::StrCat(
      R"({"metadata":{"name":"p","namespace":")", ns, R"(","uid":"u-1","annotations":)",
      annotations_json,
      R"(},"spec":{"priority":1000,"containers":[{"name":"main","resources":{"limits":)",
      limits_json, R"(,"requests":)", limits_json, R"(}}]},"status":{"phase":"Pending"}})");
}

// A names-only ExtenderArgs (nodeCacheCapable: true).
inline std::string NamesBody(const std::string& pod_json,
                             const std::string& names_json = kDemoNodes) {
  return absl::StrCat(R"({"Pod":)", pod_json, R"(,"Nodes":null,"NodeNames":)", names_json, "}");
}

// A full-Node ExtenderArgs (nodeCacheCapable: false): `items_json` is the NodeList's items.
inline std::string NodesBody(const std::string& pod_json, const std::string& items_json) {
  return absl::StrCat(R"({"Pod":)", pod_json, R"(,"Nodes":{"metadata":{},"items":)", items_json,
                      R"(},"NodeNames":null})");
}

}  // namespace extender::testing

#endif  // GPU_TENANCY_TEST_EXTENDER_DEMO_MODEL_H_
