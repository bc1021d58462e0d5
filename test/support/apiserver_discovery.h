// Test support, part of the kube-apiserver emulation (fake_apiserver.h): the discovery
// documents of the API groups it serves, as kube-apiserver writes them. GET /apis is the
// APIGroupList, /apis/GROUP one APIGroup (versions newest first, the first preferred), and
// /apis/GROUP/VERSION the APIResourceList of that version. resource.k8s.io is listed with the
// versions the server was started with, and absent (404 on all three) without any; the
// capture of v1.36's answer is test/testdata/dra/discovery-resource.k8s.io.json.
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_DISCOVERY_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_DISCOVERY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "test/support/apiserver_status.h"

namespace testing_support::apiserver {

// The reply to a GET of `path` when it is a discovery path: the document, or 404 for a group
// or version not served. nullopt for any other path (a resource path, left to the router).
// `resource_versions` are the served versions of resource.k8s.io, newest first.
std::optional<Reply> Discovery(absl::string_view path,
                               const std::vector<std::string>& resource_versions);

// True when `api_version` ("resource.k8s.io/v1beta1", "v1") is served: every version of the
// other groups is, resource.k8s.io's only as `resource_versions` say.
bool VersionServed(absl::string_view api_version,
                   const std::vector<std::string>& resource_versions);

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_DISCOVERY_H_
