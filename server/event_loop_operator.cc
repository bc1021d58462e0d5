// The operator port's side of the event loop: one GET or HEAD per connection, answered on the
// loop (quick routes) or on the port's handler thread (server/listener.h says what it promises).
#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>

#include "server/event_loop.h"
#include "wire/extender_codec.h"

namespace server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

namespace {

OperatorReply CallOperatorRoute(const OperatorRoute& route, absl::string_view query) {
  return Guarded(
      route.path,
      [&] { return route.query_handler ? route.query_handler(query) : route.handler(); },
      OperatorReply{500, kJsonContentType, wire::EncodeHttpError("internal error")});
}

}  // namespace

// GCC 12 pairs Asio's coroutine-frame allocation (aligned_alloc, when inlined here) with the
// frame's class operator delete and warns, though that delete frees with free(): a false
// positive, for the coroutines below.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
EventLoop::Task<void> EventLoop::ServeOperator(std::shared_ptr<Connection> c) {
  const OperatorPortOptions& o = shared_.operators->options;
  // One request per connection, its head complete within request_deadline of accept.
  if (!co_await FirstByte(*c, o.request_deadline, CloseReason::kRequestDeadline)) co_return;
  // Begun: now the newest, so a full table gives up clients that never sent a byte first.
  SetState(*c, ConnectionState::kReading);
  operator_table_.MarkEvictable(c->id);
  ErrorCode ec;
  beast::flat_buffer buffer;
  http::request_parser<http::empty_body> parser;
  parser.header_limit(static_cast<uint32_t>(o.max_header_bytes));
  co_await http::async_read_header(c->socket, buffer, parser, asio::redirect_error(kAwait, ec));
  if (c->closed) co_return;
  if (ec) {
    co_await Refuse(*c, ReplyToReadError(ec, o.max_header_bytes, 0), 11);
    co_return;
  }
  const http::request<http::empty_body>& req = parser.get();
  const bool head_only = req.method() == http::verb::head;
  absl::string_view target = View(req.target());
  absl::string_view path = target.substr(0, target.find('?'));
  absl::string_view query = target.substr(std::min(target.size(), path.size() + 1));
  auto route = std::find_if(shared_.operators->routes.begin(), shared_.operators->routes.end(),
                            [&](const OperatorRoute& r) { return r.path == path; });
  std::optional<TlsReply> refusal;
  if (req.version() != 10 && req.version() != 11) {
    refusal = ErrorReply(400, "unsupported HTTP version");
  } else if (req.method() != http::verb::get && !head_only) {
    refusal = ErrorReply(405, "method not allowed");
    refusal->headers.emplace_back("Allow", "GET, HEAD");
  } else if (route == shared_.operators->routes.end()) {
    refusal = ErrorReply(404, "no such route");
  } else if (!parser.is_done()) {
    refusal = ErrorReply(400, "operator routes take no request body");
  }
  // Replies are HTTP/1.1 whatever the request's version (RFC 9110 section 2.5), so each one
  // can say Connection: close.
  if (refusal) {
    co_await Refuse(*c, std::move(refusal), 11, head_only);
    co_return;
  }
  operator_table_.MarkBusy(c->id);
  SetState(*c, ConnectionState::kInFlight);
  Disarm(*c);  // our time, not the client's; the handler queue is bounded
  OperatorReply reply;
  if (route->quick) {
    reply = CallOperatorRoute(*route, query);
  } else if (shared_.operators->waiting.load() >= o.max_queued) {
    shared_.operators->stats.rejected_busy.fetch_add(1, std::memory_order_relaxed);
    reply = {503, kJsonContentType,
             wire::EncodeHttpError("too many requests waiting; retry later")};
  } else {
    reply = co_await RunOnHandlerThread(*route, std::string(query));
  }
  if (c->closed) co_return;
  TlsReply out{reply.status, std::move(reply.body), {{"Content-Type", reply.content_type}}};
  co_await Write(*c, std::move(out), 11, /*keep_alive=*/false, CloseReason::kDone, head_only);
}

EventLoop::Task<OperatorReply> EventLoop::RunOnHandlerThread(const OperatorRoute& route,
                                                             std::string query) {
  OperatorShared& port = *shared_.operators;
  port.waiting.fetch_add(1);
  port.stats.queued.fetch_add(1, std::memory_order_relaxed);
  co_return co_await RunOn(*port.handler, loop_, [&] {
    port.stats.queued.fetch_sub(1, std::memory_order_relaxed);
    OperatorReply reply = CallOperatorRoute(route, query);
    port.waiting.fetch_sub(1);
    return reply;
  });
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace server
