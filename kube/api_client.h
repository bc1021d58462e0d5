// A small HTTPS client for kube-apiserver: bearer token (re-read from its file when the file
// changes, so rotated projected tokens keep working) or client certificate, CA verification,
// keep-alive connections reused across calls, and streaming GETs for watches.
// Thread-safe: each call borrows an idle connection or opens a new one.
#ifndef GPU_TENANCY_KUBE_API_CLIENT_H_
#define GPU_TENANCY_KUBE_API_CLIENT_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kube/config.h"

namespace httplib {
class SSLClient;
}

namespace kube {

struct ApiResponse {
  int status = 0;
  std::string body;
};

class ApiClient {
 public:
  // InvalidArgument when the CA or client certificate PEM cannot be parsed.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ApiClient>> Create(ApiConfig config);
  ~ApiClient();

  // Unavailable on transport failures (connection refused, TLS failure, timeout); any HTTP
  // reply, including 4xx/5xx, is returned as a response.
  [[nodiscard]] absl::StatusOr<ApiResponse> Get(const std::string& path);
  [[nodiscard]] absl::StatusOr<ApiResponse> Post(const std::string& path, const std::string& body);
  [[nodiscard]] absl::StatusOr<ApiResponse> Put(const std::string& path, const std::string& body);
  [[nodiscard]] absl::StatusOr<ApiResponse> Patch(const std::string& path, const std::string& body,
                                                  const std::string& content_type);
  [[nodiscard]] absl::StatusOr<ApiResponse> Delete(const std::string& path);

  // A GET whose body is consumed as it arrives: `on_line` gets each complete line (watch event)
  // and returns false to stop. Returns the HTTP status once the stream ends; a non-200 reply's
  // body is delivered as one line. `cancel_handle` closes the connection from another thread:
  // Cancelled after Cancel(), Aborted after Interrupt().
  class Stream;
  [[nodiscard]] absl::StatusOr<int> StreamLines(
      const std::string& path, const std::function<bool(absl::string_view)>& on_line,
      Stream* cancel_handle, int read_timeout_seconds);

  const ApiConfig& config() const { return config_; }

 private:
  explicit ApiClient(ApiConfig config);
  std::unique_ptr<httplib::SSLClient> NewConnection(int read_timeout_seconds) const;
  std::unique_ptr<httplib::SSLClient> Borrow();
  void Return(std::unique_ptr<httplib::SSLClient> client);
  // The bearer token; from token_file, read again when its stamp changes or when `reread`.
  std::string Token(bool reread = false);
  template <typename Call>
  absl::StatusOr<ApiResponse> Send(Call call);

  ApiConfig config_;
  struct OpenSsl;
  std::shared_ptr<OpenSsl> ssl_;  // parsed CA store and client certificate
  std::mutex mu_;
  struct IdlePool;
  std::unique_ptr<IdlePool> idle_;  // keep-alive connections between calls
  std::string token_;
  std::string token_stamp_;
};

// Lets another thread abort a running StreamLines: Cancel() for good (shutdown), Interrupt()
// for the current or next stream only (StreamLines then returns Aborted). Streams through one
// handle reuse its connection settings and TLS context, so run them one after another.
class ApiClient::Stream {
 public:
  Stream();
  ~Stream();
  void Cancel();
  void Interrupt();
  bool cancelled() const { return cancelled_.load(); }

 private:
  friend class ApiClient;
  std::mutex mu_;
  std::unique_ptr<httplib::SSLClient> client_;  // reused by each stream through this handle
  int read_timeout_seconds_ = 0;                // client_'s
  httplib::SSLClient* active_ = nullptr;
  bool interrupt_pending_ = false;        // an Interrupt() that found no stream running
  std::atomic<bool> interrupted_{false};  // the running stream was interrupted
  std::atomic<bool> cancelled_{false};
};

// The Status message of an error reply, or the first bytes of the body.
std::string DescribeError(const ApiResponse& response);

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_API_CLIENT_H_
