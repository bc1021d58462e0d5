// The seam in front of kube-apiserver: the calls kube/ and cmd/ make, as an interface. The
// HTTPS client (kube/api_client.h) speaks it to a real API server; unit tests of kube/ logic
// hand their code an in-memory one (test/support/in_memory_api.h) that records each call and
// answers from a script, while the wire-level tests keep the HTTP emulation
// (test/support/fake_apiserver.h) behind the real client.
//
//   absl::StatusOr<ApiResponse> r = api.Get("/api/v1/namespaces/team/pods/p");
//   if (!r.ok()) return r.status();                   // transport: Unavailable
//   if (r->status != 200) return absl::NotFoundError(DescribeError(*r));
//
// Implementations are thread-safe: callers share one Api between threads.
#ifndef GPU_TENANCY_KUBE_API_H_
#define GPU_TENANCY_KUBE_API_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/mutex.h"

namespace kube {

struct ApiResponse {
  int status = 0;
  std::string body;
};

class Api {
 public:
  class Stream;
  virtual ~Api() = default;

  // Unavailable on transport failures (connection refused, TLS failure, timeout); any HTTP
  // reply, including 4xx/5xx, is returned as a response. Post and Put send application/json.
  [[nodiscard]] virtual absl::StatusOr<ApiResponse> Get(const std::string& path) = 0;
  [[nodiscard]] virtual absl::StatusOr<ApiResponse> Post(const std::string& path,
                                                         const std::string& body) = 0;
  [[nodiscard]] virtual absl::StatusOr<ApiResponse> Put(const std::string& path,
                                                        const std::string& body) = 0;
  [[nodiscard]] virtual absl::StatusOr<ApiResponse> Patch(const std::string& path,
                                                          const std::string& body,
                                                          const std::string& content_type) = 0;
  [[nodiscard]] virtual absl::StatusOr<ApiResponse> Delete(const std::string& path) = 0;

  // A GET whose body is consumed as it arrives: `on_line` gets each complete line (watch event)
  // and returns false to stop. Returns the HTTP status once the stream ends; a non-200 reply's
  // body is delivered as one line. `cancel_handle` (may be null) ends the stream from another
  // thread: Cancelled after Cancel(), Aborted after Interrupt(). Unavailable when no reply came.
  [[nodiscard]] virtual absl::StatusOr<int> StreamLines(
      const std::string& path, const std::function<bool(absl::string_view)>& on_line,
      Stream* cancel_handle, int read_timeout_seconds) = 0;
};

// Lets another thread abort a running StreamLines: Cancel() for good (shutdown), Interrupt()
// for the current or next stream only (StreamLines then returns Aborted). Run the streams
// through one handle one after another, and through one Api: the handle keeps that Api's
// connection from one stream to the next.
class Api::Stream {
 public:
  Stream();
  ~Stream();
  void Cancel();
  void Interrupt();
  bool cancelled() const { return cancelled_.load(); }

  // The part an Api implementation uses.
  //
  // What Cancel() and Interrupt() stop: the implementation's hold on a running stream.
  class Connection {
   public:
    virtual ~Connection() = default;
    // Ends the running stream soon, from another thread; called under the handle's lock.
    virtual void Stop() = 0;
  };
  // Starts a stream through this handle: Cancelled after Cancel(); Aborted once for an
  // Interrupt() that found no stream running. Otherwise `connect` gets the connection the
  // handle kept from its last stream (null at first), may keep or replace it, and returns the
  // one this stream runs on, which Cancel() and Interrupt() stop until End().
  [[nodiscard]] absl::Status Begin(
      absl::FunctionRef<Connection*(std::unique_ptr<Connection>& kept)> connect);
  // True once Cancel() or Interrupt() reached the stream begun last: its implementation ends
  // it and returns Cancelled (cancelled()) or Aborted.
  bool stopping() const { return cancelled_.load() || interrupted_.load(); }
  // The stream begun last has ended; Cancel() and Interrupt() no longer reach its connection.
  void End();

 private:
  // Guards the connections and the pending interrupt; Cancel() and Interrupt() stop the active
  // connection under it, so it cannot end (End()) or be replaced (Begin()) meanwhile. The flags
  // are atomics, for stopping() to read without it.
  common::Mutex mu_;
  // reused by each stream through this handle
  std::unique_ptr<Connection> kept_ ABSL_GUARDED_BY(mu_);
  Connection* active_ ABSL_GUARDED_BY(mu_) = nullptr;
  // an Interrupt() that found no stream running
  bool interrupt_pending_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> interrupted_{false};  // the running stream was interrupted
  std::atomic<bool> cancelled_{false};
};

// The Status message of an error reply, or the first bytes of the body.
std::string DescribeError(const ApiResponse& response);

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_API_H_
