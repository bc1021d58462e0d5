// connection_bench: what hostile connections cost a healthy caller of `gpu-tenancy serve`.
// One server, three phases: 0 hostile connections (the baseline), then 1,000, then 10,000, held
// open (and reopened whenever the server closes one): idle TCP connections that send nothing,
// and one in ten stalled inside a TLS handshake record, from 127.0.0.2..127.0.0.9 round robin.
// In each phase a healthy caller opens one HTTPS keep-alive connection and POSTs /extender/filter
// back to back; its p50 and p99 are reported next to phase 0 of the same run. Then what the
// server's RSS grows by for 10,000 idle TCP connections and for 1,000 idle TLS connections
// (handshake completed), each on a fresh server.
//
//   connection_bench [--seconds 3] [--md FILE]
//   connection_bench --smoke   100 and 500 hostile, 0.5 s per phase; fails unless every healthy
//                              request got 200. Asserts nothing about speed.
// How many connections the server holds is its own gauge, gpu_tenancy_tls_connections.
// Exits 1 when a server does not start, or (--smoke) a healthy request failed; a full run
// reports failures in its table, as findings, and exits 0.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/flag_table.h"
#include "test/support/serve_process.h"

namespace {

using Clock = std::chrono::steady_clock;
using testing_support::SampleValue;
using testing_support::ServeProcess;

// The demo's MIG pod, names only (test/support/serve_process.h).
const char* const kFilterBody = testing_support::kDemoMigFilterRequest;
// A handshake record header announcing 512 bytes that never come.
constexpr char kPartialRecord[] = "\x16\x03\x01\x02\x00";
constexpr int kSourceAddresses = 8;  // 127.0.0.2 .. 127.0.0.9
// kube-scheduler's httpTimeout for the extender (manifests/scheduler/config.yaml). A request
// that takes it all is a timeout; its 3 s enter the percentiles as a lower bound.
constexpr int kTimeoutSeconds = 3;
// A ceiling for opening 10,000, far above what it takes, so that a server that cannot hold them
// shows as fewer open instead of hanging the run.
constexpr auto kRampLimit = std::chrono::seconds(8);
// Far below the server's idle timeout, so TLS connections from the start of the ramp are still
// open when the RSS is read.
constexpr auto kTlsRampLimit = std::chrono::seconds(3);

struct Options {
  double seconds = 3.0;
  double settle = 1.0;
  std::vector<int> phases = {0, 1000, 10000};
  int rss_idle = 10000;
  int rss_tls = 1000;
  bool smoke = false;
  std::string md_path;
};

void SleepFor(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

// VmRSS of `pid` in KiB; -1 when unreadable.
long VmRssKib(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  long kib = -1;
  for (std::string line; std::getline(in, line);) {
    if (std::sscanf(line.c_str(), "VmRSS: %ld", &kib) == 1) break;
  }
  return kib;
}

sockaddr_in Loopback(uint32_t offset, int port) {  // 127.0.0.1 + offset
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK + offset);
  return a;
}

constexpr std::initializer_list<const char*> kAllStates = {"handshake", "idle", "reading",
                                                           "in_flight", "writing"};

// The server's gpu_tenancy_tls_connections summed over `states` (a missing series counts 0), or
// -1 when /metrics does not answer. It includes the healthy caller's connection while it is open.
int OpenOnServer(ServeProcess& server, std::initializer_list<const char*> states = kAllStates) {
  const ServeProcess::Response metrics = server.Get("/metrics");
  if (metrics.status != 200) return -1;
  double sum = 0;
  for (const char* state : states) {
    sum += SampleValue(metrics.body,
                       absl::StrCat("gpu_tenancy_tls_connections{state=\"", state, "\"}"))
               .value_or(0);
  }
  return static_cast<int>(sum);
}

enum class Kind { kIdle, kStalled, kTlsIdle };

// Holds hostile connections to 127.0.0.1:`port` open from one thread until destroyed: opens them
// one at a time and reopens any the server closes, learning of it as poll(2) finds the socket
// readable and it reads the end of the stream or an error. kTlsIdle counts as open once its
// handshake has completed; it never sends a request.
class HostilePool {
 public:
  HostilePool(int port, std::vector<Kind> kinds)
      : port_(port), kinds_(std::move(kinds)), ssl_(kinds_.size()) {
    fds_.assign(kinds_.size(), pollfd{-1, POLLIN | POLLRDHUP, 0});  // poll(2) skips fd -1
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);  // what it costs, not whom it trusts
    thread_ = std::thread([this] { Run(); });
  }
  ~HostilePool() {
    stop_.store(true);
    thread_.join();
    for (size_t i = 0; i < kinds_.size(); ++i) Close(i);
    SSL_CTX_free(ctx_);
  }
  HostilePool(const HostilePool&) = delete;
  HostilePool& operator=(const HostilePool&) = delete;

  int size() const { return static_cast<int>(kinds_.size()); }
  int open() const { return open_.load(); }  // on our side
  int server_closed() const { return server_closed_.load(); }

 private:
  void Run() {
    while (!stop_.load()) {
      // One at a time: a burst of thousands of SYNs can overflow the accept queue, and a dropped
      // SYN is retried only after 1 s. A failed open waits for the next turn.
      for (size_t i = 0; i < kinds_.size() && !stop_.load(); ++i) {
        if (fds_[i].fd < 0) Open(i);
      }
      // Wakes up seldom: polling 10,000 descriptors costs about a millisecond, taken from the
      // caller being measured.
      if (poll(fds_.data(), fds_.size(), 200) <= 0) continue;
      for (size_t i = 0; i < fds_.size(); ++i) {
        if (fds_[i].revents == 0) continue;
        // A TLS alert or session tickets at most (drained raw: we never speak TLS on it again),
        // then the end of the stream.
        char buf[4096];
        ssize_t n = recv(fds_[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
          Close(i);
          open_.fetch_sub(1);
          server_closed_.fetch_add(1);
        }
      }
    }
  }

  void Open(size_t i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    int one = 1;  // pick the port at connect(), by the whole 4-tuple
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
    timeval timeout{kTimeoutSeconds, 0};  // a handshake the server sits on must not stop us
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    sockaddr_in source = Loopback(1 + (next_source_++ % kSourceAddresses), 0);
    sockaddr_in target = Loopback(0, port_);
    fds_[i].fd = fd;
    const bool connected = bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof(source)) == 0 &&
                           connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target)) == 0;
    bool ok = connected;
    if (ok && kinds_[i] == Kind::kStalled) {
      ok = send(fd, kPartialRecord, sizeof(kPartialRecord) - 1, MSG_NOSIGNAL) ==
           static_cast<ssize_t>(sizeof(kPartialRecord) - 1);
    } else if (ok && kinds_[i] == Kind::kTlsIdle) {
      ssl_[i] = SSL_new(ctx_);
      SSL_set_fd(ssl_[i], fd);
      SSL_set_tlsext_host_name(ssl_[i], "localhost");
      ok = SSL_connect(ssl_[i]) == 1;  // fails e.g. when the server's handshake deadline runs out
    }
    if (ok) {
      open_.fetch_add(1);
    } else {
      Close(i);
      if (connected) server_closed_.fetch_add(1);  // the server refused what we sent
    }
  }

  void Close(size_t i) {
    if (fds_[i].fd < 0) return;
    SSL_free(ssl_[i]);  // a no-op on nullptr
    ssl_[i] = nullptr;
    close(fds_[i].fd);
    fds_[i].fd = -1;
  }

  const int port_;
  const std::vector<Kind> kinds_;
  std::vector<SSL*> ssl_;    // for kTlsIdle; touched by thread_ only, as fds_ is
  std::vector<pollfd> fds_;  // slot i's socket, -1 while closed
  SSL_CTX* ctx_ = nullptr;
  unsigned next_source_ = 0;
  std::atomic<int> server_closed_{0}, open_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Until our side has opened all of `pool` and the server's gauge (summed over `states`) shows as
// many, or `limit` has passed. The gauge is read only once our side is done: each read makes the
// server format all of /metrics.
void WaitHeld(ServeProcess& server, const HostilePool& pool, Clock::duration limit,
              std::initializer_list<const char*> states = kAllStates) {
  const Clock::time_point give_up = Clock::now() + limit;
  while ((pool.open() < pool.size() || OpenOnServer(server, states) < pool.size()) &&
         Clock::now() < give_up) {
    SleepFor(0.05);
  }
}

std::vector<Kind> PhaseMix(int count) {  // about 10% stalled in the handshake
  std::vector<Kind> kinds;
  for (int i = 0; i < count; ++i) kinds.push_back(i % 10 == 9 ? Kind::kStalled : Kind::kIdle);
  return kinds;
}

struct Healthy {
  std::vector<double> us;  // every attempt, a failed one at the time it took
  size_t ok = 0, timeouts = 0, errors = 0;
  double first_us = 0;  // the first request also opens the connection (TCP + TLS)
  std::string first_error;
  double p50() const { return Percentile(us, 0.50); }
  double p99() const { return Percentile(us, 0.99); }
};

// One keep-alive connection, opened by the first request, POSTing back to back for `seconds`.
// `others_at_end`, when given, gets the server's open connections less ours, read while ours is
// still open: once it is closed, the server may not have seen it go by the time it answers.
Healthy RunHealthy(ServeProcess& server, double seconds, int* others_at_end = nullptr) {
  httplib::SSLClient client("127.0.0.1", server.tls_port());
  client.set_ca_cert_path((server.cert_dir() + "/ca.crt").c_str());
  client.enable_server_certificate_verification(true);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(kTimeoutSeconds, 0);
  client.set_read_timeout(kTimeoutSeconds, 0);
  client.set_write_timeout(kTimeoutSeconds, 0);
  Healthy h;
  const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(seconds));
  do {
    const Clock::time_point sent = Clock::now();
    httplib::Result r = client.Post("/extender/filter", kFilterBody, "application/json");
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - sent).count();
    if (h.us.empty()) h.first_us = us;
    h.us.push_back(us);
    if (r && r->status == 200) {
      ++h.ok;
    } else if (!r && us >= 0.9e6 * kTimeoutSeconds) {
      ++h.timeouts;
    } else if (h.errors++ == 0) {
      h.first_error = r ? absl::StrCat("HTTP ", r->status) : httplib::to_string(r.error());
    }
  } while (Clock::now() < end);
  if (others_at_end != nullptr) {
    // Open on our side means the last reply kept it alive, so the server holds it too.
    *others_at_end = OpenOnServer(server) - (client.is_socket_open() ? 1 : 0);
  }
  return h;
}

// Limits above the hostile count: the phases measure holding connections, not shedding them.
absl::StatusOr<std::unique_ptr<ServeProcess>> StartServer() {
  return ServeProcess::Start(
      {"--demo", "--max-connections", "20000", "--max-connections-per-ip", "20000"});
}

struct Phase {
  int hostile = 0;
  int open_start = 0, open_end = 0;  // hostile connections open when measuring began and ended
  int server_closed = 0;             // closed by the server while measuring (then reopened)
  Healthy healthy;
};

// The healthy caller connects only once the hostile connections are in place: its connections
// come and go (a caller drops them when idle, the server after --keep-alive-timeout), and a new
// connection is what queues behind hostile ones (accept, handshake); one opened before them
// would hide that. It also means the gauge read before it counts hostile connections only.
Phase RunPhase(ServeProcess& server, int hostile, const Options& opt) {
  Phase p;
  p.hostile = hostile;
  HostilePool pool(server.tls_port(), PhaseMix(hostile));
  if (hostile > 0) {
    WaitHeld(server, pool, kRampLimit);
    SleepFor(opt.settle);
  }
  p.open_start = OpenOnServer(server);
  const int closed_before = pool.server_closed();
  p.healthy = RunHealthy(server, opt.seconds, &p.open_end);
  p.server_closed = pool.server_closed() - closed_before;
  const Healthy& h = p.healthy;
  std::fprintf(stderr, "  %5d hostile (%d open): %zu requests, %zu timeouts, %zu errors%s\n",
               hostile, p.open_start, h.us.size(), h.timeouts, h.errors,
               h.errors ? absl::StrCat(" (first: ", h.first_error, ")").c_str() : "");
  return p;
}

struct Rss {
  int asked = 0, open = 0;
  long before_kib = -1, with_kib = -1;
  std::string PerThousand() const {
    // Fixed costs (worker stacks, buffers touched once) scaled up from a few would mislead.
    if (open < std::min(asked, 1000) * 9 / 10 || before_kib < 0 || with_kib < 0) {
      return "n/a (too few held)";
    }
    return absl::StrFormat("%.0f KiB", static_cast<double>(with_kib - before_kib) * 1000.0 / open);
  }
};

// On a fresh server each: memory freed by earlier connections stays in the server's heap and
// would be reused by the next ones, hiding what they cost.
// `states`: those of gpu_tenancy_tls_connections that count as open (for TLS, "idle": the
// handshake completed). The warm-up caller is gone by then: it closed before the settle time.
absl::StatusOr<Rss> MeasureRss(const Options& opt, std::vector<Kind> kinds, Clock::duration ramp,
                               std::initializer_list<const char*> states) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> server = StartServer();
  if (!server.ok()) return server.status();
  RunHealthy(**server, 0.2);  // what the first requests build lazily belongs to the baseline
  SleepFor(opt.settle / 2);
  Rss r;
  r.asked = static_cast<int>(kinds.size());
  r.before_kib = VmRssKib((*server)->pid());
  HostilePool pool((*server)->tls_port(), std::move(kinds));
  WaitHeld(**server, pool, ramp, states);
  SleepFor(opt.settle);
  r.open = OpenOnServer(**server, states);
  r.with_kib = VmRssKib((*server)->pid());
  return r;
}

std::string Us(double us) {
  return us >= 1000 ? absl::StrFormat("%.2f ms", us / 1000) : absl::StrFormat("%.0f us", us);
}
std::string X(double a, double b) { return b > 0 ? absl::StrFormat("%.2fx", a / b) : "n/a"; }

// Rows of cells, the first the header: a markdown table, its columns aligned for people too.
std::string Markdown(const std::vector<std::vector<std::string>>& table) {
  std::vector<size_t> width(table[0].size(), 3);
  for (const auto& row : table) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (size_t r = 0; r < table.size(); ++r) {
    for (size_t c = 0; c < width.size(); ++c) {
      absl::StrAppend(&out, "| ", absl::StrFormat("%-*s ", width[c], table[r][c]));
    }
    absl::StrAppend(&out, "|\n");
    for (size_t c = 0; r == 0 && c < width.size(); ++c) {
      absl::StrAppend(&out, "|", std::string(width[c] + 2, '-'),
                      c + 1 == width.size() ? "|\n" : "");
    }
  }
  return out;
}

const common::FlagTable kFlags{
    {"connection_bench [--smoke] [--seconds S] [--md FILE]"},
    "What hostile connections cost a healthy caller of gpu-tenancy serve, and the server's RSS.",
    {{"smoke", "", "a short run that only checks the harness"},
     {"seconds", "S", "how long each phase measures (default 3)"},
     {"md", "FILE", "also write the tables here as Markdown"}}};

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  common::ParsedFlags flags;
  if (std::optional<int> exit_code =
          kFlags.ParseOrExit(std::vector<std::string>(argv + 1, argv + argc), flags)) {
    return *exit_code;
  }
  absl::StatusOr<double> seconds = common::NumberFlag(flags, "seconds", opt.seconds, 0.001, 1e6);
  if (!seconds.ok()) return kFlags.Refuse(seconds.status());
  if (!flags.positional.empty()) {
    return kFlags.Refuse(absl::InvalidArgumentError("connection_bench takes no arguments"));
  }
  opt.seconds = *seconds;
  opt.smoke = flags.Has("smoke");
  opt.md_path = flags.Get("md");
  if (opt.smoke) {
    opt.seconds = 0.5;
    opt.settle = 0.3;
    opt.phases = {0, 100, 500};
    opt.rss_idle = 500;
    opt.rss_tls = 100;
  }
  signal(SIGPIPE, SIG_IGN);  // the server closes hostile connections under our feet
  // Before any server starts, so the servers inherit the limit too.
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  const rlim_t needed = static_cast<rlim_t>(std::max(opt.phases.back(), opt.rss_idle)) + 200;
  if (limit.rlim_cur < needed) {
    std::fprintf(stderr, "connection_bench: RLIMIT_NOFILE is %ju, needs %ju\n",
                 static_cast<uintmax_t>(limit.rlim_cur), static_cast<uintmax_t>(needed));
    return 1;
  }

  std::vector<Phase> phases;
  {
    absl::StatusOr<std::unique_ptr<ServeProcess>> server = StartServer();
    if (!server.ok()) {
      std::fprintf(stderr, "connection_bench: %s\n", server.status().ToString().c_str());
      return 1;
    }
    std::fprintf(stderr, "healthy caller, %.1f s per phase:\n", opt.seconds);
    for (int hostile : opt.phases) phases.push_back(RunPhase(**server, hostile, opt));
  }
  std::fprintf(stderr, "server RSS...\n");
  absl::StatusOr<Rss> idle =
      MeasureRss(opt, std::vector<Kind>(opt.rss_idle, Kind::kIdle), kRampLimit, kAllStates);
  absl::StatusOr<Rss> tls =
      MeasureRss(opt, std::vector<Kind>(opt.rss_tls, Kind::kTlsIdle), kTlsRampLimit, {"idle"});
  if (!idle.ok() || !tls.ok()) {
    std::fprintf(stderr, "connection_bench: %s\n",
                 (idle.ok() ? tls : idle).status().ToString().c_str());
    return 1;
  }

  const Healthy& base = phases.front().healthy;
  std::vector<std::vector<std::string>> latency = {
      {"hostile", "open (start / end)", "closed", "requests", "timeouts", "errors", "first request",
       "p50", "p99", "p50 / p50(0)", "p99 / p99(0)"}};
  bool smoke_failed = false;
  for (const Phase& p : phases) {
    const Healthy& h = p.healthy;
    latency.push_back({absl::StrCat(p.hostile), absl::StrCat(p.open_start, " / ", p.open_end),
                       absl::StrCat(p.server_closed), absl::StrCat(h.us.size()),
                       absl::StrCat(h.timeouts), absl::StrCat(h.errors), Us(h.first_us),
                       Us(h.p50()), Us(h.p99()), X(h.p50(), base.p50()), X(h.p99(), base.p99())});
    smoke_failed |= h.ok == 0 || h.ok != h.us.size();
  }
  const Healthy& worst = phases.back().healthy;
  const size_t failed = worst.timeouts + worst.errors;
  const double ratio = base.p99() > 0 ? worst.p99() / base.p99() : 0;
  const bool met = ratio > 0 && ratio <= 2 && failed == 0;
  std::vector<std::vector<std::string>> target = {
      {"target", "measured", ""},
      {absl::StrCat("healthy p99 at ", phases.back().hostile,
                    " hostile <= 2x p99 at 0, no failures"),
       absl::StrFormat("%.2fx (%s vs %s), %zu failed", ratio, Us(worst.p99()), Us(base.p99()),
                       failed),
       met ? "met" : "**MISSED**"}};
  std::vector<std::vector<std::string>> rss = {
      {"connections", "open", "RSS before", "RSS with them", "per 1,000"}};
  for (auto [what, r] :
       {std::pair{"idle TCP", &*idle}, std::pair{"idle TLS, handshake completed", &*tls}}) {
    rss.push_back({what, absl::StrCat(r->open, " of ", r->asked),
                   absl::StrCat(r->before_kib, " KiB"), absl::StrCat(r->with_kib, " KiB"),
                   r->PerThousand()});
  }
  const std::string tables =
      absl::StrCat(Markdown(latency), "\n", Markdown(target), "\n",
                   "Server VmRSS, each row on a fresh server, read ", opt.settle,
                   " s after the connections opened:\n\n", Markdown(rss));
  std::printf("%s", tables.c_str());
  if (!opt.md_path.empty()) {
    std::ofstream(opt.md_path) << absl::StrFormat(
        "Hostile: idle TCP connections (connect, send nothing) and one in ten stalled inside a "
        "TLS handshake record, from 127.0.0.2..127.0.0.9, held open (reopened when the server "
        "closes one; *closed* counts those while measuring). *open*: how many the server's "
        "`gpu_tenancy_tls_connections` shows, not counting the healthy caller's, when measuring "
        "starts and ends; the ramp gives up after %d s. Healthy: one HTTPS keep-alive "
        "connection opened after them (%g s to settle), POSTing `/extender/filter` (7 names) "
        "back to back for %g s with a %d s timeout. Percentiles cover every attempt, a timeout "
        "at its %d s (a lower bound); *first request* includes the TCP and TLS handshakes.\n\n"
        "%s\n",
        static_cast<int>(kRampLimit.count()), opt.settle, opt.seconds, kTimeoutSeconds,
        kTimeoutSeconds, tables);
  }
  if (opt.smoke && smoke_failed) {
    std::fprintf(stderr, "connection_bench: a healthy request did not get 200\n");
    return 1;
  }
  return 0;
}
