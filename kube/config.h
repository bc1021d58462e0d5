// How to reach kube-apiserver: in-cluster (service-account token, CA and
// KUBERNETES_SERVICE_HOST/PORT) or from a kubeconfig file (its current context).
#ifndef GPU_TENANCY_KUBE_CONFIG_H_
#define GPU_TENANCY_KUBE_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kube {

struct ApiConfig {
  std::string host;  // DNS name or IP, without brackets
  int port = 443;
  std::string ca_pem;           // PEM bundle to verify the server; empty: system roots
  std::string token;            // static bearer token
  std::string token_file;       // re-read when it changes (projected tokens rotate)
  std::string client_cert_pem;  // client-certificate auth
  std::string client_key_pem;
  std::string tls_server_name;             // overrides the name checked in the server certificate
  std::string namespace_name = "default";  // the service's own namespace (leases)
};

// KUBERNETES_SERVICE_HOST/PORT and /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,
// namespace}. `sa_dir` is overridable for tests. FailedPrecondition when not in a pod.
[[nodiscard]] absl::StatusOr<ApiConfig> InClusterConfig(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// Parses kubeconfig YAML: current-context (or `context` if non-empty) -> cluster.server,
// certificate-authority(-data), tls-server-name; user token / tokenFile,
// client-certificate(-data), client-key(-data). Relative file paths resolve against `base_dir`.
// InvalidArgument naming the missing or bad field.
[[nodiscard]] absl::StatusOr<ApiConfig> ParseKubeconfig(absl::string_view yaml_text,
                                                        const std::string& base_dir,
                                                        const std::string& context = "");
[[nodiscard]] absl::StatusOr<ApiConfig> LoadKubeconfig(const std::string& path,
                                                       const std::string& context = "");

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_CONFIG_H_
