// Test support, part of the kube-apiserver emulation: discovery documents (see
// apiserver_discovery.h).
#include "test/support/apiserver_discovery.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "test/support/apiserver_objects.h"
#include "test/support/apiserver_route.h"

namespace testing_support::apiserver {
namespace {

struct Group {
  std::string name;
  std::vector<std::string> versions;  // newest first
  std::vector<Resource> resources;
};

std::vector<Group> Groups(const std::vector<std::string>& resource_versions) {
  std::vector<Group> groups = {
      {"coordination.k8s.io", {"v1"}, {Resource::kLeases}},
      {"events.k8s.io", {"v1"}, {Resource::kEvents}},
  };
  if (!resource_versions.empty()) {
    groups.push_back({kResourceGroup,
                      resource_versions,
                      {Resource::kDeviceClasses, Resource::kResourceClaims,
                       Resource::kResourceClaimTemplates, Resource::kResourceSlices}});
  }
  return groups;
}

std::string VersionJson(const std::string& group, const std::string& version) {
  return absl::StrCat(R"({"groupVersion":")", group, "/", version, R"(","version":")", version,
                      R"("})");
}

// The members of an APIGroup after kind and apiVersion, as kube-apiserver orders them.
std::string GroupBody(const Group& g) {
  std::vector<std::string> versions;
  for (const std::string& v : g.versions) versions.push_back(VersionJson(g.name, v));
  return absl::StrCat(R"("name":")", g.name, R"(","versions":[)", absl::StrJoin(versions, ","),
                      R"(],"preferredVersion":)", VersionJson(g.name, g.versions.front()));
}

constexpr char kVerbs[] =
    R"(["create","delete","deletecollection","get","list","patch","update","watch"])";

std::string ResourceJson(const ResourceInfo& info) {
  std::string singular = absl::AsciiStrToLower(info.kind);
  std::string out = absl::StrCat(R"({"name":")", info.plural, R"(","singularName":")", singular,
                                 R"(","namespaced":)", info.namespaced ? "true" : "false",
                                 R"(,"kind":")", info.kind, R"(","verbs":)", kVerbs, "}");
  if (info.resource == Resource::kResourceClaims) {
    absl::StrAppend(&out,
                    R"(,{"name":"resourceclaims/status","singularName":"","namespaced":true,)",
                    R"("kind":"ResourceClaim","verbs":["get","patch","update"]})");
  }
  return out;
}

}  // namespace

bool VersionServed(absl::string_view api_version,
                   const std::vector<std::string>& resource_versions) {
  absl::string_view version = api_version;
  if (!absl::ConsumePrefix(&version, absl::StrCat(kResourceGroup, "/"))) return true;
  return std::find(resource_versions.begin(), resource_versions.end(), version) !=
         resource_versions.end();
}

std::optional<Reply> Discovery(absl::string_view path,
                               const std::vector<std::string>& resource_versions) {
  std::vector<std::string> segs;
  for (absl::string_view s : absl::StrSplit(path, '/', absl::SkipEmpty())) segs.emplace_back(s);
  if (segs.empty() || segs[0] != "apis" || segs.size() > 3) return std::nullopt;
  std::vector<Group> groups = Groups(resource_versions);
  if (segs.size() == 1) {
    std::vector<std::string> listed;
    for (const Group& g : groups) listed.push_back(absl::StrCat("{", GroupBody(g), "}"));
    return ObjectReply(200, absl::StrCat(R"({"kind":"APIGroupList","apiVersion":"v1","groups":[)",
                                         absl::StrJoin(listed, ","), "]}"));
  }
  const Group* group = nullptr;
  for (const Group& g : groups) {
    if (g.name == segs[1]) group = &g;
  }
  if (segs.size() == 2) {
    if (group == nullptr) {
      // A group the server does not have, as one without DRA answers /apis/resource.k8s.io.
      return segs[1] == kResourceGroup ? std::optional<Reply>(UnknownPath()) : std::nullopt;
    }
    return ObjectReply(
        200, absl::StrCat(R"({"kind":"APIGroup","apiVersion":"v1",)", GroupBody(*group), "}"));
  }
  if (group == nullptr ||
      std::find(group->versions.begin(), group->versions.end(), segs[2]) == group->versions.end()) {
    return segs[1] == kResourceGroup ? std::optional<Reply>(UnknownPath()) : std::nullopt;
  }
  std::vector<std::string> resources;
  for (Resource r : group->resources) resources.push_back(ResourceJson(Info(r)));
  return ObjectReply(200, absl::StrCat(R"({"kind":"APIResourceList","apiVersion":"v1",)",
                                       R"("groupVersion":")", group->name, "/", segs[2],
                                       R"(","resources":[)", absl::StrJoin(resources, ","), "]}"));
}

}  // namespace testing_support::apiserver
