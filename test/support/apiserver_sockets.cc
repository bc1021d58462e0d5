// Test support, part of the kube-apiserver emulation: the sockets cpp-httplib keeps to itself,
// found through /proc (see apiserver_sockets.h).
#include "test/support/apiserver_sockets.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>

#include "absl/strings/numbers.h"

namespace testing_support::apiserver {
namespace {

// Calls `fn(fd, peer_port)` for every accepted TCP connection on 127.0.0.1:local_port, found
// through /proc/self/fd (cpp-httplib does not expose its sockets); stops when fn returns false.
template <typename Fn>
void ForEachConnection(int local_port, Fn fn) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (dirent* e = readdir(dir)) {
    int fd;
    if (!absl::SimpleAtoi(e->d_name, &fd) || fd == dirfd(dir)) continue;
    sockaddr_in local{}, peer{};
    socklen_t len = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != local_port) {
      continue;
    }
    len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    if (!fn(fd, static_cast<int>(ntohs(peer.sin_port)))) break;
  }
  closedir(dir);
}

}  // namespace

int FindConnectionFd(int local_port, int remote_port) {
  int found = -1;
  ForEachConnection(local_port, [&](int fd, int peer) {
    if (peer != remote_port) return true;
    found = fd;
    return false;
  });
  return found;
}

void ShutdownConnections(int local_port) {
  ForEachConnection(local_port, [](int fd, int) {
    shutdown(fd, SHUT_RDWR);
    return true;
  });
}

bool PeerClosed(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, static_cast<short>(POLLRDHUP), 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

std::string PeerCommonName(const ssl_st* ssl) {
  if (ssl == nullptr) return "";
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  std::string cn;
  if (SSL_get_verify_result(ssl) == X509_V_OK) {
    char buf[256] = {0};
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof(buf)) >
        0) {
      cn = buf;
    }
  }
  X509_free(cert);
  return cn;
}

}  // namespace testing_support::apiserver
