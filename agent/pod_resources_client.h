// A client of the kubelet's PodResources API (v1) on its unix socket, normally
// /var/lib/kubelet/pod-resources/kubelet.sock. Each call has its own deadline; the channel
// reconnects by itself when the kubelet restarts. Errors carry gRPC's code and name the socket:
//   Unavailable       the socket does not exist, refuses, or the other end is not a gRPC server
//                     (it closed the connection, or answered what is not HTTP/2)
//   DeadlineExceeded  no answer within the deadline (a socket that accepts and stays silent)
//
//   PodResourcesClient kubelet("/var/lib/kubelet/pod-resources/kubelet.sock");
//   absl::StatusOr<std::vector<topology::PodDevices>> pods = kubelet.List(absl::Seconds(5));
//
// Thread-safe.
#ifndef GPU_TENANCY_AGENT_POD_RESOURCES_CLIENT_H_
#define GPU_TENANCY_AGENT_POD_RESOURCES_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "topology/device_ids.h"

namespace agent {

class PodResourcesClient {
 public:
  explicit PodResourcesClient(std::string socket_path);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  // Every pod the kubelet holds resources for, with each container's device-plugin devices
  // (containers and resources without devices are left out).
  absl::StatusOr<std::vector<topology::PodDevices>> List(absl::Duration timeout) const;
  // The node's device-plugin devices the kubelet may hand out, per resource.
  absl::StatusOr<std::vector<topology::ResourceDevices>> Allocatable(absl::Duration timeout) const;

  const std::string& socket_path() const { return socket_path_; }

 private:
  class Connection;  // the gRPC channel and its generated client, kept out of this header
  std::string socket_path_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace agent

#endif  // GPU_TENANCY_AGENT_POD_RESOURCES_CLIENT_H_
