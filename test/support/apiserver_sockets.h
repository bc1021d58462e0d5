// Test support, part of the kube-apiserver emulation (fake_apiserver.h): the sockets
// cpp-httplib keeps to itself. Connections are found through /proc/self/fd by their local and
// peer ports, so the emulation can notice a watcher that hung up, close kept-alive connections
// on Stop(), and read the verified client certificate of a request.
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_SOCKETS_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_SOCKETS_H_

#include <string>

struct ssl_st;

namespace testing_support::apiserver {

// The server side of the connection from `remote_port` to 127.0.0.1:`local_port`; -1 if none.
// The socket stays ours while the request that asked is being served.
int FindConnectionFd(int local_port, int remote_port);
// shutdown(2) on every accepted connection to 127.0.0.1:`local_port`.
void ShutdownConnections(int local_port);
// Whether the peer of `fd` hung up (false for fd < 0).
bool PeerClosed(int fd);
// CN of the verified client certificate on `ssl`, "" when none or unverified.
std::string PeerCommonName(const ssl_st* ssl);

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_SOCKETS_H_
