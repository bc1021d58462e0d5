// Test support: an in-process kube-apiserver emulation that speaks the real wire protocol over
// HTTPS on loopback, for testing the kube/ client (list+watch, Binding, leases, events) and for
// scenario tests that script a cluster.
//
// What it serves (paths, query parameters, bodies and Status errors as kube-apiserver v1.28 does,
// checked against the captures in test/testdata/apiserver/):
//   GET    /api/v1/{nodes,pods,namespaces,events}, /api/v1/namespaces/NS/{pods,events}
//          /apis/coordination.k8s.io/v1[/namespaces/NS]/leases, /apis/events.k8s.io/v1/...
//          /apis/resource.k8s.io/VERSION[/namespaces/NS]/{resourceslices,resourceclaims,
//          deviceclasses,resourceclaimtemplates}
//          list (limit/continue/resourceVersion, labelSelector, fieldSelector) or, with
//          watch=1|true, a chunked watch stream (resourceVersion, allowWatchBookmarks,
//          timeoutSeconds); 410 Expired as an ERROR event when resourceVersion is compacted.
//   GET    /apis, /apis/GROUP, /apis/GROUP/VERSION   discovery (APIGroupList, APIGroup,
//          APIResourceList) for the groups served
//   GET    .../NAME                     one object or 404 NotFound
//   POST   collection                   create (201), 409 AlreadyExists
//   PUT    .../NAME                     update with optimistic concurrency (409 Conflict, 422
//                                        when a Lease update carries no resourceVersion)
//   PATCH  .../NAME[/status]            merge, strategic-merge (as merge) and JSON patch
//   DELETE .../NAME                     delete
//   POST   /api/v1/namespaces/NS/pods/NAME/binding    201 Status, or 409 when already bound
//   POST   /api/v1/namespaces/NS/pods/NAME/eviction   policy/v1 Eviction: 201 and the pod is
//          deleted, or 429 when a PodDisruptionBudget selecting it allows no disruption
//   also   /api/v1 configmaps, /apis/policy/v1 poddisruptionbudgets, /apis/apps/v1
//          replicasets, statefulsets, deployments (stored as given; no controllers run),
//          /apis/admissionregistration.k8s.io/v1 validating- and mutatingwebhookconfigurations
// Every request needs `Authorization: Bearer TOKEN` with an accepted token (401 otherwise), or a
// client certificate when Options::require_client_cert is set.
//
//   absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start({});
//   ASSERT_TRUE(server.ok()) << server.status();         // 127.0.0.1:0, token "test-token"
//   ASSERT_TRUE((*server)->LoadTestData("apiserver/list-nodes-page1.json").ok());
//   ASSERT_TRUE((*server)->AddPod(R"({"metadata":{"name":"p","namespace":"team"}})").ok());
//   ... point the client at (*server)->url(), trusting (*server)->ca_file() ...
//   (*server)->DropWatches();  (*server)->Compact();  // the client must re-watch, then relist
//   EXPECT_EQ((*server)->CountRequests("POST", "/api/v1/namespaces/team/pods/p/binding"), 1);
//
// Thread-safety: every public method may be called from any thread while clients are served.
// Not emulated: admission, defaulting beyond a few fields, RBAC, server-side apply, deletion
// grace periods (a DELETE removes the object at once), HTTP/2, protobuf.
//
// The emulation's parts are test/support/apiserver_*.{h,cc}, one concern each (object store,
// selectors, patches, watches, binding, routes, the HTTPS server); fake_apiserver.cc lists them.
#ifndef GPU_TENANCY_TEST_SUPPORT_FAKE_APISERVER_H_
#define GPU_TENANCY_TEST_SUPPORT_FAKE_APISERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace testing_support {

// The resources the emulator stores. Nodes, Namespaces, ResourceSlices and DeviceClasses are
// cluster-scoped. The resource.k8s.io kinds are served under the versions of
// FakeApiServerOptions::resource_api_versions.
enum class Resource {
  kNodes,
  kPods,
  kNamespaces,
  kLeases,
  kEvents,
  kResourceSlices,
  kResourceClaims,
  kDeviceClasses,
  kResourceClaimTemplates,
  // For `gpu-tenancy reconfigure`: mig-manager's ConfigMap, the owners of drained pods and the
  // PodDisruptionBudgets their evictions honour.
  kConfigMaps,
  kPodDisruptionBudgets,
  kReplicaSets,
  kStatefulSets,
  kDeployments,
  // For serve's check that the webhook configurations carry the conditions its policy makes.
  kValidatingWebhookConfigurations,
  kMutatingWebhookConfigurations,
};

struct FakeApiServerOptions {
  int port = 0;  // 0 picks a free port; Restart() keeps whatever was picked
  // Accepted bearer tokens. Empty: every request is accepted without a token.
  std::vector<std::string> tokens = {"test-token"};
  // Require a client certificate signed by the test CA (client.crt/client.key in cert_dir()).
  // A verified certificate authenticates the request without a token, as kube-apiserver does.
  bool require_client_cert = false;
  // BOOKMARK events on watches that ask for them (allowWatchBookmarks=true).
  std::chrono::milliseconds bookmark_interval{1000};
  // Watch length when the request has no timeoutSeconds (kube-apiserver: 30 to 60 min).
  std::chrono::seconds default_watch_timeout{1800};
  // Directory with ca.crt/tls.crt/tls.key; "" makes a fresh one with MakeTestCerts.
  std::string cert_dir;
  int threads = 64;  // connection threads; each open watch holds one
  // The versions of resource.k8s.io served, newest first as discovery lists them (v1.36 serves
  // "v1" alone). Empty: the group is absent, as on a cluster without DRA (its discovery and
  // paths answer 404). Objects are served as stored, whatever the URL's version: load
  // v1beta1-shaped objects for a v1beta1-only server.
  std::vector<std::string> resource_api_versions = {"v1"};
};

// One request as received.
struct RequestRecord {
  std::string method;
  std::string target;     // path and query exactly as sent
  std::string path;       // decoded path without query
  std::string token;      // bearer token, "" when none
  std::string client_cn;  // CN of the verified client certificate, "" when none
  int status = 0;         // HTTP status of the reply (200 for a watch once it streams)
};

class FakeApiServer {
 public:
  using Options = FakeApiServerOptions;

  // Makes certificates (unless options.cert_dir is set), binds 127.0.0.1:options.port and serves
  // in background threads. Unavailable when the port cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FakeApiServer>> Start(Options options);
  ~FakeApiServer();  // Stop()

  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  int port() const;
  std::string host() const;  // "127.0.0.1"
  std::string url() const;   // "https://127.0.0.1:PORT"
  const std::string& cert_dir() const;
  std::string ca_file() const;           // CA that signed the serving and client certificates
  std::string client_cert_file() const;  // for Options::require_client_cert
  std::string client_key_file() const;
  // A kubeconfig for this server (CA inlined, namespace gpu-system) whose user entry is
  // `user_yaml`, indented as under `user:`, e.g. "    token: test-token".
  std::string Kubeconfig(const std::string& user_yaml) const;

  // ---- Objects. The resourceVersion starts at 1 (as etcd's revision); each change bumps it and
  // records the watch event (ADDED / MODIFIED / DELETED) a real apiserver would send. Objects are
  // JSON text; metadata.uid and creationTimestamp are generated when missing,
  // metadata.resourceVersion is always ours. Namespaced objects without metadata.namespace go to
  // "default". A write that changes nothing keeps the resourceVersion and sends no event.

  // A single object or a List (kubectl `-o json` output, or a NodeList/PodList/... page from the
  // API whose items lack kind): each object is upserted. InvalidArgument on unknown kinds.
  [[nodiscard]] absl::Status Load(absl::string_view json);
  [[nodiscard]] absl::Status LoadTestData(absl::string_view relative_path);  // test/testdata/...

  // AlreadyExists if present / NotFound if absent; InvalidArgument for malformed JSON.
  [[nodiscard]] absl::Status Add(Resource resource, absl::string_view json);
  [[nodiscard]] absl::Status Upsert(Resource resource, absl::string_view json);
  [[nodiscard]] absl::Status Delete(Resource resource, absl::string_view ns,
                                    absl::string_view name);
  // RFC 7386 merge patch (e.g. R"({"status":{"phase":"Succeeded"}})"); MODIFIED unless a no-op.
  [[nodiscard]] absl::Status MergePatch(Resource resource, absl::string_view ns,
                                        absl::string_view name, absl::string_view patch);
  [[nodiscard]] absl::Status AddNode(absl::string_view json);
  [[nodiscard]] absl::Status UpsertNode(absl::string_view json);
  [[nodiscard]] absl::Status DeleteNode(absl::string_view name);
  [[nodiscard]] absl::Status AddPod(absl::string_view json);
  [[nodiscard]] absl::Status UpsertPod(absl::string_view json);
  [[nodiscard]] absl::Status DeletePod(absl::string_view ns, absl::string_view name);
  // A namespace shaped like kube-apiserver makes them (label, finalizer, phase Active).
  [[nodiscard]] absl::Status AddNamespace(absl::string_view name);

  // Removes an object without any watch event (a delete the watchers missed); the
  // resourceVersion still moves on, so only a relist shows that the object is gone.
  // Returns false if there was no such object.
  bool DeleteSilently(Resource resource, absl::string_view ns, absl::string_view name);

  // The stored object with kind/apiVersion, or "" if absent. For cluster-scoped, ns is ignored.
  std::string GetObject(Resource resource, absl::string_view ns, absl::string_view name) const;
  // Stored objects in list order (by namespace, then name); ns "" means all namespaces.
  std::vector<std::string> ListObjects(Resource resource, absl::string_view ns = "") const;
  // Events created through the API (core v1 and events.k8s.io/v1), oldest first, as stored.
  std::vector<std::string> Events() const;
  int64_t resource_version() const;  // the current (latest) resourceVersion

  // ---- Watches.
  // Ends every open watch now. graceful=false drops the connection mid-stream (no terminating
  // chunk, as when the apiserver dies); true ends the chunked body cleanly, as on timeout.
  void DropWatches(bool graceful = false);
  // Sets the compacted resourceVersion to the current one: watches and continue tokens from an
  // older resourceVersion get 410 Expired. Open watches keep streaming.
  void Compact();
  void SetBookmarkInterval(std::chrono::milliseconds interval);
  int OpenWatches() const;  // watch streams currently being served
  // Waits until at least `count` watches are open; false on timeout.
  bool WaitForWatches(int count, std::chrono::milliseconds timeout) const;

  // ---- Server life.
  // Stops listening and closes every connection (clients see resets). Idempotent.
  void Stop();
  // Stops (if running) and serves again on the same port. keep_state=false clears every object
  // and compacts at the current resourceVersion (which never goes backwards), so clients that
  // resume a watch get 410 and relist. Unavailable if the port cannot be bound again.
  [[nodiscard]] absl::Status Restart(bool keep_state = true);
  bool running() const;

  // ---- Authentication. Replaces the accepted bearer tokens (rotation: {"old","new"}, then
  // {"new"}). Empty accepts everything.
  void AcceptTokens(std::vector<std::string> tokens);

  // ---- Faults.
  // Delay applied to every binding POST before it is handled (no lock held meanwhile).
  void SetLatency(std::chrono::milliseconds latency);
  // The most binding POSTs that were being served at the same time (since the start or the
  // last ClearRequests()): shows whether a client's binds overlap or are serialised.
  int MaxConcurrentBindings() const;
  // The next `times` requests whose method equals `method` ("" = any) and whose path starts with
  // `path_prefix` get `http_status` with a Status body (reason from the code: 429
  // TooManyRequests with Retry-After: 1, 500 InternalError, 503 ServiceUnavailable, 504 Timeout,
  // 409 Conflict, 410 Expired, ...) instead of being served. Authentication is checked first.
  void InjectFailure(absl::string_view method, absl::string_view path_prefix, int http_status,
                     int times = 1);
  // Faults for a while, as a chaos run schedules them. Each applies to the
  // requests that match `target` until `until` (and, with `times` >= 0, to that many at most).
  //   FailRequests   answers `http_status` as InjectFailure does (429 with Retry-After: 1, 410
  //                  Expired on a list, ...).
  //   StallRequests  holds each request `hold` before serving it, as an apiserver behind a slow
  //                  etcd does: a client whose timeout is shorter gives up, and the request is
  //                  served all the same once the hold ends (a Binding or a write lands late).
  //                  Stop() ends the holds (the connections are cut).
  // Faults added later are checked first. ClearFaults() ends them all, InjectFailure's too.
  enum class RequestKind {
    kAny,
    kList,   // GET of a collection without watch
    kWatch,  // GET of a collection with watch=1|true
    kRead,   // GET of one object
    kWrite,  // POST, PUT, PATCH, DELETE (a Binding included)
  };
  struct FaultTarget {
    std::string method;       // "" = any
    std::string path_prefix;  // "" = any
    RequestKind kind = RequestKind::kAny;
  };
  void FailRequests(const FaultTarget& target, int http_status,
                    std::chrono::steady_clock::time_point until, int times = -1);
  void StallRequests(const FaultTarget& target, std::chrono::milliseconds hold,
                     std::chrono::steady_clock::time_point until, int times = -1);
  void ClearFaults();
  // Moves the resourceVersion on by `by` and compacts at the new one, as kube-apiserver restarted
  // on a busy etcd does: its watch cache starts at etcd's current revision, which other writers
  // moved on meanwhile, so a client resuming a watch or a list from before gets 410 and relists.
  void AdvanceResourceVersion(int64_t by);

  // ---- Request log.
  std::vector<RequestRecord> Requests() const;
  // Requests whose method equals `method` ("" = any), whose decoded path starts with
  // `path_prefix` and whose raw query contains `query_substring` (e.g. "watch=1", "continue=").
  int64_t CountRequests(absl::string_view method, absl::string_view path_prefix,
                        absl::string_view query_substring = "") const;
  void ClearRequests();

  class Impl;

 private:
  explicit FakeApiServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace testing_support

#endif  // GPU_TENANCY_TEST_SUPPORT_FAKE_APISERVER_H_
