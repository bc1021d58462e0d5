// One event loop of the listener (server/listener.h says what the listener promises).
// Each loop has its own thread, connections, deadlines and a ConnectionTable per port; the
// first also owns the listening sockets and deals new connections to every loop in turn. Loops
// share only what ListenerShared holds: options, routes, the worker pools and the counters. A
// connection lives and dies on the loop it was dealt to, so nothing a connection touches needs
// a lock.
// Internal to server/.
#ifndef GPU_TENANCY_SERVER_EVENT_LOOP_H_
#define GPU_TENANCY_SERVER_EVENT_LOOP_H_

#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/log.h"
#include "server/connection_table.h"
#include "server/listener.h"
#include "server/tls_socket.h"

namespace server {

enum class Port { kTls, kOperator };

// The completion token of every `co_await` on the loops.
inline constexpr auto kAwait = boost::asio::use_awaitable;

// What every loop shares about the operator port.
struct OperatorShared {
  OperatorPortOptions options;
  std::vector<OperatorRoute> routes;
  std::optional<boost::asio::thread_pool> handler;  // one thread: routes that are not quick
  std::atomic<size_t> waiting{0};                   // queued for or running on `handler`
  Listener::Stats stats;
};

// What every loop of one listener shares.
struct ListenerShared {
  Listener::Options options;
  SSL_CTX* ssl = nullptr;  // the listener's reference; each SSL holds its own
  std::vector<TlsRoute> routes;
  std::optional<boost::asio::thread_pool> workers;
  std::atomic<int64_t> in_pool{0};  // requests queued or running on a worker
  // Set by Drain() or Stop() before any loop hears of it, so every reply from then on says
  // Connection: close, whichever loop writes it.
  std::atomic<bool> stopping{false};
  Listener::Stats stats;
  std::unique_ptr<OperatorShared> operators;  // null without an operator port
};

// One connection, on the loop it was dealt to.
struct Connection {
  Connection(Port at, boost::asio::ip::tcp::socket s, uint64_t connection_id)
      : socket(std::move(s)),
        timer(socket.get_executor()),
        // A TLS connection's first state is its handshake; an operator one waits for a request.
        state(at == Port::kTls ? ConnectionState::kHandshake : ConnectionState::kIdle),
        port(at),
        id(connection_id) {}
  boost::asio::ip::tcp::socket& lowest() { return tls ? tls->socket() : socket; }

  boost::asio::ip::tcp::socket socket;  // moved into `tls` when the client's first byte arrives
  std::optional<TlsSocket> tls;
  boost::asio::steady_timer timer;  // the watchdog's
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  CloseReason on_deadline = CloseReason::kIdleTimeout;
  ConnectionState state;
  bool closed = false;
  const Port port;
  const uint64_t id;
};

// Internals both files of the loop use (event_loop.cc, event_loop_operator.cc).

TlsReply ErrorReply(int status, absl::string_view message);
// Beast's read errors: the reply they deserve, or nullopt for a connection that just ended.
std::optional<TlsReply> ReplyToReadError(const boost::system::error_code& ec,
                                         size_t max_header_bytes, size_t max_body_bytes);

inline absl::string_view View(boost::beast::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// What `call` returns, or `failed` (a 500) for an exception it let out, logged with the path.
template <typename Call, typename Reply = std::invoke_result_t<Call&>>
Reply Guarded(absl::string_view path, Call call, Reply failed) {
  try {
    return call();
  } catch (const std::exception& e) {
    common::Log(common::LogLevel::kError, "handler threw", {{"path", path}, {"error", e.what()}});
  } catch (...) {
    common::Log(common::LogLevel::kError, "handler threw", {{"path", path}});
  }
  return failed;
}

// Runs `work` on `pool` while the calling coroutine sleeps, and wakes it on `loop` with what
// `work` returned.
template <typename Work>
boost::asio::awaitable<std::invoke_result_t<Work&>> RunOn(boost::asio::thread_pool& pool,
                                                          boost::asio::io_context& loop,
                                                          Work work) {
  std::invoke_result_t<Work&> result;
  boost::asio::use_awaitable_t<> token;
  co_await boost::asio::async_initiate<boost::asio::use_awaitable_t<>, void()>(
      [&](auto wake) {
        boost::asio::post(pool, [&, wake = std::move(wake),
                                 guard = boost::asio::make_work_guard(loop)]() mutable {
          result = work();
          boost::asio::post(loop, std::move(wake));
        });
      },
      token);
  co_return result;
}

class EventLoop {
 public:
  EventLoop(ListenerShared& shared, ConnectionTable::Limits tls_limits,
            ConnectionTable::Limits operator_limits);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Binds `endpoint` for `port` and listens (the dealing loop only). Unavailable on failure.
  absl::Status Listen(Port port, const boost::asio::ip::tcp::endpoint& endpoint);
  int port(Port port) const;
  // Runs the loop on its thread. `deal_to` (for the loop that listens): the loops new
  // connections go to, in turn, itself included.
  void Start(std::vector<EventLoop*> deal_to);
  // Stops accepting, closes quiet connections and lets the rest finish their request (within
  // drain_timeout); Join() returns when that is done and the loop's thread has ended.
  void RequestStop();
  void Join();

 private:
  using ErrorCode = boost::system::error_code;
  template <typename T>
  using Task = boost::asio::awaitable<T>;

  Task<void> Accept(Port port);
  // Takes a connection dealt to this loop (on this loop's thread): admits it, or not.
  void Adopt(Port port, boost::asio::ip::tcp::socket socket);
  Task<void> Watch(std::shared_ptr<Connection> c);
  // Arms `within` (closing as `missed` past it) and waits for the client's first byte; false
  // when the connection is closed instead.
  Task<bool> FirstByte(Connection& c, std::chrono::milliseconds within, CloseReason missed);
  Task<void> Serve(std::shared_ptr<Connection> c);
  // The operator port's one request and reply (server/event_loop_operator.cc).
  Task<void> ServeOperator(std::shared_ptr<Connection> c);
  Task<OperatorReply> RunOnHandlerThread(const OperatorRoute& route, std::string query);
  // One request and its reply; false when the connection is closed (or to be).
  Task<bool> ServeOne(Connection& c, boost::beast::flat_buffer& buffer, size_t served);
  // Writes the reply (its head alone for a HEAD request); without keep-alive, lingers and
  // closes the connection as `closing`.
  Task<bool> Write(Connection& c, TlsReply reply, unsigned version, bool keep_alive,
                   CloseReason closing, bool head_only = false);
  // Answers `reply` (if any) and closes, letting the client read it first.
  Task<bool> Refuse(Connection& c, std::optional<TlsReply> reply, unsigned version,
                    bool head_only = false);
  Task<void> Linger(Connection& c, CloseReason reason);
  Task<TlsReply> RunOnWorker(const TlsRoute& route, std::string body);
  void BeginStop();

  void Arm(Connection& c, std::chrono::milliseconds in, CloseReason reason);
  void Disarm(Connection& c);
  void SetState(Connection& c, ConnectionState state);
  void Close(Connection& c, CloseReason reason);
  const TlsRoute* FindRoute(absl::string_view target) const;
  Listener::Stats& StatsOf(Port port);
  ConnectionTable& TableOf(Port port);
  boost::asio::ip::tcp::acceptor& AcceptorOf(Port port);

  ListenerShared& shared_;
  const Listener::Options& options_;
  boost::asio::io_context loop_{1};
  boost::asio::ip::tcp::acceptor acceptor_;           // the TLS port's
  boost::asio::ip::tcp::acceptor operator_acceptor_;  // the operator port's
  boost::asio::steady_timer drain_timer_;
  // This loop's thread only:
  ConnectionTable table_;  // the TLS port's
  ConnectionTable operator_table_;
  absl::flat_hash_map<uint64_t, Connection*> live_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::vector<EventLoop*> deal_to_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>
      keep_running_;
  std::thread thread_;
};

}  // namespace server

#endif  // GPU_TENANCY_SERVER_EVENT_LOOP_H_
