// Benchmark support: another program started as a child that prints a ready line, and the CPU
// time a process (every thread of it) and the whole machine have used, read from /proc, so a
// benchmark can report CPU per request and how busy the rest of the machine was meanwhile.
#ifndef GPU_TENANCY_BENCH_BENCH_PROCESS_H_
#define GPU_TENANCY_BENCH_BENCH_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace bench {

class ChildProcess {
 public:
  // Runs `argv` (argv[0] is the program's path), its stderr into `stderr_file` ("" discards
  // it), and waits up to 15 s for a stdout line starting "ready tls_port=N".
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(const std::vector<std::string>& argv,
                                                             const std::string& stderr_file = "");
  ~ChildProcess();  // SIGTERM, then waits
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  int tls_port() const { return tls_port_; }

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int tls_port_ = 0;
};

// CPU time (user and system) every current thread of `pid` has run, in seconds, from the
// scheduler's nanosecond counters (/proc/PID/task/*/schedstat). Threads that have ended are not
// counted, so compare two readings of a process whose threads live as long as it does.
double ProcessCpuSeconds(pid_t pid);
// The same per thread name (/proc/PID/task/*/comm), summed over the threads of each name.
std::map<std::string, double> ThreadCpuSecondsByName(pid_t pid);

// CPU time every core has spent outside idle and iowait since boot, in seconds (/proc/stat).
double MachineBusySeconds();

// "2.31 2.05 1.90": the load averages over 1, 5 and 15 minutes.
std::string LoadAverages();

}  // namespace bench

#endif  // GPU_TENANCY_BENCH_BENCH_PROCESS_H_
