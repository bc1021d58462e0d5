#include "server/operator_listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/extender_codec.h"
#include "common/log.h"

namespace server {

using Clock = std::chrono::steady_clock;

struct OperatorListener::Connection {
  enum class Stage { kReading, kWaiting, kWriting };
  int fd = -1;
  uint64_t id = 0;  // accept order: the oldest has the lowest
  Stage stage = Stage::kReading;
  Clock::time_point deadline;
  std::string in;
  size_t scanned = 0;  // `in` holds no request-head end before this offset
  std::string out;
  size_t sent = 0;
  bool done = false;  // close at the end of this turn
};

namespace {

constexpr char kJson[] = "application/json";
constexpr int kListenBacklog = 128;
constexpr size_t kAcceptsPerTurn = 64;  // so a connection flood cannot starve the others

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

OperatorReply JsonError(int status, absl::string_view message) {
  return {status, kJson, common::EncodeHttpError(message)};
}

std::string Serialize(const OperatorReply& reply, bool head_only) {
  std::string out = absl::StrCat("HTTP/1.1 ", reply.status, " ", ReasonPhrase(reply.status),
                                 "\r\nContent-Type: ", reply.content_type,
                                 "\r\nContent-Length: ", reply.body.size(),
                                 reply.status == 405 ? "\r\nAllow: GET, HEAD" : "",
                                 // Every reply here is live state or a page tied to this binary's
                                 // endpoints: never cached, and never sniffed as another type.
                                 "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff",
                                 "\r\nConnection: close\r\n\r\n");
  if (!head_only) out += reply.body;
  return out;
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

OperatorReply Call(const OperatorRoute& route, absl::string_view query) {
  try {
    if (route.query_handler) return route.query_handler(query);
    return route.handler();
  } catch (const std::exception& e) {
    common::Log(common::LogLevel::kError, "handler threw",
                {{"path", route.path}, {"error", e.what()}});
    return JsonError(500, "internal error");
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<OperatorListener>> OperatorListener::Bind(
    const std::string& host, int port, std::vector<OperatorRoute> routes, Options options) {
  const std::string where = absl::StrCat(host, ":", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": unknown address"));
  }
  int fd = -1;
  int last_errno = 0;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, kListenBacklog) != 0) {
      last_errno = errno;
      CloseFd(fd);
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", where, ": ", std::strerror(last_errno)));
  }
  std::unique_ptr<OperatorListener> l(new OperatorListener());
  l->listen_fd_ = fd;
  l->routes_ = std::move(routes);
  l->options_ = options;
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  l->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  l->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (l->wake_fd_ < 0) {
    return absl::UnavailableError(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  return l;
}

OperatorListener::~OperatorListener() {
  Stop();
  CloseFd(listen_fd_);
  CloseFd(wake_fd_);
}

void OperatorListener::Start() {
  thread_ = std::thread([this] { Run(); });
  handler_thread_ = std::thread([this] { RunHandlers(); });
}

void OperatorListener::Wake() {
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void OperatorListener::Stop() {
  if (stopping_.exchange(true)) return;
  {
    // Under the lock, so the handler thread cannot miss the flag between its check and wait.
    common::MutexLock lock(&jobs_mu_);
  }
  jobs_ready_.NotifyAll();
  if (wake_fd_ >= 0) Wake();
  if (thread_.joinable()) thread_.join();
  if (handler_thread_.joinable()) handler_thread_.join();
}

bool OperatorListener::HandlerHasWork() const { return stopping_.load() || !queued_.empty(); }

void OperatorListener::RunHandlers() {
  while (true) {
    Job job;
    {
      common::MutexLock lock(&jobs_mu_);
      while (!HandlerHasWork()) jobs_ready_.Wait(&jobs_mu_);
      if (stopping_.load()) return;
      job = std::move(queued_.front());
      queued_.pop_front();
    }
    job.reply = Serialize(Call(*job.route, job.query), job.head_only);
    {
      common::MutexLock lock(&jobs_mu_);
      done_.push_back(std::move(job));
    }
    Wake();
  }
}

void OperatorListener::Answer(Connection& c, size_t head_end) {
  absl::string_view head(c.in.data(), head_end);
  absl::string_view line = head.substr(0, head.find("\r\n"));
  // METHOD SP request-target SP HTTP-version (RFC 9112 section 3)
  size_t first = line.find(' ');
  size_t last = line.rfind(' ');
  OperatorReply reply;
  bool head_only = false;
  if (first == absl::string_view::npos || first == last ||
      !absl::StartsWith(line.substr(last + 1), "HTTP/1.")) {
    reply = JsonError(400, "malformed request line");
  } else {
    absl::string_view method = line.substr(0, first);
    absl::string_view target = line.substr(first + 1, last - first - 1);
    absl::string_view query;
    if (size_t mark = target.find('?'); mark != absl::string_view::npos) {
      query = target.substr(mark + 1);
      target = target.substr(0, mark);
    }
    head_only = method == "HEAD";
    if (method != "GET" && method != "HEAD") {
      reply = JsonError(405, "method not allowed");
    } else {
      auto route = std::find_if(routes_.begin(), routes_.end(),
                                [&](const OperatorRoute& r) { return r.path == target; });
      if (route == routes_.end()) {
        reply = JsonError(404, "no such route");
      } else if (route->quick) {
        reply = Call(*route, query);
      } else if (in_handler_ >= options_.max_queued) {
        reply = JsonError(503, "too many requests waiting; retry later");
      } else {
        {
          common::MutexLock lock(&jobs_mu_);
          queued_.push_back(Job{c.id, &*route, head_only, std::string(query), {}});
        }
        jobs_ready_.NotifyOne();
        ++in_handler_;
        c.stage = Connection::Stage::kWaiting;
        return;
      }
    }
  }
  c.out = Serialize(reply, head_only);
  c.stage = Connection::Stage::kWriting;
}

void OperatorListener::Run() {
  using Stage = Connection::Stage;
  std::vector<Connection> connections;
  std::vector<pollfd> fds;
  std::vector<Job> finished;
  uint64_t next_id = 0;
  char buffer[8192];
  auto close_done = [&connections] {
    for (Connection& c : connections) {
      if (c.done) CloseFd(c.fd);
    }
    connections.erase(std::remove_if(connections.begin(), connections.end(),
                                     [](const Connection& c) { return c.done; }),
                      connections.end());
  };
  while (true) {
    const bool stopping = stopping_.load();
    if (stopping) {
      // Requests not yet answered are dropped; replies being written may finish.
      for (Connection& c : connections) c.done = c.done || c.stage != Stage::kWriting;
      close_done();
      if (connections.empty()) return;
    }
    Clock::time_point now = Clock::now();
    Clock::time_point next = now + std::chrono::seconds(1);
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({stopping ? -1 : listen_fd_, POLLIN, 0});  // poll ignores negative fds
    for (const Connection& c : connections) {
      // A connection waiting for its handler is polled for nothing but hang-ups and errors.
      short events = c.stage == Stage::kReading ? POLLIN : c.stage == Stage::kWriting ? POLLOUT : 0;
      fds.push_back({c.fd, events, 0});
      next = std::min(next, c.deadline);
    }
    int wait_millis = static_cast<int>(
        std::chrono::ceil<std::chrono::milliseconds>(std::max(next - now, Clock::duration(0)))
            .count());
    if (poll(fds.data(), fds.size(), wait_millis) < 0 && errno != EINTR) {
      common::Log(common::LogLevel::kError, "operator listener poll failed",
                  {{"error", std::strerror(errno)}});
      return;
    }
    now = Clock::now();
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      (void)!read(wake_fd_, &count, sizeof(count));
    }
    {
      common::MutexLock lock(&jobs_mu_);
      finished.swap(done_);
    }
    for (Job& job : finished) {
      --in_handler_;
      // The connection may be gone already (its deadline passed, or the caller hung up).
      for (Connection& c : connections) {
        if (c.id == job.connection && c.stage == Stage::kWaiting) {
          c.out = std::move(job.reply);
          c.stage = Stage::kWriting;
          c.deadline = now + options_.reply_deadline;
          break;
        }
      }
    }
    finished.clear();

    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = connections[i];
      const short events = fds[i + 2].revents;
      if (c.stage == Stage::kReading && events != 0) {
        bool peer_closed = false;
        while (c.in.size() <= options_.max_request_head) {
          ssize_t n = recv(c.fd, buffer, sizeof(buffer), 0);
          if (n > 0) {
            c.in.append(buffer, static_cast<size_t>(n));
          } else {
            peer_closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
            break;
          }
        }
        // Resume the search where the last one stopped, so a request fed in small pieces
        // is not rescanned from the start each time.
        size_t end = c.in.find("\r\n\r\n", c.scanned);
        c.scanned = c.in.size() < 3 ? 0 : c.in.size() - 3;
        if (end != std::string::npos && end + 4 <= options_.max_request_head) {
          Answer(c, end + 4);
        } else if (c.in.size() > options_.max_request_head) {
          c.out = Serialize(JsonError(431, "request head too large"), false);
          c.stage = Stage::kWriting;
        } else if (peer_closed) {
          c.done = true;
        }
        // From now, not from the poll: a quick handler has just run. A request waiting for the
        // handler thread has no deadline: that time is ours, not the client's, and the queue
        // is bounded.
        if (c.stage == Stage::kWriting) c.deadline = Clock::now() + options_.reply_deadline;
        if (c.stage == Stage::kWaiting) c.deadline = Clock::time_point::max();
      } else if (c.stage == Stage::kWaiting && (events & (POLLHUP | POLLERR))) {
        c.done = true;  // the caller is gone; the handler's reply will be dropped
      }
      if (c.stage == Stage::kWriting && !c.done) {
        while (c.sent < c.out.size()) {
          ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
          if (n > 0) {
            c.sent += static_cast<size_t>(n);
          } else {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) c.done = true;
            break;
          }
        }
        if (c.sent == c.out.size()) c.done = true;
      }
      if (!c.done && c.deadline <= now) {
        expired_.fetch_add(1);
        c.done = true;
      }
    }
    close_done();

    if (fds[1].revents & POLLIN) {
      for (size_t n = 0; n < kAcceptsPerTurn; ++n) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (connections.size() >= options_.max_connections) {
          // Room for the newcomer at the expense of the oldest client that has still not
          // finished its request: a probe sends its request at once, a hoarder never does.
          auto oldest = connections.end();
          for (auto it = connections.begin(); it != connections.end(); ++it) {
            if (it->stage == Stage::kReading &&
                (oldest == connections.end() || it->id < oldest->id)) {
              oldest = it;
            }
          }
          if (oldest == connections.end()) {
            close(fd);
            continue;
          }
          CloseFd(oldest->fd);
          connections.erase(oldest);
        }
        Connection c;
        c.fd = fd;
        c.id = next_id++;
        c.deadline = now + options_.request_deadline;
        connections.push_back(std::move(c));
      }
    }
  }
}

}  // namespace server
