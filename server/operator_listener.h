// The plain-HTTP listener for operators and the kubelet: /healthz, /readyz..., /metrics and the
// read-only debug routes. One thread multiplexes every connection with poll(2), so a client that
// connects and then sends nothing, or one header byte at a time, holds a descriptor and not a
// worker: the kubelet's probe, which sends its whole request at once, is answered in the same
// turn of the loop whatever else is connected. (cpp-httplib's server gives each connection a
// worker until it is done, and only bounds single reads: six slow clients on four workers made
// /healthz unanswerable, and the kubelet restarts a pod whose liveness probe times out.)
//
// Each connection gets request_deadline from accept to a complete request head, and
// reply_deadline from its reply being ready until the last byte has left; one past either is
// closed. Time spent waiting for the handler thread is not the client's and has no deadline;
// at most max_queued requests wait. Replies close the connection (Prometheus and the kubelet
// open a new one per scrape or probe).
//
//   OperatorListener::Options options;
//   auto listener = OperatorListener::Bind("0.0.0.0", 8080, routes, options);
//   (*listener)->Start();  ...  (*listener)->Stop();
#ifndef GPU_TENANCY_SERVER_OPERATOR_LISTENER_H_
#define GPU_TENANCY_SERVER_OPERATOR_LISTENER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/mutex.h"

namespace server {

struct OperatorReply {
  int status = 200;
  std::string content_type;
  std::string body;
};

struct OperatorRoute {
  std::string path;  // matched exactly, without the query string
  std::function<OperatorReply()> handler;
  // Runs on the loop thread: only for handlers that never block (health and readiness, which
  // read atomics). Others run one at a time on the listener's handler thread, so a /metrics
  // scrape waiting on the cluster-state lock does not hold up a probe.
  bool quick = false;
  // Instead of `handler`, for routes that read the query string (the part of the target after
  // '?', as sent: still percent-encoded; "" when there is none).
  std::function<OperatorReply(absl::string_view query)> query_handler = nullptr;
};

class OperatorListener {
 public:
  struct Options {
    // From accept to the blank line ending the request head.
    std::chrono::milliseconds request_deadline{3000};
    // From the reply being ready to its last byte leaving: a client that stops reading.
    std::chrono::milliseconds reply_deadline{10000};
    // Requests waiting for the handler thread; beyond, 503 at once.
    size_t max_queued = 16;
    // Open connections; at the cap, each new one closes the oldest that is still reading.
    size_t max_connections = 512;
    // Request line and headers; a larger head gets 431.
    size_t max_request_head = 16 * 1024;
  };

  // Binds and listens (port 0 picks a free one). Unavailable when the address cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<OperatorListener>> Bind(
      const std::string& host, int port, std::vector<OperatorRoute> routes, Options options);
  ~OperatorListener();  // Stop()
  OperatorListener(const OperatorListener&) = delete;
  OperatorListener& operator=(const OperatorListener&) = delete;

  void Start();  // serves on two background threads: the poll loop and the handler thread
  // Stops accepting and closes connections still reading or waiting for a handler; replies
  // being written get up to their deadline. Returns when the threads have ended. Idempotent.
  void Stop();

  int port() const { return port_; }
  // Connections closed for missing their request or reply deadline.
  uint64_t expired() const { return expired_.load(); }

 private:
  struct Connection;
  struct Job {
    uint64_t connection;
    const OperatorRoute* route;
    bool head_only;
    std::string query;
    std::string reply;  // filled in by the handler thread
  };
  OperatorListener() = default;
  void Run();
  void RunHandlers();
  void Wake();
  // Parses a complete request head: sets the reply on `c`, or queues a job for it.
  void Answer(Connection& c, size_t head_end);
  // What the handler thread waits for: a queued job, or Stop().
  bool HandlerHasWork() const ABSL_SHARED_LOCKS_REQUIRED(jobs_mu_);

  std::vector<OperatorRoute> routes_;
  Options options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop() and finished jobs wake the loop
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> expired_{0};
  common::Mutex jobs_mu_;
  common::CondVar jobs_ready_;
  std::deque<Job> queued_ ABSL_GUARDED_BY(jobs_mu_);  // for the handler thread
  std::vector<Job> done_ ABSL_GUARDED_BY(jobs_mu_);   // for the loop
  size_t in_handler_ = 0;  // queued or running; read and written by the loop thread only
  std::thread thread_;
  std::thread handler_thread_;
};

}  // namespace server

#endif  // GPU_TENANCY_SERVER_OPERATOR_LISTENER_H_
