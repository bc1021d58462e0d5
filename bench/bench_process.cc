#include "bench/bench_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bench {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const std::string& stderr_file) {
  signal(SIGPIPE, SIG_IGN);
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return absl::InternalError("pipe failed");
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    close(out_pipe[0]);
    close(out_pipe[1]);
    int err = stderr_file.empty() ? open("/dev/null", O_WRONLY)
                                  : open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0) dup2(err, STDERR_FILENO);
    signal(SIGPIPE, SIG_DFL);
    std::vector<std::string> args = argv;
    std::vector<char*> cargs;
    for (std::string& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  close(out_pipe[1]);
  std::unique_ptr<ChildProcess> p(new ChildProcess());
  p->pid_ = pid;
  p->stdout_fd_ = out_pipe[0];
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{p->stdout_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 200) <= 0) continue;
    char buf[256];
    ssize_t n = read(p->stdout_fd_, buf, sizeof(buf));
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
    const size_t at = seen.find("ready tls_port=");
    const size_t eol = at == std::string::npos ? std::string::npos : seen.find('\n', at);
    if (eol == std::string::npos) continue;
    if (!absl::SimpleAtoi(seen.substr(at + 15, eol - at - 15), &p->tls_port_)) break;
    return p;
  }
  return absl::UnavailableError(
      absl::StrCat(argv[0], " did not print its ready line; it printed: ", seen));
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

std::map<std::string, double> ThreadCpuSecondsByName(pid_t pid) {
  std::map<std::string, double> by_name;
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* tasks = opendir(dir.c_str());
  if (!tasks) return by_name;
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const std::string task = absl::StrCat(dir, "/", entry->d_name);
    std::ifstream stat(task + "/schedstat");
    std::ifstream comm(task + "/comm");
    double on_cpu_ns = 0;
    std::string name;
    if (stat >> on_cpu_ns && std::getline(comm, name)) by_name[name] += on_cpu_ns / 1e9;
  }
  closedir(tasks);
  return by_name;
}

double ProcessCpuSeconds(pid_t pid) {
  double total = 0;
  for (const auto& [name, seconds] : ThreadCpuSecondsByName(pid)) total += seconds;
  return total;
}

double MachineBusySeconds() {
  std::ifstream in("/proc/stat");
  std::string line;
  std::getline(in, line);  // "cpu  user nice system idle iowait irq softirq steal ..."
  std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
  double busy = 0;
  for (size_t i = 1; i < fields.size() && i <= 8; ++i) {
    if (i == 4 || i == 5) continue;  // idle, iowait
    double ticks = 0;
    if (absl::SimpleAtod(fields[i], &ticks)) busy += ticks;
  }
  return busy / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string LoadAverages() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return absl::StrCat(a, " ", b, " ", c);
}

}  // namespace bench
