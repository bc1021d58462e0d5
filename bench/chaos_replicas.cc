#include "bench/chaos_replicas.h"

#include <httplib.h>
#include <signal.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/soak_objects.h"

namespace chaos {

using testing_support::ServeProcess;

OperatorReply OperatorGet(const Endpoint& e, const std::string& path, int timeout_seconds) {
  OperatorReply out;
  if (!e.up) return out;
  httplib::Client client("127.0.0.1", e.metrics_port);
  client.set_connection_timeout(timeout_seconds, 0);
  client.set_read_timeout(timeout_seconds, 0);
  httplib::Result r = client.Get(path.c_str());
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  return out;
}

Replicas::Replicas(std::vector<std::string> args, std::string dir)
    : args_(std::move(args)), dir_(std::move(dir)) {
  for (int i = 0; i < kReplicas; ++i) endpoints_[i].index = i;
}

Replicas::~Replicas() {
  for (int i = 0; i < kReplicas; ++i) Terminate(i);
}

absl::Status Replicas::Start(int index) {
  uint64_t incarnation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    incarnation = next_incarnation_++;
  }
  const std::string identity = absl::StrCat("chaos-", index, "-", incarnation);
  const std::string log = absl::StrCat(dir_, "/replica-", index, "-", incarnation, ".log");
  std::vector<std::string> args = args_;
  args.insert(args.end(), {"--identity", identity});
  absl::StatusOr<std::unique_ptr<ServeProcess>> started = ServeProcess::Start(args, log);
  if (!started.ok()) return started.status();
  std::lock_guard<std::mutex> lock(mu_);
  log_files_.push_back(log);
  procs_[index] = *std::move(started);
  Endpoint& e = endpoints_[index];
  e.incarnation = incarnation;
  e.up = true;
  e.pid = procs_[index]->pid();
  e.tls_port = procs_[index]->tls_port();
  e.metrics_port = procs_[index]->metrics_port();
  e.ca = procs_[index]->cert_dir() + "/ca.crt";
  e.identity = identity;
  return absl::OkStatus();
}

void Replicas::Kill(int index) {
  std::unique_ptr<ServeProcess> proc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    proc = std::move(procs_[index]);
    endpoints_[index].up = false;
  }
  if (!proc) return;
  kill(proc->pid(), SIGKILL);
  proc->WaitForExit(10000);  // reaped; the destructor then has nothing to stop
}

int Replicas::Terminate(int index) {
  std::unique_ptr<ServeProcess> proc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    proc = std::move(procs_[index]);
    endpoints_[index].up = false;
  }
  return proc ? proc->Terminate() : -1;
}

Endpoint Replicas::Get(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return endpoints_[index];
}

int Replicas::ExtenderReady(bool* both) const {
  int ready = -1, count = 0;
  for (int i = 0; i < kReplicas; ++i) {
    if (OperatorGet(Get(i), "/readyz/extender", 2).status == 200) {
      ready = i;
      ++count;
    }
  }
  if (both) *both = count > 1;
  return ready;
}

std::vector<std::string> Replicas::LogFiles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_files_;
}

std::string Replicas::Logs() const {
  std::string out;
  for (const std::string& file : LogFiles()) {
    absl::StrAppend(&out, "==== ", file, "\n", soak::ReadWhole(file));
  }
  return out;
}

}  // namespace chaos
