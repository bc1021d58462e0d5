// One event loop of the TLS listener (server/event_loop.h), driven through a real Listener over
// real TLS on 127.0.0.1: connections dealt to the loops in turn, each deadline closing its
// connection with the reason counted, the per-loop ConnectionTable limits (oldest idle or
// unfinished connection first, never one with a request in flight), handlers inline on the loop
// or on a worker, the 503 of a full worker pool, and the operator port on a loop of its own.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/listener.h"
#include "test/server/tls_listener_harness.h"

namespace server::listener_test {
namespace {

using TlsLoopTest = TlsListenerTest;

// A handler that answers with the thread it ran on, a number (JSON).
TlsRoute WhoAmI(const std::string& path, bool waits_on_io) {
  return {path,
          [](absl::string_view) {
            return TlsReply{
                200, absl::StrCat(std::hash<std::thread::id>()(std::this_thread::get_id())), {}};
          },
          waits_on_io};
}

// The thread that served `body` on `path` over a new connection.
std::string ServedOn(int port, const std::string& path, const std::string& body = "{}") {
  Client c(port);
  if (!c.Handshake() || !c.Send(Post(path, body))) return "";
  std::string response = c.ReadResponse();
  return Status(response) == 200 ? Body(response) : "";
}

TEST_F(TlsLoopTest, ConnectionsAreDealtToTheLoopsInTurn) {
  Listener::Options o;
  o.io_threads = 2;
  Start(o, {WhoAmI("/loop", /*waits_on_io=*/false)});
  // An inline handler runs on its connection's loop: the first and third connection share one.
  std::string first = ServedOn(port(), "/loop"), second = ServedOn(port(), "/loop"),
              third = ServedOn(port(), "/loop");
  ASSERT_NE(first, "");
  ASSERT_NE(second, "");
  EXPECT_NE(first, second);
  EXPECT_EQ(first, third);
}

// A plain GET on the operator port; the status line, or "" when nothing came within `wait`.
std::string ProbeStatus(int port, const std::string& path, milliseconds wait) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (fd >= 0) close(fd);
    return "";
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: probe\r\n\r\n");
  (void)send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string in;
  for (Clock::time_point until = Clock::now() + wait;
       Clock::now() < until && in.find("\r\n") == std::string::npos;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) continue;
    char buffer[512];
    ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    in.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return in.substr(0, in.find("\r\n"));
}

// The kubelet's probes must not wait for the TLS loops: under a connection flood on a pod held
// to a small CPU share, every TLS loop can be hours of work behind (the flood test saw half of
// the probes unanswered, those dealt to the busy loop). Here an inline handler holds each TLS
// loop outright, and the probes are answered all the same: the operator port has its own loop.
TEST_F(TlsLoopTest, TheOperatorPortIsServedWhileEveryTlsLoopIsBusy) {
  Listener::Options o;
  o.io_threads = 2;
  o.operator_port.emplace();
  o.operator_port->host = "127.0.0.1";
  o.operator_port->port = 0;
  const TlsRoute hold{"/hold",
                      [this](absl::string_view) {
                        gate_.Wait();  // on the loop: nothing else of it runs meanwhile
                        return TlsReply{200, "{}", {}};
                      },
                      /*waits_on_io=*/false};
  const OperatorRoute healthz{"/healthz",
                              [] {
                                return OperatorReply{200, "text/plain", "ok\n"};
                              },
                              /*quick=*/true};
  Start(o, {hold}, {healthz});
  std::vector<std::unique_ptr<Client>> holders;
  // All handshakes first: the loop that accepts is one of those about to be held.
  for (int i = 0; i < o.io_threads; ++i) {
    holders.push_back(std::make_unique<Client>(port()));
    ASSERT_TRUE(holders.back()->Handshake());
  }
  for (auto& c : holders) ASSERT_TRUE(c->Send(Post("/hold", "{}")));
  gate_.WaitForWaiters(o.io_threads);  // one connection per loop, each loop held
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ProbeStatus(listener_->operator_port(), "/healthz", milliseconds(3000)),
              "HTTP/1.1 200 OK")
        << "probe " << i;
  }
  gate_.Open();
  for (auto& c : holders) EXPECT_EQ(Status(c->ReadResponse()), 200);
}

TEST_F(TlsLoopTest, EachLoopHoldsAnEqualShareOfThePerAddressLimit) {
  Listener::Options o;
  o.io_threads = 2;
  o.max_connections_per_peer = 4;  // two per loop
  Start(o);
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<Client>(port(), "127.0.0.2"));
  ASSERT_TRUE(Eventually([&] { return Open(*listener_, ConnectionState::kHandshake) == 4; }));
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedPerPeer), 0u);
  // The fifth goes to the first loop, whose oldest is the first connection.
  Client fifth(port(), "127.0.0.2");
  EXPECT_TRUE(idle[0]->ClosedByServer(milliseconds(3000)));
  EXPECT_FALSE(idle[1]->ClosedByServer(milliseconds(200)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedPerPeer), 1u);
}

TEST_F(TlsLoopTest, EachDeadlineClosesItsConnectionAndIsCounted) {
  Listener::Options o;
  o.request_deadline = milliseconds(400);
  o.idle_timeout = milliseconds(400);
  o.reply_deadline = milliseconds(400);
  Start(o);
  big_ = 64u << 20;        // far more than the socket buffers hold
  Client silent(port());   // connects, sends nothing
  Client stalled(port());  // half a TLS record
  ASSERT_TRUE(stalled.Send(std::string("\x16\x03\x01\x02\x00", 5)));
  Client idle(port());
  ASSERT_TRUE(idle.Handshake());
  Client dripper(port());
  ASSERT_TRUE(dripper.Handshake());
  ASSERT_TRUE(dripper.Send("POST /echo HTTP/1.1\r\n"));
  Client reader(port());  // asks for a large reply and never reads it
  ASSERT_TRUE(reader.Handshake());
  ASSERT_TRUE(reader.Send(Post("/big", "{}")));
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    dripper.Send("X");
  }
  EXPECT_TRUE(silent.ClosedByServer(milliseconds(3000)));
  EXPECT_TRUE(stalled.ClosedByServer(milliseconds(3000)));
  EXPECT_TRUE(idle.ClosedByServer(milliseconds(3000)));
  EXPECT_TRUE(dripper.ClosedByServer(milliseconds(3000)));
  EXPECT_TRUE(Eventually([&] { return Closed(*listener_, CloseReason::kReplyDeadline) == 1; }));
  EXPECT_EQ(Closed(*listener_, CloseReason::kHandshakeDeadline), 2u);
  EXPECT_EQ(Closed(*listener_, CloseReason::kIdleTimeout), 1u);
  EXPECT_EQ(Closed(*listener_, CloseReason::kRequestDeadline), 1u);
  for (const auto& open : listener_->stats().open) EXPECT_EQ(open.load(), 0);
}

TEST_F(TlsLoopTest, ABodyThatDoesNotArriveInTimeIsCutOff) {
  Listener::Options o;
  o.request_deadline = milliseconds(300);
  Start(o);
  Client stalled_body(port());  // a whole head, then a body that never comes
  ASSERT_TRUE(stalled_body.Handshake());
  ASSERT_TRUE(
      stalled_body.Send(absl::StrCat("POST /echo HTTP/1.1\r\nContent-Type: application/json",
                                     "\r\nContent-Length: 100\r\n\r\n[1,")));
  Client continued(port());  // told to go on, then silent
  ASSERT_TRUE(continued.Handshake());
  ASSERT_TRUE(
      continued.Send(absl::StrCat("POST /echo HTTP/1.1\r\nContent-Type: application/json",
                                  "\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")));
  EXPECT_EQ(Status(continued.ReadResponse()), 100);
  EXPECT_TRUE(stalled_body.ClosedByServer(milliseconds(3000)));
  EXPECT_TRUE(continued.ClosedByServer(milliseconds(3000)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kRequestDeadline), 2u);
}

TEST_F(TlsLoopTest, AKeepAliveConnectionIsClosedAfterIdlingPastItsReply) {
  Listener::Options o;
  o.idle_timeout = milliseconds(300);
  Start(o);
  Client c(port());
  ASSERT_TRUE(c.Handshake());
  ASSERT_TRUE(c.Send(Post("/echo", "[1]")));
  std::string response = c.ReadResponse();
  EXPECT_EQ(Status(response), 200);
  EXPECT_EQ(response.find("Connection: close"), std::string::npos) << response;
  EXPECT_TRUE(c.ClosedByServer(milliseconds(3000)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kIdleTimeout), 1u);
  EXPECT_EQ(Closed(*listener_, CloseReason::kDone), 0u);
}

TEST_F(TlsLoopTest, AHandlerSlowerThanEveryDeadlineIsStillAnswered) {
  Listener::Options o;
  o.request_deadline = milliseconds(200);
  o.idle_timeout = milliseconds(200);
  o.reply_deadline = milliseconds(200);
  Start(o);
  Client busy(port());
  ASSERT_TRUE(busy.Handshake());
  ASSERT_TRUE(busy.Send(Post("/block", "{}")));
  gate_.WaitForWaiters(1);
  // A connection opened after the request went in flight reaches its deadline: by then the
  // request has been in flight for longer than any deadline.
  Client silent(port());
  ASSERT_TRUE(Eventually([&] { return Closed(*listener_, CloseReason::kHandshakeDeadline) == 1; }));
  gate_.Open();
  EXPECT_EQ(Status(busy.ReadResponse()), 200);
  EXPECT_EQ(Closed(*listener_, CloseReason::kRequestDeadline), 0u);
  EXPECT_EQ(Closed(*listener_, CloseReason::kIdleTimeout), 0u);
}

TEST_F(TlsLoopTest, KeepAliveEndsAfterTheConfiguredNumberOfRequests) {
  Listener::Options o;
  o.keep_alive_max_requests = 2;
  Start(o);
  Client c(port());
  ASSERT_TRUE(c.Handshake());
  ASSERT_TRUE(c.Send(Post("/echo", "[1]")));
  std::string first = c.ReadResponse();
  EXPECT_EQ(Status(first), 200);
  EXPECT_EQ(first.find("Connection: close"), std::string::npos) << first;
  ASSERT_TRUE(c.Send(Post("/echo", "[2]")));
  std::string second = c.ReadResponse();
  EXPECT_EQ(Status(second), 200);
  EXPECT_NE(second.find("Connection: close"), std::string::npos) << second;
  EXPECT_TRUE(c.ClosedByServer(milliseconds(3000)));
  // Counted when the server's linger ends (we keep our end open), not at its FIN.
  EXPECT_TRUE(Eventually([&] { return Closed(*listener_, CloseReason::kDone) == 1; }));
}

TEST_F(TlsLoopTest, AnAddressAtItsLimitLosesItsOldestIdleConnection) {
  Listener::Options o;
  o.io_threads = 1;  // one table sees every connection (two loops would hold a share each)
  o.max_connections_per_peer = 3;
  Start(o);
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(std::make_unique<Client>(port(), "127.0.0.2"));
  ASSERT_TRUE(Eventually([&] { return listener_->stats().open[0].load() == 3; }));
  Client newest(port(), "127.0.0.2");
  EXPECT_TRUE(idle[0]->ClosedByServer(milliseconds(3000)));
  EXPECT_FALSE(idle[1]->ClosedByServer(milliseconds(200)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedPerPeer), 1u);
  // Another address is not affected, and the newcomer is served.
  Client other(port(), "127.0.0.3");
  ASSERT_TRUE(other.Handshake());
  ASSERT_TRUE(other.Send(Post("/echo", "{}")));
  EXPECT_EQ(Status(other.ReadResponse()), 200);
  ASSERT_TRUE(newest.Handshake());
  ASSERT_TRUE(newest.Send(Post("/echo", "{}")));
  EXPECT_EQ(Status(newest.ReadResponse()), 200);
}

TEST_F(TlsLoopTest, AtTheTotalLimitTheBiggestHolderMakesRoom) {
  Listener::Options o;
  o.io_threads = 1;
  o.max_connections = 4;
  o.max_connections_per_peer = 4;
  Start(o);
  Client small(port(), "127.0.0.3");  // the oldest connection, but of a small holder
  std::vector<std::unique_ptr<Client>> big;
  for (int i = 0; i < 3; ++i) big.push_back(std::make_unique<Client>(port(), "127.0.0.2"));
  ASSERT_TRUE(Eventually([&] { return listener_->stats().open[0].load() == 4; }));
  Client newcomer(port(), "127.0.0.4");
  EXPECT_TRUE(big[0]->ClosedByServer(milliseconds(3000)));
  EXPECT_FALSE(small.ClosedByServer(milliseconds(200)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedTotal), 1u);
}

TEST_F(TlsLoopTest, RequestsInFlightAreNeverEvictedAndNewcomersAreRefusedInstead) {
  Listener::Options o;
  o.io_threads = 1;
  o.max_connections_per_peer = 1;
  Start(o);
  Client busy(port(), "127.0.0.2");
  ASSERT_TRUE(busy.Handshake());
  ASSERT_TRUE(busy.Send(Post("/block", "{}")));
  gate_.WaitForWaiters(1);
  Client refused(port(), "127.0.0.2");
  EXPECT_TRUE(refused.ClosedByServer(milliseconds(3000)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kRefused), 1u);
  gate_.Open();
  EXPECT_EQ(Status(busy.ReadResponse()), 200);
}

TEST_F(TlsLoopTest, AConnectionIsOrderedByItsLastRequestNotItsArrival) {
  Listener::Options o;
  o.io_threads = 1;
  o.max_connections_per_peer = 2;
  Start(o);
  Client served(port(), "127.0.0.2");  // the older connection, but it just had a request
  Client quiet(port(), "127.0.0.2");
  ASSERT_TRUE(Eventually([&] { return Open(*listener_, ConnectionState::kHandshake) == 2; }));
  ASSERT_TRUE(served.Handshake());
  ASSERT_TRUE(served.Send(Post("/echo", "{}")));
  EXPECT_EQ(Status(served.ReadResponse()), 200);
  ASSERT_TRUE(Eventually([&] { return Open(*listener_, ConnectionState::kIdle) == 1; }));
  Client newcomer(port(), "127.0.0.2");
  EXPECT_TRUE(quiet.ClosedByServer(milliseconds(3000)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedPerPeer), 1u);
  // Evictable again after its reply (not stuck busy), it is older than the newcomer: next,
  // counted apart as an idle keep-alive connection its caller might have been reusing.
  Client next(port(), "127.0.0.2");
  EXPECT_TRUE(served.ClosedByServer(milliseconds(3000)));
  EXPECT_FALSE(newcomer.ClosedByServer(milliseconds(200)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedPerPeer), 1u);
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedIdle), 1u);
}

TEST_F(TlsLoopTest, AConnectionStillSendingItsRequestCanBeEvicted) {
  Listener::Options o;
  o.io_threads = 1;
  o.max_connections_per_peer = 1;
  Start(o);
  Client dripping(port(), "127.0.0.2");
  ASSERT_TRUE(dripping.Handshake());
  ASSERT_TRUE(dripping.Send("POST /echo HTTP/1.1\r\n"));
  ASSERT_TRUE(Eventually([&] { return Open(*listener_, ConnectionState::kReading) == 1; }));
  Client newcomer(port(), "127.0.0.2");
  EXPECT_TRUE(dripping.ClosedByServer(milliseconds(3000)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedPerPeer), 1u);
  ASSERT_TRUE(newcomer.Handshake());
  ASSERT_TRUE(newcomer.Send(Post("/echo", "{}")));
  EXPECT_EQ(Status(newcomer.ReadResponse()), 200);
}

TEST_F(TlsLoopTest, AReplyBeingWrittenIsInFlightAndNotEvicted) {
  Listener::Options o;
  o.io_threads = 1;
  o.max_connections = 1;
  Start(o);
  big_ = 64u << 20;  // far more than the socket buffers hold
  Client reader(port(), "127.0.0.2");
  ASSERT_TRUE(reader.Handshake());
  ASSERT_TRUE(reader.Send(Post("/big", "{}")));
  ASSERT_TRUE(Eventually([&] { return Open(*listener_, ConnectionState::kWriting) == 1; }));
  Client refused(port(), "127.0.0.3");
  EXPECT_TRUE(refused.ClosedByServer(milliseconds(3000)));
  EXPECT_EQ(Closed(*listener_, CloseReason::kRefused), 1u);
  EXPECT_EQ(Closed(*listener_, CloseReason::kEvictedTotal), 0u);
  std::string response = reader.ReadResponse(milliseconds(20000));
  EXPECT_EQ(Status(response), 200);
  EXPECT_EQ(Body(response).size(), big_);
}

TEST_F(TlsLoopTest, SaturatedWorkersAnswer503AtOnce) {
  Listener::Options o;
  o.worker_threads = 1;
  o.max_queued = 0;
  Start(o);
  Client holder(port());
  ASSERT_TRUE(holder.Handshake());
  ASSERT_TRUE(holder.Send(Post("/block", "{}")));
  gate_.WaitForWaiters(1);
  Client late(port());
  ASSERT_TRUE(late.Handshake());
  ASSERT_TRUE(late.Send(Post("/echo", "{}")));
  std::string response = late.ReadResponse(milliseconds(2000));
  EXPECT_EQ(Status(response), 503) << response;
  // A pure handler of a small body runs on the loop, so it is served all the same; a larger
  // body goes to the workers like any other request.
  ASSERT_TRUE(late.Send(Post("/pure", "[1]")));
  EXPECT_EQ(Status(late.ReadResponse(milliseconds(2000))), 200);
  ASSERT_TRUE(late.Send(Post("/pure", std::string(o.inline_body_bytes + 1, ' '))));
  EXPECT_EQ(Status(late.ReadResponse(milliseconds(2000))), 503);
  gate_.Open();
  EXPECT_EQ(Status(holder.ReadResponse()), 200);
  // The 503 kept the connection: it is served once a worker is free.
  ASSERT_TRUE(late.Send(Post("/echo", "{}")));
  EXPECT_EQ(Status(late.ReadResponse()), 200);
  EXPECT_EQ(listener_->stats().rejected_busy.load(), 2u);
}

TEST_F(TlsLoopTest, PureHandlersOfSmallBodiesRunOnTheLoopAndTheRestOnAWorker) {
  Listener::Options o;
  o.io_threads = 1;
  o.worker_threads = 1;
  o.inline_body_bytes = 16;
  Start(o, {WhoAmI("/loop", /*waits_on_io=*/false), WhoAmI("/io", /*waits_on_io=*/true)});
  std::string at_limit = ServedOn(port(), "/loop", std::string(16, ' '));
  std::string over_limit = ServedOn(port(), "/loop", std::string(17, ' '));
  std::string waits_on_io = ServedOn(port(), "/io", "{}");
  ASSERT_NE(at_limit, "");
  ASSERT_NE(over_limit, "");
  EXPECT_NE(at_limit, over_limit);
  EXPECT_EQ(over_limit, waits_on_io);  // the one worker
  EXPECT_EQ(ServedOn(port(), "/loop", "{}"), at_limit);
}

TEST_F(TlsLoopTest, ARouteThatWaitsOnlySometimesIsTriedOnTheLoopFirst) {
  Listener::Options o;
  o.io_threads = 1;
  o.worker_threads = 1;
  o.inline_body_bytes = 64;
  TlsRoute sometimes = WhoAmI("/sometimes", /*waits_on_io=*/true);
  const TlsRoute on_loop = WhoAmI("/loop", /*waits_on_io=*/false);
  sometimes.on_loop_first =
      [answer = on_loop.handler](absl::string_view body) -> std::optional<TlsReply> {
    if (body == "\"call out\"") return std::nullopt;
    return answer(body);
  };
  TlsRoute throws = WhoAmI("/throws", /*waits_on_io=*/true);
  throws.on_loop_first = [](absl::string_view) -> std::optional<TlsReply> {
    throw std::runtime_error("x");
  };
  Start(o, {on_loop, WhoAmI("/io", /*waits_on_io=*/true), sometimes, throws});
  const std::string loop = ServedOn(port(), "/loop"), worker = ServedOn(port(), "/io");
  ASSERT_NE(loop, "");
  ASSERT_NE(worker, "");
  ASSERT_NE(loop, worker);
  EXPECT_EQ(ServedOn(port(), "/sometimes", "{}"), loop);
  EXPECT_EQ(ServedOn(port(), "/sometimes", "\"call out\""), worker);  // declined: the handler
  // A body over inline_body_bytes is never tried on the loop.
  EXPECT_EQ(ServedOn(port(), "/sometimes", absl::StrCat("\"", std::string(80, 'x'), "\"")), worker);
  // An attempt that throws is a 500, like a handler that does, and the loop goes on.
  Client c(port());
  ASSERT_TRUE(c.Handshake());
  ASSERT_TRUE(c.Send(Post("/throws", "{}")));
  EXPECT_EQ(Status(c.ReadResponse()), 500);
  EXPECT_EQ(ServedOn(port(), "/loop"), loop);
}

TEST_F(TlsLoopTest, AnInlineHandlerThatThrowsGets500AndTheLoopGoesOn) {
  Start({}, {{"/pure-throw", [](absl::string_view) -> TlsReply { throw std::runtime_error("x"); },
              /*waits_on_io=*/false}});
  Client c(port());
  ASSERT_TRUE(c.Handshake());
  ASSERT_TRUE(c.Send(Post("/pure-throw", "{}")));
  std::string response = c.ReadResponse();
  EXPECT_EQ(Status(response), 500);
  EXPECT_NE(response.find("internal error"), std::string::npos) << response;
  ASSERT_TRUE(c.Send(Post("/pure", "[7]")));
  EXPECT_EQ(Body(c.ReadResponse()), "[7]");
}

TEST_F(TlsLoopTest, QueuedRequestsCountTowardsTheBusyLimit) {
  Listener::Options o;
  o.worker_threads = 1;
  o.max_queued = 1;
  Start(o);
  Client running(port()), queued(port()), late(port());
  ASSERT_TRUE(running.Handshake() && queued.Handshake() && late.Handshake());
  ASSERT_TRUE(running.Send(Post("/block", "{}")));
  gate_.WaitForWaiters(1);
  ASSERT_TRUE(queued.Send(Post("/block", "{}")));
  ASSERT_TRUE(Eventually([&] { return listener_->stats().queued.load() == 1; }));
  ASSERT_TRUE(late.Send(Post("/echo", "{}")));
  std::string response = late.ReadResponse();
  EXPECT_EQ(Status(response), 503) << response;
  EXPECT_NE(response.find("server busy"), std::string::npos) << response;
  EXPECT_EQ(listener_->stats().rejected_busy.load(), 1u);
  gate_.Open();
  EXPECT_EQ(Status(running.ReadResponse()), 200);
  EXPECT_EQ(Status(queued.ReadResponse()), 200);
  EXPECT_EQ(listener_->stats().queued.load(), 0);
}

}  // namespace
}  // namespace server::listener_test
