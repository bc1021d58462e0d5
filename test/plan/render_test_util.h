// Helpers shared by the plan document's rendering tests: the worked example and a small mixed
// plan as documents, and a plan::Tree read into a RapidJSON DOM by the test itself (so a
// renderer's output can be compared with the tree it was given, as parsed JSON).
#ifndef GPU_TENANCY_TEST_PLAN_RENDER_TEST_UTIL_H_
#define GPU_TENANCY_TEST_PLAN_RENDER_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/plan_input.h"
#include "gtest/gtest.h"
#include "plan/document.h"
#include "plan/document_tree.h"
#include "rapidjson/document.h"
#include "test/plan/plan_test_util.h"

namespace plan::testing {

// cmd/demo/plan-example.yaml, planned.
inline PlanDocument ExampleDocument() {
  std::ifstream in(GT_SOURCE_DIR "/cmd/demo/plan-example.yaml", std::ios::binary);
  EXPECT_TRUE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<PlanInput> input = common::ParsePlanInput(text.str());
  EXPECT_TRUE(input.ok()) << input.status();
  if (!input.ok()) return PlanDocument{};
  absl::StatusOr<Plan> made = MakePlan(*input, Cat());
  EXPECT_TRUE(made.ok()) << made.status();
  if (!made.ok()) return PlanDocument{};
  return BuildDocument(*std::move(made));
}

// Two zones of one H100 each and an L4 without MIG: a mirrored untrusted MIG workload, a
// time-sliced notebook on the L4, a workload that needs a VM boundary, and a canary slice.
inline PlanDocument MixedDocument() {
  PlanInput in;
  in.fleet = {Node("h100-a", "H100-80GB", 1, "a"), Node("h100-b", "H100-80GB", 1, "b"),
              Node("l4", "L4", 1, "", 23034)};
  WorkloadSpec chat =
      Workload("chat", "acme", Trust::kUntrusted, Latency::kSla, HighWater(8 * kGiB));
  chat.mirrored = true;
  WorkloadSpec notebook =
      Workload("notebook", "lab", Trust::kTrusted, Latency::kBestEffort, HighWater(4 * kGiB));
  notebook.gpu = "L4";
  WorkloadSpec vm = Workload("vault", "bank", Trust::kUntrusted, Latency::kSla, HighWater(kGiB));
  vm.vm_boundary = true;
  in.workloads = {chat, notebook, vm};
  in.canary_profile = "1g.10gb";
  absl::StatusOr<Plan> made = MakePlan(in, Cat());
  EXPECT_TRUE(made.ok()) << made.status();
  if (!made.ok()) return PlanDocument{};
  return BuildDocument(*std::move(made));
}

inline rapidjson::Value ToValue(const Tree& t, rapidjson::Document::AllocatorType& a) {
  rapidjson::Value v;
  switch (t.kind) {
    case Tree::Kind::kNull:
      break;
    case Tree::Kind::kBool:
      v.SetBool(t.boolean);
      break;
    case Tree::Kind::kInt:
      v.SetInt64(t.integer);
      break;
    case Tree::Kind::kString:
      v.SetString(t.string.data(), static_cast<rapidjson::SizeType>(t.string.size()), a);
      break;
    case Tree::Kind::kList:
      v.SetArray();
      for (const Tree& item : t.items) v.PushBack(ToValue(item, a), a);
      break;
    case Tree::Kind::kMap:
      v.SetObject();
      for (const auto& [key, value] : t.members) {
        v.AddMember(rapidjson::Value(key.data(), static_cast<rapidjson::SizeType>(key.size()), a),
                    ToValue(value, a), a);
      }
      break;
  }
  return v;
}

inline rapidjson::Document TreeAsJson(const Tree& t) {
  rapidjson::Document doc;
  rapidjson::Value v = ToValue(t, doc.GetAllocator());
  doc.CopyFrom(v, doc.GetAllocator());
  return doc;
}

inline rapidjson::Document Json(const std::string& text) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(text);
  EXPECT_TRUE(doc.ok()) << doc.status() << "\n" << text;
  if (!doc.ok()) return rapidjson::Document();
  return *std::move(doc);
}

// The member names of a map, in order.
inline std::vector<std::string> Keys(const Tree& t) {
  std::vector<std::string> out;
  for (const auto& [key, value] : t.members) out.push_back(key);
  return out;
}

// The member `key` of a map; a failure and a null tree when it is absent.
inline const Tree& Member(const Tree& t, const std::string& key) {
  for (const auto& [k, v] : t.members) {
    if (k == key) return v;
  }
  ADD_FAILURE() << "no member " << key;
  static const Tree kNull = Tree::Null();
  return kNull;
}

inline bool HasMember(const Tree& t, const std::string& key) {
  for (const auto& [k, v] : t.members) {
    if (k == key) return true;
  }
  return false;
}

}  // namespace plan::testing

#endif  // GPU_TENANCY_TEST_PLAN_RENDER_TEST_UTIL_H_
