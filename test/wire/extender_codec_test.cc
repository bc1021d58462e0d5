// The kube-scheduler extender wire (wire/extender_codec): ExtenderArgs parsing in both node
// modes and its errors, the filter, priority, binding and HTTP error encoders, and
// ExtenderBindingArgs. Captured requests come from test/testdata/extender.
#include "wire/extender_codec.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"

namespace wire {

using common::AsStringView;
using common::FindMember;
using common::JsonValue;
using common::StringOr;
namespace {

using testing_support::JsonOrFail;
using testing_support::Testdata;

std::vector<std::string> Names(const ExtenderArgs& args) {
  return std::vector<std::string>(args.node_names.begin(), args.node_names.end());
}

ExtenderArgs MustParse(absl::string_view body) {
  absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(body);
  EXPECT_TRUE(args.ok()) << args.status();
  if (!args.ok()) return ExtenderArgs();
  return std::move(args).value();
}

constexpr char kPod[] = R"({"metadata":{"name":"p","namespace":"ns"}})";
constexpr char kFullNodes[] =
    R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":null,"Nodes":{"metadata":{},"items":[)"
    R"({"metadata":{"name":"n1"},"status":{"x":1}},{"metadata":{"name":"n2"}}]}})";

TEST(ExtenderCodecTest, ParsesCapturedRequests) {
  struct Row {
    std::string file;
    bool names_only;
    std::string pod;
    std::vector<std::string> nodes;
  };
  const std::vector<std::string> three = {"cpu-node-c", "gpu-node-a", "gpu-node-b"};
  const std::vector<Row> rows = {
      {"extender/filter-nodecache-true.request.json", true, "pod-mig-nc", three},
      {"extender/filter-nodecache-false.request.json", false, "pod-mig", three},
      {"extender/prioritize-nodecache-true.request.json", true, "pod-mig-nc", three},
      {"extender/prioritize-nodecache-false.request.json", false, "pod-mig", three},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.file);
    ExtenderArgs args = MustParse(Testdata(row.file));
    ASSERT_NE(args.pod, nullptr);
    EXPECT_EQ(StringOr(*FindMember(*args.pod, "metadata"), "name"), row.pod);
    EXPECT_EQ(args.names_only, row.names_only);
    EXPECT_EQ(Names(args), row.nodes);
    EXPECT_EQ(args.node_items.size(), row.names_only ? 0u : row.nodes.size());
    for (size_t i = 0; i < args.node_items.size(); ++i) {
      EXPECT_EQ(StringOr(*FindMember(*args.node_items[i], "metadata"), "name"), row.nodes[i]);
    }
  }
}

TEST(ExtenderCodecTest, ParsesWrapperShapes) {
  struct Row {
    std::string name;
    std::string body;
    bool names_only;
    std::vector<std::string> nodes;
  };
  const std::string pod = kPod;
  const std::vector<Row> rows = {
      {"lower-case keys", R"({"pod":)" + pod + R"(,"nodenames":["a","b"]})", true, {"a", "b"}},
      {"names, Nodes null",
       R"({"Pod":)" + pod + R"(,"Nodes":null,"NodeNames":["a"]})",
       true,
       {"a"}},
      {"names win over Nodes",
       R"({"Pod":)" + pod + R"(,"NodeNames":["a"],"Nodes":{"items":[{"metadata":{"name":"b"}}]}})",
       true,
       {"a"}},
      {"empty names", R"({"Pod":)" + pod + R"(,"NodeNames":[]})", true, {}},
      {"NodeNames null, full Nodes", kFullNodes, false, {"n1", "n2"}},
      {"Nodes without items", R"({"Pod":)" + pod + R"(,"Nodes":{"metadata":{}}})", false, {}},
      {"Nodes items null", R"({"Pod":)" + pod + R"(,"Nodes":{"items":null}})", false, {}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ExtenderArgs args = MustParse(row.body);
    EXPECT_EQ(args.names_only, row.names_only);
    EXPECT_EQ(Names(args), row.nodes);
    EXPECT_EQ(args.node_items.size(), row.names_only ? 0u : row.nodes.size());
  }
}

TEST(ExtenderCodecTest, RejectsMalformedArgsNamingTheProblem) {
  struct Row {
    std::string body;
    std::string message;  // a part of the error
  };
  const std::string pod = kPod;
  const std::vector<Row> rows = {
      {"", ""},
      {"{\"Pod\":", ""},
      {"{} trailing", ""},
      {"[]", "ExtenderArgs: expected a JSON object"},
      {R"({"NodeNames":["a"]})", "ExtenderArgs.Pod: missing"},
      {R"({"Pod":null,"NodeNames":["a"]})", "ExtenderArgs.Pod: missing"},
      {R"({"Pod":"p","NodeNames":["a"]})", "ExtenderArgs.Pod: expected an object"},
      {R"({"Pod":)" + pod + "}", "NodeNames and Nodes are both missing or null"},
      {R"({"Pod":)" + pod + R"(,"NodeNames":null,"Nodes":null})", "both missing or null"},
      {R"({"Pod":)" + pod + R"(,"NodeNames":"a"})", "ExtenderArgs.NodeNames: expected an array"},
      {R"({"Pod":)" + pod + R"(,"NodeNames":["a",7]})", "ExtenderArgs.NodeNames[1]: expected"},
      {R"({"Pod":)" + pod + R"(,"Nodes":[]})", "ExtenderArgs.Nodes: expected a NodeList"},
      {R"({"Pod":)" + pod + R"(,"Nodes":{"items":{}}})", "Nodes.items: expected an array"},
      {R"({"Pod":)" + pod + R"(,"Nodes":{"items":[{"metadata":{"name":"a"}},{}]}})",
       "ExtenderArgs.Nodes.items[1].metadata.name: missing"},
      {R"({"Pod":)" + pod + R"(,"Nodes":{"items":[{"metadata":{"name":3}}]}})",
       "ExtenderArgs.Nodes.items[0].metadata.name: missing"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.body);
    absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(row.body);
    ASSERT_FALSE(args.ok());
    EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_FALSE(args.status().message().empty());
    EXPECT_TRUE(absl::StrContains(args.status().message(), row.message)) << args.status();
  }
}

TEST(ExtenderCodecTest, FilterReplyFromMapsNamesOnly) {
  ExtenderArgs args = MustParse(R"({"Pod":{},"NodeNames":["a","b","c"]})");
  struct Row {
    std::string name;
    FilterReply reply;
    std::string want;
  };
  const std::vector<Row> rows = {
      {"all kept",
       {{0, 1, 2}, {}, {}, ""},
       R"({"NodeNames":["a","b","c"],"FailedNodes":{},"FailedAndUnresolvableNodes":{},)"
       R"("Error":""})"},
      {"failed and unresolvable",
       {{2}, {{"b", "too busy"}}, {{"a", "no GPU"}}, ""},
       R"({"NodeNames":["c"],"FailedNodes":{"b":"too busy"},)"
       R"("FailedAndUnresolvableNodes":{"a":"no GPU"},"Error":""})"},
      {"error and escapes",
       {{}, {{"c", "say \"no\""}, {"a", "x"}}, {}, "cache\nnot synced"},
       R"({"NodeNames":[],"FailedNodes":{"a":"x","c":"say \"no\""},)"
       R"("FailedAndUnresolvableNodes":{},"Error":"cache\nnot synced"})"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(EncodeFilterResult(args, row.reply), row.want);
  }
}

TEST(ExtenderCodecTest, FilterReplyFromCandidatesMatchesMaps) {
  const std::string long_name(40, 'n');
  ExtenderArgs args = MustParse(absl::StrCat(
      R"({"Pod":{},"NodeNames":["a","b\\c","c","gpu-node-a","d\"q",")", long_name, R"("]})"));
  ASSERT_EQ(args.node_names.size(), 6u);
  ASSERT_EQ(args.node_names[1], "b\\c");
  const std::string shared = "0/1 GPUs free";
  const std::string escaped_long = std::string(20, 'r') + "\t" + std::string(20, 'r');
  struct Row {
    std::string name;
    std::vector<size_t> kept;
    std::vector<FailedNode> failed;
    std::vector<FailedNode> unresolvable;
  };
  const std::vector<Row> rows = {
      {"nothing failed", {0, 1, 2, 3, 4, 5}, {}, {}},
      {"shared reason", {0}, {{2, shared}, {3, shared}, {5, shared}}, {{1, "tier"}}},
      {"escaped names and reasons", {2}, {{4, "a \"q\""}, {1, escaped_long}}, {{5, "x\\y"}}},
      {"all unresolvable", {}, {}, {{0, "a"}, {1, "b"}, {2, "c"}, {3, "d"}, {4, "e"}, {5, "f"}}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    FilterReply reply;
    reply.kept = row.kept;
    for (const FailedNode& f : row.failed)
      reply.failed[std::string(args.node_names[f.candidate])] = std::string(f.reason);
    for (const FailedNode& f : row.unresolvable)
      reply.failed_unresolvable[std::string(args.node_names[f.candidate])] = std::string(f.reason);
    const std::string fast = EncodeFilterResult(args, row.kept, row.failed, row.unresolvable);
    EXPECT_EQ(JsonOrFail(fast), JsonOrFail(EncodeFilterResult(args, reply))) << fast;
    rapidjson::Document doc = JsonOrFail(fast);
    const JsonValue* names = FindMember(doc, "NodeNames");
    ASSERT_NE(names, nullptr);
    ASSERT_EQ(names->Size(), row.kept.size());
    for (size_t k = 0; k < row.kept.size(); ++k)
      EXPECT_EQ(AsStringView((*names)[k]), args.node_names[row.kept[k]]);
    EXPECT_EQ(FindMember(doc, "Nodes"), nullptr);
    EXPECT_EQ(StringOr(doc, "Error", "missing"), "");
  }
}

TEST(ExtenderCodecTest, FilterReplyWritesFullNodesBackAsTheyArrived) {
  ExtenderArgs args = MustParse(kFullNodes);
  const std::string want =
      R"({"Nodes":{"metadata":{},"items":[{"metadata":{"name":"n1"},"status":{"x":1}}]},)"
      R"("FailedNodes":{"n2":"no room"},"FailedAndUnresolvableNodes":{},"Error":""})";
  FilterReply reply;
  reply.kept = {0};
  reply.failed["n2"] = "no room";
  EXPECT_EQ(EncodeFilterResult(args, reply), want);
  EXPECT_EQ(EncodeFilterResult(args, {0}, {{1, "no room"}}, {}), want);
  EXPECT_EQ(EncodeFilterResult(args, {}, {}, {{0, "u"}, {1, "v"}}),
            R"({"Nodes":{"metadata":{},"items":[]},"FailedNodes":{},)"
            R"("FailedAndUnresolvableNodes":{"n1":"u","n2":"v"},"Error":""})");
}

TEST(ExtenderCodecTest, CapturedFullNodeRequestRoundTrips) {
  const std::string body = Testdata("extender/filter-nodecache-false.request.json");
  ExtenderArgs args = MustParse(body);
  ASSERT_EQ(args.node_items.size(), 3u);
  rapidjson::Document request = JsonOrFail(body);
  rapidjson::Document reply = JsonOrFail(EncodeFilterResult(args, {0, 2}, {{1, "busy"}}, {}));
  const JsonValue& sent = *FindMember(*FindMember(request, "Nodes"), "items");
  const JsonValue& back = *FindMember(*FindMember(reply, "Nodes"), "items");
  ASSERT_EQ(back.Size(), 2u);
  EXPECT_EQ(back[0], sent[0]);
  EXPECT_EQ(back[1], sent[2]);
  EXPECT_EQ(StringOr(*FindMember(reply, "FailedNodes"), "gpu-node-a"), "busy");
}

TEST(ExtenderCodecTest, HostPriorityList) {
  struct Row {
    std::vector<HostScore> scores;
    std::string want;
  };
  const std::vector<Row> rows = {
      {{}, "[]"},
      {{{"a", 0}}, R"([{"Host":"a","Score":0}])"},
      {{{"gpu-node-a", 10}, {"b", -3}},
       R"([{"Host":"gpu-node-a","Score":10},{"Host":"b","Score":-3}])"},
      {{{"q\"", INT64_MAX}}, R"([{"Host":"q\"","Score":9223372036854775807}])"},
      {{{"m", INT64_MIN}}, R"([{"Host":"m","Score":-9223372036854775808}])"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.want);
    EXPECT_EQ(EncodeHostPriorityList(row.scores), row.want);
  }
  std::vector<HostScore> many;
  std::vector<std::string> hosts;
  for (int i = 0; i < 200; ++i) hosts.push_back(absl::StrCat("node-with-a-long-name-", i));
  for (int i = 0; i < 200; ++i) many.push_back({hosts[i], int64_t{1} << 62});
  rapidjson::Document doc = JsonOrFail(EncodeHostPriorityList(many));
  ASSERT_TRUE(doc.IsArray());
  ASSERT_EQ(doc.Size(), 200u);
  EXPECT_EQ(StringOr(doc[199], "Host"), "node-with-a-long-name-199");
  EXPECT_EQ(FindMember(doc[199], "Score")->GetInt64(), int64_t{1} << 62);
}

TEST(ExtenderCodecTest, ErrorReplies) {
  struct Row {
    std::string got;
    std::string want;
  };
  const std::vector<Row> rows = {
      {EncodeFilterError("cache not synced"),
       R"({"NodeNames":null,"Nodes":null,"FailedNodes":{},"FailedAndUnresolvableNodes":{},)"
       R"("Error":"cache not synced"})"},
      {EncodeFilterError(""),
       R"({"NodeNames":null,"Nodes":null,"FailedNodes":{},"FailedAndUnresolvableNodes":{},)"
       R"("Error":""})"},
      {EncodeHttpError("bad \"body\""), R"({"error":"bad \"body\""})"},
      {EncodeHttpError("line\x01"), R"({"error":"line\u0001"})"},
      {EncodeBindingResult(""), R"({"Error":""})"},
      {EncodeBindingResult("pod gone"), R"({"Error":"pod gone"})"},
  };
  for (const Row& row : rows) EXPECT_EQ(row.got, row.want);
}

TEST(ExtenderCodecTest, BindingArgs) {
  absl::StatusOr<BindingArgs> captured = ParseBindingArgs(Testdata("extender/bind.request.json"));
  ASSERT_TRUE(captured.ok()) << captured.status();
  EXPECT_EQ(captured->pod_name, "pod-bind");
  EXPECT_EQ(captured->pod_namespace, "gpu-team");
  EXPECT_EQ(captured->pod_uid, "8a96f868-e622-4ed7-9ef7-dafa0a600f3b");
  EXPECT_EQ(captured->node, "cpu-node-c");

  absl::StatusOr<BindingArgs> lower =
      ParseBindingArgs(R"({"podname":"p","podnamespace":"n","poduid":"u","node":"x"})");
  ASSERT_TRUE(lower.ok()) << lower.status();
  EXPECT_EQ(lower->node, "x");

  struct Row {
    std::string body;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"nope", ""},
      {"[]", "ExtenderBindingArgs: expected a JSON object"},
      {R"({"PodNamespace":"n","PodUID":"u","Node":"x"})", "ExtenderBindingArgs.PodName"},
      {R"({"PodName":"p","PodNamespace":"","PodUID":"u","Node":"x"})", ".PodNamespace"},
      {R"({"PodName":"p","PodNamespace":"n","PodUID":1,"Node":"x"})", ".PodUID"},
      {R"({"PodName":"p","PodNamespace":"n","PodUID":"u","Node":null})", ".Node: missing"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.body);
    absl::StatusOr<BindingArgs> args = ParseBindingArgs(row.body);
    ASSERT_FALSE(args.ok());
    EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(args.status().message(), row.message)) << args.status();
  }
}

}  // namespace
}  // namespace wire
