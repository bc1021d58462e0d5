// Throwaway development certificates for `serve --demo` and tests: an ECDSA P-256 CA and a
// serving certificate for localhost, 127.0.0.1 and ::1, valid for one day. Never for production:
// certs/ has the scripts for real clusters.
#ifndef GPU_TENANCY_SERVER_DEV_CERTS_H_
#define GPU_TENANCY_SERVER_DEV_CERTS_H_

#include <string>

#include "absl/status/statusor.h"

namespace server {

struct DevCertFiles {
  std::string ca_cert;  // DIR/ca.crt
  std::string cert;     // DIR/tls.crt
  std::string key;      // DIR/tls.key (mode 0600)
};

// Writes the three files into `dir` (which must exist). Internal on OpenSSL failures.
[[nodiscard]] absl::StatusOr<DevCertFiles> WriteDevCerts(const std::string& dir);

}  // namespace server

#endif  // GPU_TENANCY_SERVER_DEV_CERTS_H_
