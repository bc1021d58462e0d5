// Test support: runs the real gpu-tenancy binary as `serve` on loopback port 0 with TLS and
// talks to it over HTTPS, the way kube-scheduler and kube-apiserver do.
#ifndef GPU_TENANCY_TEST_SUPPORT_SERVE_PROCESS_H_
#define GPU_TENANCY_TEST_SUPPORT_SERVE_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"

namespace httplib {
class SSLClient;
class Client;
}  // namespace httplib

namespace testing_support {

// A fresh temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// CA + serving certificate for 127.0.0.1/localhost made with the openssl CLI (ECDSA P-256),
// plus a client certificate from the same CA: ca.crt, tls.crt, tls.key, client.crt, client.key.
absl::Status MakeTestCerts(const std::string& dir);

std::string ReadTestData(const std::string& relative_path);  // under test/testdata

// A names-only ExtenderArgs for the demo cluster (`serve --demo`): tenant acme's MIG pod,
// which fits mig-a only. The request the server tests and benchmarks send most.
extern const char kDemoMigFilterRequest[];
std::string ReadSource(const std::string& relative_path);  // under the project root

class ServeProcess {
 public:
  // Starts `gpu-tenancy serve` with `args` plus --listen/--metrics-listen on 127.0.0.1:0 and the
  // test certificates (unless args carry --tls-cert). Waits for the ready line.
  // `stderr_file`, when not empty, receives the server's log (else it is discarded unless
  // GT_SERVER_LOGS is set). Also ignores SIGPIPE in the test process: a server that closes a
  // connection under a test's write (a hostile row, a drain) must not kill the test.
  static absl::StatusOr<std::unique_ptr<ServeProcess>> Start(std::vector<std::string> args,
                                                             const std::string& stderr_file = "");
  ~ServeProcess();  // SIGTERM, then waits

  int tls_port() const { return tls_port_; }
  int metrics_port() const { return metrics_port_; }
  pid_t pid() const { return pid_; }
  const std::string& cert_dir() const { return certs_.path(); }

  struct Response {
    int status = 0;  // 0 when the request failed at the transport level
    std::string body;
    std::string content_type;
  };
  // POST over HTTPS, verifying the server certificate against the test CA.
  Response Post(const std::string& path, const std::string& body,
                const std::string& content_type = "application/json");
  Response Get(const std::string& path);  // plain HTTP on the metrics listener

  // Sends SIGTERM and returns the exit status (as from waitpid).
  int Terminate();
  // Waits up to `timeout_millis` for the process to exit on its own (after a signal the test
  // sent) and reaps it: the status as from waitpid, or -1 if it is still running.
  int WaitForExit(int timeout_millis);

 private:
  ServeProcess() = default;
  TempDir certs_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int tls_port_ = 0;
  int metrics_port_ = 0;
  std::unique_ptr<httplib::SSLClient> client_;
};

// A test suite sharing one served binary: `serve` with Derived::ServeArgs() starts before the
// suite's first test and stops after its last, so tests see each other's effects on it.
//
//   class DemoTest : public SharedServeSuite<DemoTest> {
//    public:
//     static std::vector<std::string> ServeArgs() { return {"--demo"}; }
//   };
//   TEST_F(DemoTest, Filters) { server_->Post("/extender/filter", body); ... }
template <typename Derived>
class SharedServeSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start(Derived::ServeArgs());
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = s->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static inline ServeProcess* server_ = nullptr;
};

// What `promtool check metrics` (Debian package prometheus) says is wrong with a /metrics
// exposition; empty when it passes.
std::string PromtoolProblems(const std::string& exposition);

// The value of one series in a /metrics exposition, e.g. SampleValue(text,
// "gpu_tenancy_tenant_pods{tenant=\"acme\",tier=\"untrusted\"}"); nullopt when absent.
std::optional<double> SampleValue(const std::string& exposition, const std::string& series);

// Parses JSON or fails the current test.
rapidjson::Document ParseOrDie(const std::string& text);

}  // namespace testing_support

#endif  // GPU_TENANCY_TEST_SUPPORT_SERVE_PROCESS_H_
