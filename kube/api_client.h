// The HTTPS implementation of kube::Api (kube/api.h) for kube-apiserver: bearer token (re-read
// from its file when the file changes, so rotated projected tokens keep working) or client
// certificate, keep-alive connections reused across calls, and streaming GETs for watches. The
// server's certificate must chain to the configured CA and no other (the system's bundle only
// when none is configured, as for client-go) and name the host dialled or tls_server_name.
// Thread-safe: each call borrows an idle connection or opens a new one.
#ifndef GPU_TENANCY_KUBE_API_CLIENT_H_
#define GPU_TENANCY_KUBE_API_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/mutex.h"
#include "kube/api.h"
#include "kube/config.h"

namespace httplib {
class SSLClient;
}

namespace kube {

class ApiClient final : public Api {
 public:
  // InvalidArgument when the CA or client certificate PEM cannot be parsed.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ApiClient>> Create(ApiConfig config);
  ~ApiClient() override;

  // The contracts are Api's. A pooled connection the server closed meanwhile is retried once on
  // a fresh one; a 401 after the token file changed is retried once with the new token.
  [[nodiscard]] absl::StatusOr<ApiResponse> Get(const std::string& path) override;
  [[nodiscard]] absl::StatusOr<ApiResponse> Post(const std::string& path,
                                                 const std::string& body) override;
  [[nodiscard]] absl::StatusOr<ApiResponse> Put(const std::string& path,
                                                const std::string& body) override;
  [[nodiscard]] absl::StatusOr<ApiResponse> Patch(const std::string& path, const std::string& body,
                                                  const std::string& content_type) override;
  [[nodiscard]] absl::StatusOr<ApiResponse> Delete(const std::string& path) override;
  // A stream through a handle closes its connection on Cancel() or Interrupt(), and keeps it
  // (and so its TLS context) for the handle's next stream with the same read timeout.
  [[nodiscard]] absl::StatusOr<int> StreamLines(
      const std::string& path, const std::function<bool(absl::string_view)>& on_line,
      Stream* cancel_handle, int read_timeout_seconds) override;

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
  struct StreamConnection;

  ApiConfig config_;
  struct OpenSsl;
  std::shared_ptr<OpenSsl> ssl_;  // parsed CA store and client certificate
  common::Mutex mu_;
  struct IdlePool;
  std::unique_ptr<IdlePool> idle_ ABSL_PT_GUARDED_BY(mu_);  // keep-alive connections between calls
  std::string token_ ABSL_GUARDED_BY(mu_);
  std::string token_stamp_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_API_CLIENT_H_
