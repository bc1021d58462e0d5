// Test support, part of the kube-apiserver emulation (fake_apiserver.h): the HTTPS server and
// the request path. cpp-httplib's SSLServer on 127.0.0.1 (binding, restarting on the same port,
// stopping with kept-alive connections cut), then per request: authentication (bearer tokens
// or a verified client certificate), the request log, injected failures, routing to the object
// store, the binding subresource and watch streams, and the reply headers kube-apiserver sends.
//
// One mutex guards the store, the watch control and every member below; the public
// FakeApiServer methods (fake_apiserver.cc) take it around their calls into the store.
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_SERVER_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_SERVER_H_

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "test/support/apiserver_route.h"
#include "test/support/apiserver_status.h"
#include "test/support/apiserver_store.h"
#include "test/support/apiserver_watch.h"
#include "test/support/fake_apiserver.h"
#include "test/support/serve_process.h"

namespace httplib {
class SSLServer;
struct Request;
struct Response;
class DataSink;
}  // namespace httplib

namespace testing_support {

class FakeApiServer::Impl {
 public:
  explicit Impl(Options options);
  ~Impl();  // Stop()

  // Makes or finds the certificates, then Listen(options.port).
  absl::Status Init();
  // Binds 127.0.0.1:port (0: any) and serves in a background thread.
  absl::Status Listen(int port);
  void Stop();
  absl::Status Restart(bool keep_state);
  bool running() const;

  bool WaitForWatches(int count, std::chrono::milliseconds timeout) const;
  int64_t CountRequests(absl::string_view method, absl::string_view prefix,
                        absl::string_view query) const;

  // Guarded by mu_ (the FakeApiServer methods use them directly).
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // a watch opened or closed, a stop
  // A watch waits on its resource's: a change wakes only the watches that may carry it, as
  // kube-apiserver's watch cache does, not every watch of every client.
  mutable std::array<std::condition_variable, apiserver::kResourceCount> resource_cv_;
  // A stop, a drop of the watches or a new bookmark interval concerns every waiter.
  void WakeEveryone() const {
    cv_.notify_all();
    for (std::condition_variable& cv : resource_cv_) cv.notify_all();
  }
  const Options options_;
  std::string cert_dir_;
  int port_ = 0;
  std::vector<std::string> tokens_;
  std::chrono::milliseconds latency_{0};
  int bindings_in_flight_ = 0;
  int max_bindings_in_flight_ = 0;
  apiserver::ObjectStore store_;
  apiserver::WatchControl watch_control_;
  std::deque<std::pair<uint64_t, RequestRecord>> requests_;

  struct Failure {
    std::string method;
    std::string prefix;
    int status;
    int times;
  };
  std::vector<Failure> failures_;
  // FailRequests (status != 0) and StallRequests (hold > 0), newest last.
  struct TimedFault {
    FaultTarget target;
    int status = 0;
    std::chrono::milliseconds hold{0};
    std::chrono::steady_clock::time_point until;
    int times = -1;  // < 0: any number until `until`
  };
  std::vector<TimedFault> timed_faults_;

 private:
  void Handle(const httplib::Request& req, httplib::Response& res);
  // Takes the next injected failure that matches `req`.
  bool Injected(const httplib::Request& req, apiserver::Reply* reply);
  // Applies the newest timed fault that matches `req`: waits out a stall and returns false (the
  // request is then served), or sets `reply` to the failure and returns true (also when the
  // server stops during a stall).
  bool ApplyTimedFault(const httplib::Request& req, apiserver::Reply* reply);
  // Routes one authenticated request. Returns true when the response is a watch stream.
  bool Serve(const httplib::Request& req, httplib::Response& res, apiserver::Reply* reply);
  // Sets up a watch stream; returns false with `refused` set when the request is refused.
  bool StartWatch(const apiserver::Route& route, const httplib::Request& req,
                  httplib::Response& res, apiserver::Reply* refused);
  // One turn of a watch stream: waits for something to send, sends it (one chunk per event,
  // as kube-apiserver flushes), and says whether the stream goes on.
  bool WatchStep(apiserver::Watch& w, httplib::DataSink& sink);
  uint64_t Log(RequestRecord rec);
  void SetStatus(uint64_t id, int status);

  std::unique_ptr<TempDir> temp_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int listen_fd_ = -1;
  uint64_t next_request_id_ = 0;
};

}  // namespace testing_support

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_SERVER_H_
