// Test support, part of the kube-apiserver emulation (fake_apiserver.h): the object store.
// Every object's revisions under one resourceVersion counter (as etcd's revision), the watch
// events each change records, compaction, and the verbs on them as kube-apiserver answers them:
// create (generateName, uid, creationTimestamp, a few defaults), update with optimistic
// concurrency, patch, delete (a bound pod is marked, then removed), get, and paginated lists
// under selectors with continue tokens and resourceVersion semantics.
//
// Not thread-safe: FakeApiServer::Impl holds its mutex around every call.
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_STORE_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_STORE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rapidjson/document.h"
#include "test/support/apiserver_objects.h"
#include "test/support/apiserver_status.h"
#include "test/support/fake_apiserver.h"

namespace testing_support::apiserver {

// One change as a watch sees it.
struct WatchEvent {
  int64_t rv;
  std::string type;  // ADDED, MODIFIED, DELETED
  std::string ns;
  std::string json;
  std::string prev_json;  // the object before a MODIFIED, for selector transitions
};

// The query of a list or watch request on a collection.
struct CollectionQuery {
  Resource resource = Resource::kPods;
  std::string ns;           // "" for cluster-scoped resources and all-namespace requests
  std::string api_version;  // of the URL: "v1", "events.k8s.io/v1", ...
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  std::string continue_token;                  // lists only
  std::optional<std::string> limit;            // lists only
  std::string allow_bookmarks;                 // watches only
  std::optional<std::string> timeout_seconds;  // watches only
};

class ObjectStore {
 public:
  // `changed` runs after every change, with the resource changed (watches wait for it).
  explicit ObjectStore(std::function<void(Resource)> changed);

  int64_t resource_version() const { return rv_; }
  int64_t compacted() const { return compacted_; }
  // Watches and continue tokens from before the current resourceVersion get 410 from now on.
  void Compact() { compacted_ = rv_; }
  // Every object gone without events, compacted at the current resourceVersion.
  void Clear();
  // The resourceVersion moves on by `by` (writes elsewhere) and is compacted there.
  void Advance(int64_t by) {
    rv_ += by;
    compacted_ = rv_;
  }

  // ---- The scripting side of FakeApiServer (see its comments): no API validation.
  absl::Status Load(absl::string_view text);
  absl::Status Add(Resource r, absl::string_view json);
  absl::Status Upsert(Resource r, absl::string_view json);
  bool DeleteSilently(Resource r, absl::string_view ns, absl::string_view name);
  std::string GetObject(Resource r, absl::string_view ns, absl::string_view name) const;
  std::vector<std::string> ListObjects(Resource r, absl::string_view ns) const;
  std::vector<std::string> Events() const;

  // ---- The API verbs. `from_api` applies the validation kube-apiserver does on requests.
  Reply Create(Resource r, rapidjson::Document& doc, absl::string_view url_ns,
               absl::string_view api_version, bool from_api);
  Reply Update(Resource r, rapidjson::Document& doc, absl::string_view ns,
               absl::string_view url_name, absl::string_view api_version, bool from_api);
  Reply Patch(Resource r, absl::string_view ns, absl::string_view name,
              absl::string_view content_type, absl::string_view body,
              absl::string_view api_version);
  Reply Delete(Resource r, absl::string_view ns, absl::string_view name, bool from_api);
  Reply Get(Resource r, absl::string_view ns, absl::string_view name) const;
  Reply List(const CollectionQuery& query) const;

  // ---- For subresources and watches.
  // The current object at `key` (KeyFor), or nullptr when absent or deleted.
  const std::string* Current(Resource r, const std::string& key) const;
  // Bumps the resourceVersion, stores `doc` (normalised) as the new revision and records the
  // watch event `type`; `prev` is the object before a MODIFIED. Returns the stored JSON.
  std::string Commit(Resource r, const std::string& key, absl::string_view type,
                     rapidjson::Document& doc, absl::string_view api_version,
                     const std::string* prev);
  // Every change to `r`, ascending resourceVersion, never trimmed.
  const std::vector<WatchEvent>& events(Resource r) const;
  // Calls fn(json) for each current object of `r` whose key starts with `prefix`, in key order.
  void ForEachCurrent(Resource r, absl::string_view prefix,
                      const std::function<void(const std::string&)>& fn) const;

 private:
  struct Revision {
    int64_t rv;
    bool deleted;
    std::string json;
  };
  struct Store {
    std::map<std::string, std::vector<Revision>> objects;  // key -> revisions, oldest first
    std::vector<WatchEvent> events;
  };

  // The object as of resourceVersion `at`, or nullptr.
  static const std::string* AsOf(const std::vector<Revision>& revs, int64_t at);
  // The few defaults clients notice.
  static void Default(Resource r, rapidjson::Document& doc);
  // Keeps identity fields, and drops no-op writes as kube-apiserver does (same
  // resourceVersion, no event).
  Reply WriteUpdate(Resource r, const std::string& key, rapidjson::Document& doc,
                    absl::string_view api_version, const std::string& old_json);

  std::function<void(Resource)> changed_;
  std::array<Store, kResourceCount> stores_;
  // etcd starts at revision 1, so no list ever reports "0" (which means "any" to a watch).
  int64_t rv_ = 1;
  int64_t compacted_ = 0;
};

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_STORE_H_
