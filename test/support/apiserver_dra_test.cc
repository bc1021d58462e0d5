// The resource.k8s.io group: discovery as v1.36 answers it (and as a v1beta1-only server or one
// without DRA would), lists of the captured ResourceSlices, ResourceClaims and DeviceClasses on
// the cluster-scoped, namespaced and all-namespace paths, watches with their bookmarks, and 410
// after compaction. The v1beta1 lists in test/testdata/dra/ are the v1 captures rewritten into
// v1beta1's shape (devices in `basic`, flat requests), since no v1beta1 server was captured.
#include <httplib.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/fake_apiserver.h"
#include "test/support/fake_apiserver_test_util.h"

namespace testing_support::apiserver_test {
namespace {

std::unique_ptr<FakeApiServer> StartDraServer(std::vector<std::string> versions) {
  FakeApiServer::Options options;
  options.bookmark_interval = milliseconds(200);
  options.resource_api_versions = std::move(versions);
  absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

struct DraGet {
  int status = 0;
  std::string body;
};

DraGet GetPath(const FakeApiServer& server, const std::string& path) {
  httplib::Result r = MakeClient(server)->Get(path.c_str());
  if (!r) return {};
  return {r->status, r->body};
}

// The group names /apis lists.
std::vector<std::string> ListedGroups(const std::string& body) {
  std::vector<std::string> out;
  rapidjson::Document doc = ParseOrDie(body);
  for (const auto& g : doc["groups"].GetArray()) out.push_back(Str(g, "name"));
  return out;
}

bool Listed(const std::vector<std::string>& groups, const std::string& name) {
  return std::find(groups.begin(), groups.end(), name) != groups.end();
}

TEST(FakeApiServerDraTest, DiscoveryOffersV1AsTheCapturedServerDoes) {
  std::unique_ptr<FakeApiServer> server = StartDraServer({"v1"});
  ASSERT_NE(server, nullptr);
  DraGet group = GetPath(*server, "/apis/resource.k8s.io");
  ASSERT_EQ(group.status, 200) << group.body;
  EXPECT_EQ(ParseOrDie(group.body), ParseOrDie(ReadTestData("dra/discovery-resource.k8s.io.json")));
  EXPECT_TRUE(Listed(ListedGroups(GetPath(*server, "/apis").body), "resource.k8s.io"));

  DraGet resources = GetPath(*server, "/apis/resource.k8s.io/v1");
  ASSERT_EQ(resources.status, 200) << resources.body;
  rapidjson::Document list = ParseOrDie(resources.body);
  EXPECT_EQ(Str(list, "kind"), "APIResourceList");
  EXPECT_EQ(Str(list, "groupVersion"), "resource.k8s.io/v1");
  std::map<std::string, bool> namespaced;
  for (const auto& r : list["resources"].GetArray())
    namespaced[Str(r, "name")] = r["namespaced"].GetBool();
  EXPECT_EQ(namespaced["resourceslices"], false);
  EXPECT_EQ(namespaced["deviceclasses"], false);
  EXPECT_EQ(namespaced["resourceclaims"], true);
  EXPECT_EQ(namespaced["resourceclaimtemplates"], true);
  // Versions the server does not offer answer as kube-apiserver does: 404.
  EXPECT_EQ(GetPath(*server, "/apis/resource.k8s.io/v1beta1").status, 404);
  EXPECT_EQ(GetPath(*server, "/apis/resource.k8s.io/v1beta1/resourceslices").status, 404);
}

TEST(FakeApiServerDraTest, DiscoveryOffersOnlyV1beta1OrNothingWhenConfigured) {
  std::unique_ptr<FakeApiServer> beta = StartDraServer({"v1beta1"});
  ASSERT_NE(beta, nullptr);
  rapidjson::Document group = ParseOrDie(GetPath(*beta, "/apis/resource.k8s.io").body);
  ASSERT_EQ(group["versions"].Size(), 1u);
  EXPECT_EQ(Str(group["versions"][0], "version"), "v1beta1");
  EXPECT_EQ(Str(group["preferredVersion"], "groupVersion"), "resource.k8s.io/v1beta1");
  EXPECT_EQ(GetPath(*beta, "/apis/resource.k8s.io/v1/resourceslices").status, 404);
  EXPECT_EQ(GetPath(*beta, "/apis/resource.k8s.io/v1beta1/resourceslices").status, 200);

  std::unique_ptr<FakeApiServer> none = StartDraServer({});
  ASSERT_NE(none, nullptr);
  DraGet absent = GetPath(*none, "/apis/resource.k8s.io");
  EXPECT_EQ(absent.status, 404);
  EXPECT_EQ(Str(ParseOrDie(absent.body), "reason"), "NotFound");
  std::vector<std::string> groups = ListedGroups(GetPath(*none, "/apis").body);
  EXPECT_FALSE(Listed(groups, "resource.k8s.io"));
  EXPECT_TRUE(Listed(groups, "coordination.k8s.io"));
  EXPECT_EQ(GetPath(*none, "/apis/resource.k8s.io/v1/resourceclaims").status, 404);
}

TEST(FakeApiServerDraTest, ListsTheCapturedObjectsOnEveryPath) {
  std::unique_ptr<FakeApiServer> server = StartDraServer({"v1"});
  ASSERT_NE(server, nullptr);
  for (const char* file : {"dra/list-resourceslices.v1.json", "dra/list-resourceclaims.v1.json",
                           "dra/list-deviceclasses.v1.json"}) {
    ASSERT_OK(server->LoadTestData(file));
  }
  DraGet slices = GetPath(*server, "/apis/resource.k8s.io/v1/resourceslices?limit=500");
  ASSERT_EQ(slices.status, 200) << slices.body;
  rapidjson::Document list = ParseOrDie(slices.body);
  EXPECT_EQ(Str(list, "kind"), "ResourceSliceList");
  EXPECT_EQ(Str(list, "apiVersion"), "resource.k8s.io/v1");
  EXPECT_EQ(ItemNames(list), std::vector<std::string>{"node-a-gpu.nvidia.com-k2x9q"});
  EXPECT_FALSE(list["items"][0].HasMember("kind")) << "list items carry no kind";
  EXPECT_EQ(list["items"][0]["spec"]["devices"].Size(), 3u);

  // Claims: all namespaces, the claim's namespace, and another one.
  for (const auto& [path, want] : std::vector<std::pair<std::string, size_t>>{
           {"/apis/resource.k8s.io/v1/resourceclaims", 1},
           {"/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims", 1},
           {"/apis/resource.k8s.io/v1/namespaces/team-b/resourceclaims", 0}}) {
    SCOPED_TRACE(path);
    DraGet claims = GetPath(*server, path);
    ASSERT_EQ(claims.status, 200) << claims.body;
    rapidjson::Document doc = ParseOrDie(claims.body);
    EXPECT_EQ(Str(doc, "kind"), "ResourceClaimList");
    EXPECT_EQ(doc["items"].Size(), want);
  }
  DraGet one = GetPath(*server,
                       "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/"
                       "tenant-a-inference");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(Str(ParseOrDie(one.body), "kind"), "ResourceClaim");
  // Namespaced kinds have no cluster-scoped object path; cluster-scoped kinds no namespace.
  EXPECT_EQ(GetPath(*server, "/apis/resource.k8s.io/v1/resourceclaims/tenant-a-inference").status,
            404);
  EXPECT_EQ(GetPath(*server, "/apis/resource.k8s.io/v1/namespaces/x/deviceclasses").status, 404);

  DraGet classes = GetPath(*server, "/apis/resource.k8s.io/v1/deviceclasses");
  ASSERT_EQ(classes.status, 200);
  EXPECT_EQ(ItemNames(ParseOrDie(classes.body)),
            (std::vector<std::string>{"gpu.nvidia.com", "mig.nvidia.com"}));
  DraGet templates = GetPath(*server, "/apis/resource.k8s.io/v1/resourceclaimtemplates");
  ASSERT_EQ(templates.status, 200);
  EXPECT_EQ(Str(ParseOrDie(templates.body), "kind"), "ResourceClaimTemplateList");
}

TEST(FakeApiServerDraTest, V1beta1ObjectsAreStoredAndServedAsLoaded) {
  std::unique_ptr<FakeApiServer> server = StartDraServer({"v1beta1"});
  ASSERT_NE(server, nullptr);
  ASSERT_OK(server->LoadTestData("dra/list-resourceslices.v1beta1.json"));
  rapidjson::Document stored =
      ParseOrDie(server->GetObject(Resource::kResourceSlices, "", "node-a-gpu.nvidia.com-k2x9q"));
  EXPECT_EQ(Str(stored, "apiVersion"), "resource.k8s.io/v1beta1");
  DraGet slices = GetPath(*server, "/apis/resource.k8s.io/v1beta1/resourceslices");
  ASSERT_EQ(slices.status, 200);
  rapidjson::Document list = ParseOrDie(slices.body);
  EXPECT_EQ(Str(list, "apiVersion"), "resource.k8s.io/v1beta1");
  EXPECT_TRUE(list["items"][0]["spec"]["devices"][0].HasMember("basic"));
}

TEST(FakeApiServerDraTest, ClaimWatchSeesAllocationBookmarksAndGone) {
  std::unique_ptr<FakeApiServer> server = StartDraServer({"v1beta1", "v1"});
  ASSERT_NE(server, nullptr);
  ASSERT_OK(server->LoadTestData("dra/list-resourceclaims.v1.json"));
  const int64_t from = server->resource_version();
  WatchStream w(*server, absl::StrCat("/apis/resource.k8s.io/v1beta1/resourceclaims?watch=1&"
                                      "allowWatchBookmarks=true&resourceVersion=",
                                      from));
  ASSERT_TRUE(server->WaitForWatches(1, seconds(5)));
  ASSERT_OK(server->MergePatch(Resource::kResourceClaims, "team-a", "tenant-a-inference",
                               R"({"status":{"reservedFor":null}})"));
  rapidjson::Document modified = ParseOrDie(w.NextEvent());
  EXPECT_EQ(Str(modified, "type"), "MODIFIED");
  EXPECT_EQ(Meta(modified["object"], "name"), "tenant-a-inference");
  EXPECT_FALSE(modified["object"]["status"].HasMember("reservedFor"));

  ASSERT_OK(server->Delete(Resource::kResourceClaims, "team-a", "tenant-a-inference"));
  rapidjson::Document deleted = ParseOrDie(w.NextEvent());
  EXPECT_EQ(Str(deleted, "type"), "DELETED");

  // The bookmark names the watch's version of the group.
  rapidjson::Document bookmark = ParseOrDie(w.NextOfType("BOOKMARK"));
  EXPECT_EQ(Str(bookmark["object"], "kind"), "ResourceClaim");
  EXPECT_EQ(Str(bookmark["object"], "apiVersion"), "resource.k8s.io/v1beta1");
  EXPECT_EQ(Meta(bookmark["object"], "resourceVersion"), absl::StrCat(server->resource_version()));

  server->Compact();
  WatchStream gone(*server, absl::StrCat("/apis/resource.k8s.io/v1/deviceclasses?watch=1&"
                                         "resourceVersion=",
                                         from));
  rapidjson::Document error = ParseOrDie(gone.Next());
  EXPECT_EQ(Str(error, "type"), "ERROR");
  EXPECT_EQ(error["object"]["code"].GetInt(), 410);
  EXPECT_TRUE(gone.WaitDone(milliseconds(3000)));
}

}  // namespace
}  // namespace testing_support::apiserver_test
