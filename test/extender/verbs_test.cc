// extender/verbs: filter and prioritize as pure functions over the demo model (cmd/demo). The
// reply kube-scheduler reads (compared as parsed JSON), the counts server/ turns into metrics,
// the answer before the first sync, HTTP 400 with a JSON reason naming the field for each kind
// of malformed body, full-Node requests naming nodes the snapshot lacks, repeated and many
// candidates.
#include "extender/verbs.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/extender/demo_model.h"

namespace extender {
namespace {

using testing::DemoState;
using testing::NamesBody;
using testing::NodesBody;
using testing::PodJson;
using Rejections = std::map<std::pair<absl::string_view, absl::string_view>, int>;

constexpr char kMig3g[] = R"({"nvidia.com/mig-3g.40gb":"1"})";
constexpr char kUnknown[] = "node not yet known to gpu-tenancy";

rapidjson::Document Json(const std::string& text) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(text);
  EXPECT_TRUE(doc.ok()) << doc.status() << "\n" << text;
  if (!doc.ok()) return rapidjson::Document();
  return *std::move(doc);
}

// The member names of an object, repeats included (a parsed DOM keeps a repeated key twice).
std::vector<std::string> Keys(const rapidjson::Value& object) {
  std::vector<std::string> out;
  if (!object.IsObject()) return out;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    out.emplace_back(it->name.GetString());
  }
  return out;
}

std::string At(const rapidjson::Value& doc, const char* object, const char* key) {
  const rapidjson::Value* o = common::FindMember(doc, object);
  return o ? std::string(common::StringOr(*o, key, "(absent)")) : "(no object)";
}

class VerbsTest : public ::testing::Test {
 protected:
  topology::ModelState state_ = DemoState();
};

TEST_F(VerbsTest, FilterGoldenReplyForEachOutcome) {
  const std::string names = R"(["mig-a","mig-b","mig-c","mig-1g","ts-a","excl-a","cpu-a","ghost"])";
  VerbReply r = Filter(NamesBody(PodJson("acme", kMig3g), names), &state_);
  ASSERT_EQ(r.http_status, 200) << r.body;
  rapidjson::Document golden =
      Json(testing::ReadTestData("extender/golden/filter-demo-mig-3g.reply.json"));
  EXPECT_TRUE(Json(r.body) == golden) << r.body;
  EXPECT_EQ(r.kept, 1);
  EXPECT_EQ(r.failed, 2);
  EXPECT_EQ(r.unresolvable, 5);
  EXPECT_TRUE(r.gpu_pod);
  EXPECT_EQ(r.rejections, (Rejections{{{"unschedulable", "exhausted"}, 1},
                                      {{"unschedulable", "unknown-node"}, 1},
                                      {{"unresolvable", "mig-reconfiguring"}, 1},
                                      {{"unresolvable", "not-offered"}, 2},
                                      {{"unresolvable", "tier-pool"}, 1},
                                      {{"unresolvable", "no-gpu"}, 1}}));
}

TEST_F(VerbsTest, FilterCountsOneRejectionPerNodeAndRepeatsTheSharedReason) {
  // Whole GPUs for a trusted tenant: four nodes lack nvidia.com/gpu, with one reason between them.
  VerbReply r = Filter(NamesBody(PodJson("research", R"({"nvidia.com/gpu":"1"})")), &state_);
  ASSERT_EQ(r.http_status, 200) << r.body;
  rapidjson::Document doc = Json(r.body);
  for (const char* node : {"mig-a", "mig-b", "mig-1g", "ts-a"}) {
    SCOPED_TRACE(node);
    EXPECT_EQ(At(doc, "FailedAndUnresolvableNodes", node), "nvidia.com/gpu: not offered by node");
  }
  EXPECT_EQ(At(doc, "FailedAndUnresolvableNodes", "cpu-a"), "no NVIDIA GPU on node");
  EXPECT_EQ(r.kept, 1);  // excl-a: one of four GPUs left
  EXPECT_EQ(r.rejections, (Rejections{{{"unresolvable", "not-offered"}, 4},
                                      {{"unresolvable", "mig-reconfiguring"}, 1},
                                      {{"unresolvable", "no-gpu"}, 1}}));
}

TEST_F(VerbsTest, FilterPassesEveryCandidateOfAPodWithoutGpuDemand) {
  VerbReply r = Filter(
      NamesBody(PodJson("nobody", R"({"cpu":"1"})"), R"(["cpu-a","ghost","mig-b"])"), &state_);
  ASSERT_EQ(r.http_status, 200) << r.body;
  EXPECT_TRUE(Json(r.body) == Json(R"({"NodeNames":["cpu-a","ghost","mig-b"],"FailedNodes":{},
      "FailedAndUnresolvableNodes":{},"Error":""})"))
      << r.body;
  EXPECT_FALSE(r.gpu_pod);
  EXPECT_EQ(r.kept, 3);
  EXPECT_TRUE(r.rejections.empty());
}

TEST_F(VerbsTest, BeforeTheFirstSyncFilterAnswersErrorAndPrioritizeNeutralScores) {
  for (const char* limits : {kMig3g, R"({"cpu":"1"})"}) {
    SCOPED_TRACE(limits);
    const std::string body = NamesBody(PodJson("acme", limits), R"(["mig-a","cpu-a"])");
    VerbReply f = Filter(body, nullptr);
    EXPECT_EQ(f.http_status, 200);
    EXPECT_TRUE(Json(f.body) == Json(R"({"NodeNames":null,"Nodes":null,"FailedNodes":{},
        "FailedAndUnresolvableNodes":{},"Error":"gpu-tenancy: cache not synced"})"))
        << f.body;
    EXPECT_EQ(f.kept + f.failed + f.unresolvable, 0);
    VerbReply p = Prioritize(body, nullptr);
    EXPECT_EQ(p.http_status, 200);
    EXPECT_TRUE(Json(p.body) == Json(R"([{"Host":"mig-a","Score":0},{"Host":"cpu-a","Score":0}])"))
        << p.body;
  }
}

TEST_F(VerbsTest, MalformedBodiesAre400WithAJsonReasonNamingTheField) {
  struct Row {
    std::string name;
    std::string body;
    std::string error;
  };
  const std::string nested =
      absl::StrCat(R"({"Pod":)", std::string(100000, '['), std::string(100000, ']'), "}");
  const std::vector<Row> rows = {
      {"not JSON", R"({"Pod":)", "invalid JSON at byte 7: Invalid value."},
      {"empty body", "", "invalid JSON at byte 0: The document is empty."},
      {"nested without bound", nested, "invalid JSON: nested deeper than 512 levels"},
      {"not an object", "[]", "ExtenderArgs: expected a JSON object"},
      {"no Pod", R"({"NodeNames":["mig-a"]})", "ExtenderArgs.Pod: missing"},
      {"null Pod", R"({"Pod":null,"NodeNames":["mig-a"]})", "ExtenderArgs.Pod: missing"},
      {"Pod not an object", R"({"Pod":"p","NodeNames":["mig-a"]})",
       "ExtenderArgs.Pod: expected an object"},
      {"no candidates", NamesBody(PodJson("acme", kMig3g), "null"),
       "ExtenderArgs: NodeNames and Nodes are both missing or null"},
      {"NodeNames not a list", NamesBody(PodJson("acme", kMig3g), R"("mig-a")"),
       "ExtenderArgs.NodeNames: expected an array"},
      {"a name not a string", NamesBody(PodJson("acme", kMig3g), R"(["mig-a",7])"),
       "ExtenderArgs.NodeNames[1]: expected a string"},
      {"a Node without a name", NodesBody(PodJson("acme", kMig3g), R"([{"metadata":{}}])"),
       "ExtenderArgs.Nodes.items[0].metadata.name: missing"},
      {"Pod without spec", NamesBody(R"({"metadata":{"name":"p"}})"),
       "ExtenderArgs.Pod.spec: missing"},
      {"junk quantity", NamesBody(PodJson("acme", R"({"nvidia.com/gpu":"lots"})")),
       "ExtenderArgs.Pod.spec.containers[0].resources.requests.nvidia.com/gpu: "},
      {"fraction of a GPU", NamesBody(PodJson("research", R"({"nvidia.com/gpu":"500m"})")),
       "pod research/p: nvidia.com/gpu must be a whole, non-negative number, got 500m"},
      {"bad memory annotation",
       NamesBody(PodJson("research", R"({"nvidia.com/gpu.shared":"1"})",
                         R"({"gpu-tenancy.io/gpu-memory":"lots"})")),
       "pod research/p: annotation gpu-tenancy.io/gpu-memory must be a non-negative quantity "
       "such as 20Gi, got \"lots\""},
      {"bad scheduling-policy annotation",
       NamesBody(PodJson("research", R"({"nvidia.com/gpu":"1"})",
                         R"({"gpu-tenancy.io/scheduling-policy":"random"})")),
       "annotation gpu-tenancy.io/scheduling-policy must be binpack or spread, got \"random\""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    for (const auto& [verb, reply] : {std::pair{"filter", Filter(row.body, &state_)},
                                      std::pair{"prioritize", Prioritize(row.body, &state_)}}) {
      SCOPED_TRACE(verb);
      EXPECT_EQ(reply.http_status, 400);
      rapidjson::Document doc = Json(reply.body);
      EXPECT_EQ(Keys(doc), std::vector<std::string>{"error"}) << reply.body;
      std::string error(common::StringOr(doc, "error"));
      if (row.error.back() == ' ') {  // the quantity parser's own words follow
        EXPECT_EQ(error.substr(0, row.error.size()), row.error);
      } else {
        EXPECT_EQ(error, row.error);
      }
    }
    // Before the first sync a body that does not parse is still the caller's fault; what the
    // pod's quantities and annotations mean takes the policy, so that waits for the model.
    const bool needs_model =
        absl::StartsWith(row.error, "pod ") || absl::StartsWith(row.error, "annotation ");
    EXPECT_EQ(Filter(row.body, nullptr).http_status, needs_model ? 200 : 400);
  }
}

TEST_F(VerbsTest, FilterOfNoCandidatesIsAnEmptyReply) {
  VerbReply r = Filter(NamesBody(PodJson("acme", kMig3g), "[]"), &state_);
  ASSERT_EQ(r.http_status, 200);
  EXPECT_TRUE(Json(r.body) == Json(R"({"NodeNames":[],"FailedNodes":{},
      "FailedAndUnresolvableNodes":{},"Error":""})"))
      << r.body;
  EXPECT_EQ(r.kept + r.failed + r.unresolvable, 0);
  EXPECT_TRUE(r.gpu_pod);
}

TEST_F(VerbsTest, RepeatedCandidatesGiveOneEntryPerName) {
  VerbReply r = Filter(NamesBody(PodJson("acme", kMig3g),
                                 R"(["mig-b","ghost","mig-a","mig-b","cpu-a","ghost","cpu-a"])"),
                       &state_);
  ASSERT_EQ(r.http_status, 200);
  rapidjson::Document doc = Json(r.body);
  EXPECT_EQ(Keys(*common::FindMember(doc, "FailedNodes")),
            (std::vector<std::string>{"mig-b", "ghost"}))
      << r.body;
  EXPECT_EQ(Keys(*common::FindMember(doc, "FailedAndUnresolvableNodes")),
            std::vector<std::string>{"cpu-a"})
      << r.body;
  EXPECT_EQ(At(doc, "FailedNodes", "ghost"), kUnknown);
  EXPECT_EQ(r.failed, 2);
  EXPECT_EQ(r.unresolvable, 1);
  EXPECT_EQ(r.kept, 1);
}

TEST_F(VerbsTest, ThousandsOfUnknownCandidatesAreEachAnsweredOnce) {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back(absl::StrCat("\"node-", i, "\""));
  names.push_back("\"mig-a\"");
  VerbReply r =
      Filter(NamesBody(PodJson("acme", kMig3g), absl::StrCat("[", absl::StrJoin(names, ","), "]")),
             &state_);
  ASSERT_EQ(r.http_status, 200);
  rapidjson::Document doc = Json(r.body);
  std::vector<std::string> failed = Keys(*common::FindMember(doc, "FailedNodes"));
  EXPECT_EQ(failed.size(), 5000u);
  EXPECT_EQ(std::set<std::string>(failed.begin(), failed.end()).size(), 5000u);
  EXPECT_EQ(At(doc, "FailedNodes", "node-4999"), kUnknown);
  EXPECT_EQ(r.failed, 5000);
  EXPECT_EQ(r.kept, 1);
  EXPECT_EQ(r.rejections, (Rejections{{{"unschedulable", "unknown-node"}, 5000}}));
}

// A full-Node request: a node the snapshot lacks is decided from the Node object sent (and
// written back as it came); a node the snapshot has is decided from the snapshot, whatever the
// request claims; a node object that does not parse is "not yet known".
TEST_F(VerbsTest, FullNodeRequestsDecideUnknownNodesFromTheirObject) {
  const std::string mig_labels =
      R"("labels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.count":"1",
      "nvidia.com/mig.capable":"true","nvidia.com/mig.strategy":"mixed",
      "nvidia.com/mig.config.state":"success","gpu-tenancy.io/pool":"gpu-mig",
      "nvidia.com/mig-3g.40gb.count":"2","nvidia.com/mig-3g.40gb.memory":"40448"})";
  const std::string fresh =
      absl::StrCat(R"({"metadata":{"name":"new-mig",)", mig_labels,
                   R"(},"status":{"allocatable":{"cpu":"8","nvidia.com/mig-3g.40gb":"2"}}})");
  const std::string stale =
      absl::StrCat(R"({"metadata":{"name":"mig-b",)", mig_labels,
                   R"(},"status":{"allocatable":{"nvidia.com/mig-3g.40gb":"7"}}})");
  const std::string broken =
      R"({"metadata":{"name":"broken"},"status":{"allocatable":{"nvidia.com/gpu":"lots"}}})";
  const std::string body =
      NodesBody(PodJson("acme", kMig3g), absl::StrCat("[", stale, ",", fresh, ",", broken, "]"));
  VerbReply r = Filter(body, &state_);
  ASSERT_EQ(r.http_status, 200) << r.body;
  rapidjson::Document doc = Json(r.body);
  EXPECT_EQ(common::FindMember(doc, "NodeNames"), nullptr) << r.body;
  const rapidjson::Value* nodes = common::FindMember(doc, "Nodes");
  ASSERT_NE(nodes, nullptr) << r.body;
  const rapidjson::Value* items = common::FindMember(*nodes, "items");
  ASSERT_TRUE(items && items->IsArray() && items->Size() == 1) << r.body;
  EXPECT_TRUE((*items)[0] == Json(fresh)) << "the kept Node differs from the one sent";
  EXPECT_EQ(At(doc, "FailedNodes", "mig-b"), "nvidia.com/mig-3g.40gb: requested 1, free 0 of 2");
  EXPECT_EQ(At(doc, "FailedNodes", "broken"), kUnknown);
  EXPECT_EQ(r.kept, 1);
  EXPECT_EQ(r.failed, 2);

  VerbReply p = Prioritize(body, &state_);
  ASSERT_EQ(p.http_status, 200) << p.body;
  rapidjson::Document scores = Json(p.body);
  ASSERT_TRUE(scores.IsArray() && scores.Size() == 3) << p.body;
  EXPECT_EQ(std::string(common::StringOr(scores[1], "Host")), "new-mig");
  EXPECT_GT(scores[1]["Score"].GetInt64(), 0);
  EXPECT_EQ(scores[0]["Score"].GetInt64(), 0);
  EXPECT_EQ(scores[2]["Score"].GetInt64(), 0);
  EXPECT_EQ(p.kept, 1);
}

TEST_F(VerbsTest, PrioritizeScoresEveryCandidateInRequestOrder) {
  // mig-a already holds one of its four 1g instances, mig-1g none: binpack prefers mig-a.
  VerbReply r = Prioritize(NamesBody(PodJson("research", R"({"nvidia.com/mig-1g.10gb":"1"})"),
                                     R"(["cpu-a","ghost","mig-1g","mig-a"])"),
                           &state_);
  ASSERT_EQ(r.http_status, 200) << r.body;
  EXPECT_TRUE(Json(r.body) == Json(R"([{"Host":"cpu-a","Score":0},{"Host":"ghost","Score":0},
      {"Host":"mig-1g","Score":1},{"Host":"mig-a","Score":5}])"))
      << r.body;
  EXPECT_EQ(r.kept, 2);
  EXPECT_TRUE(r.gpu_pod);

  VerbReply none =
      Prioritize(NamesBody(PodJson("acme", R"({"cpu":"1"})"), R"(["mig-a"])"), &state_);
  ASSERT_EQ(none.http_status, 200);
  EXPECT_TRUE(Json(none.body) == Json(R"([{"Host":"mig-a","Score":0}])")) << none.body;
  EXPECT_FALSE(none.gpu_pod);
}

}  // namespace
}  // namespace extender
