// Callers that give up: kube-scheduler drops the connection after its httpTimeout, kube-apiserver
// after the webhook's timeoutSeconds, a probe or Prometheus after its own timeout. Writing the
// answer to such a connection must fail that one write, never the server.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "test/server/tls_test_client.h"
#include "test/support/serve_process.h"

namespace {

using testing_support::ClientCredentials;
using testing_support::ServeProcess;
using testing_support::TlsConnection;

using testing_support::kDemoMigFilterRequest;

bool Alive(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == 0;
}

// Plain HTTP GET on the metrics port, then a close (FIN, or RST with `reset`) instead of
// reading the answer.
void GetAndHangUp(int port, const std::string& path, bool reset) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
    (void)!write(fd, request.data(), request.size());
  }
  if (reset) {
    linger abort{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
  }
  close(fd);
}

TEST(HangupTest, CallersThatHangUpDoNotKillTheServer) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> s = ServeProcess::Start({"--demo"});
  ASSERT_TRUE(s.ok()) << s.status();
  ServeProcess& server = **s;
  ClientCredentials credentials{server.cert_dir() + "/ca.crt", "", ""};
  for (int i = 0; i < 200 && Alive(server.pid()); ++i) {
    absl::StatusOr<std::unique_ptr<TlsConnection>> c =
        TlsConnection::Open(server.tls_port(), credentials);
    ASSERT_TRUE(c.ok()) << "attempt " << i << ": " << c.status();
    bool reset = i % 2 == 1;  // Go closes with FIN; a crashed caller's kernel sends RST
    (*c)->PostAndHangUp("/extender/filter", kDemoMigFilterRequest, reset);
    GetAndHangUp(server.metrics_port(), "/metrics", reset);
  }
  ASSERT_TRUE(Alive(server.pid())) << "the server died when a caller hung up";
  EXPECT_EQ(server.Post("/extender/filter", kDemoMigFilterRequest).status, 200);
  EXPECT_EQ(server.Get("/healthz").status, 200);
}

}  // namespace
