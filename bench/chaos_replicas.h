// chaos's two replicas of `gpu-tenancy serve` with leader election against the emulation: each
// can be SIGKILLed and started again (a new pod: a new identity in the Lease, as a Deployment
// makes them), and every thread of the run may ask where a replica is and who leads.
// Thread-safe.
#ifndef GPU_TENANCY_BENCH_CHAOS_REPLICAS_H_
#define GPU_TENANCY_BENCH_CHAOS_REPLICAS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "test/support/serve_process.h"

namespace chaos {

inline constexpr int kReplicas = 2;

// Where one replica is now. `incarnation` changes with every start, so a client knows to
// reconnect (and to trust another CA).
struct Endpoint {
  int index = 0;
  uint64_t incarnation = 0;
  bool up = false;
  pid_t pid = -1;
  int tls_port = 0;
  int metrics_port = 0;
  std::string ca;
  std::string identity;
};

// A plain GET on a replica's operator port: the status (0 when no reply within
// `timeout_seconds`) and the body.
struct OperatorReply {
  int status = 0;
  std::string body;
};
OperatorReply OperatorGet(const Endpoint& e, const std::string& path, int timeout_seconds = 5);

class Replicas {
 public:
  // `args` are serve's flags besides --identity (kubeconfig, policy, lease namespace...).
  // Logs go to `dir`/replica-<index>-<incarnation>.log.
  Replicas(std::vector<std::string> args, std::string dir);
  ~Replicas();  // SIGTERM to those still up

  // Starts replica `index` (a new incarnation) and waits for its ready line.
  absl::Status Start(int index);
  // SIGKILL, and reaped: the process is gone when this returns.
  void Kill(int index);
  // SIGTERM and its exit status (as from waitpid); -1 when it was not up.
  int Terminate(int index);

  Endpoint Get(int index) const;
  // The replica whose /readyz/extender answers 200, or -1. `both` (when set) says whether both
  // answered 200 in this one round of probes.
  int ExtenderReady(bool* both = nullptr) const;
  // Every log written so far, oldest incarnation first, each under a header line.
  std::string Logs() const;
  std::vector<std::string> LogFiles() const;

 private:
  const std::vector<std::string> args_;
  const std::string dir_;
  mutable std::mutex mu_;
  std::unique_ptr<testing_support::ServeProcess> procs_[kReplicas];
  Endpoint endpoints_[kReplicas];
  uint64_t next_incarnation_ = 1;
  std::vector<std::string> log_files_;
};

}  // namespace chaos

#endif  // GPU_TENANCY_BENCH_CHAOS_REPLICAS_H_
