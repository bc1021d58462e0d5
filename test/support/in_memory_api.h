// Test support: a kube::Api (kube/api.h) in memory, for unit tests of kube/ logic without
// sockets, TLS or the HTTP emulation (test/support/fake_apiserver.h, which stays for the
// wire-level tests). It records every call and answers it from, in this order:
//   1. a scripted reply: Reply() (an HTTP status and body) or Fail() (a transport error) for
//      the next call of a method on a path prefix; each is used once, in the order given;
//   2. a small object store keyed by path (query strings ignored; no lists, no selectors):
//        GET    PATH   the object (200) or 404 NotFound
//        POST   COLL   stores the body at COLL/NAME (metadata.name, or generateName and a
//                      counter) with a new metadata.resourceVersion: 201 and the object, or 409
//                      AlreadyExists
//        PUT    PATH   replaces it: 200, 404 when absent, 409 Conflict when the body's
//                      resourceVersion is set and is not the stored one (a compare-and-swap)
//        PATCH  PATH   an application/merge-patch+json is merged in (RFC 7386): 200; 404 when
//                      absent; other patch types 415
//        DELETE PATH   200 and gone, or 404
//      Refusals carry a meta/v1 Status whose message kube::DescribeError reads.
// Streams (StreamLines) answer from ScriptStream() scripts: lines, then the final status, or held
// open after the lines until the handle's Cancel() or Interrupt(). An unscripted stream is a
// 404.
//
//   testing_support::InMemoryApi api;
//   api.Reply("POST", "/api/v1/namespaces/team/pods/p/binding", 409, kConflict);
//   kube::ApiBinder binder(api, state, 30s);
//   EXPECT_FALSE(binder.PostBinding(args, {}).ok());
//   EXPECT_EQ(api.Calls("POST", "/api/v1/namespaces/team/pods/p/binding").size(), 1u);
//
// Thread-safe.
#ifndef GPU_TENANCY_TEST_SUPPORT_IN_MEMORY_API_H_
#define GPU_TENANCY_TEST_SUPPORT_IN_MEMORY_API_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kube/api.h"

namespace testing_support {

class InMemoryApi final : public kube::Api {
 public:
  struct Call {
    std::string method;  // GET, POST, PUT, PATCH, DELETE; a stream is a GET with `stream`
    std::string path;    // as called, query string included
    std::string body;
    std::string content_type;  // "" without a body
    bool stream = false;
  };

  InMemoryApi() = default;
  ~InMemoryApi() override;

  // The next call of `method` on a path starting with `path_prefix` gets this reply. `body`
  // empty: a Status naming `status`.
  void Reply(const std::string& method, const std::string& path_prefix, int status,
             std::string body = "");
  // ... or fails with `error` (Unavailable, as the HTTPS client reports a transport failure).
  void Fail(const std::string& method, const std::string& path_prefix,
            absl::Status error = absl::UnavailableError("connection refused"));

  // Stores `json` at `path` with a new resourceVersion (a write by someone else); returns it.
  std::string SetObject(const std::string& path, const std::string& json);
  std::optional<std::string> Object(const std::string& path) const;

  // The next stream on a path starting with `path_prefix` delivers `lines` and ends with
  // `status`; `hold_open` keeps it running after the lines until its handle stops it (without a
  // handle it ends).
  void ScriptStream(const std::string& path_prefix, std::vector<std::string> lines,
                    int status = 200, bool hold_open = false);
  // How many streams are running (held open) now.
  int RunningStreams() const;

  std::vector<Call> Calls() const;
  // The calls of `method` on paths starting with `path_prefix`.
  std::vector<Call> Calls(absl::string_view method, absl::string_view path_prefix) const;
  void ClearCalls();

  absl::StatusOr<kube::ApiResponse> Get(const std::string& path) override;
  absl::StatusOr<kube::ApiResponse> Post(const std::string& path, const std::string& body) override;
  absl::StatusOr<kube::ApiResponse> Put(const std::string& path, const std::string& body) override;
  absl::StatusOr<kube::ApiResponse> Patch(const std::string& path, const std::string& body,
                                          const std::string& content_type) override;
  absl::StatusOr<kube::ApiResponse> Delete(const std::string& path) override;
  absl::StatusOr<int> StreamLines(const std::string& path,
                                  const std::function<bool(absl::string_view)>& on_line,
                                  Stream* cancel_handle, int read_timeout_seconds) override;

 private:
  struct Scripted {
    std::string method, path_prefix;
    absl::Status error;  // not OK: a transport failure
    kube::ApiResponse response;
  };
  struct ScriptedStream {
    std::string path_prefix;
    std::vector<std::string> lines;
    int status = 200;
    bool hold_open = false;
  };
  class HeldStream;

  // Records the call; the scripted answer if one matches, else the store's.
  absl::StatusOr<kube::ApiResponse> Answer(Call call);
  kube::ApiResponse FromStore(const Call& call);                        // mu_ held
  std::string Store(const std::string& path, const std::string& json);  // mu_ held

  mutable std::mutex mu_;
  std::condition_variable stopped_;  // a held stream was stopped
  std::vector<Call> calls_;
  std::deque<Scripted> scripted_;
  std::deque<ScriptedStream> streams_;
  std::map<std::string, std::string> objects_;
  int64_t resource_version_ = 0;
  int64_t generated_ = 0;  // names made from generateName
  int running_ = 0;
};

}  // namespace testing_support

#endif  // GPU_TENANCY_TEST_SUPPORT_IN_MEMORY_API_H_
