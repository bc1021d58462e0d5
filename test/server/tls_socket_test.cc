// server::TlsSocket on its own, over a loopback TCP pair: once its socket is closed it never
// hands the descriptor number to OpenSSL again, whatever operation starts or resumes after.
#include "server/tls_socket.h"

#include <openssl/ssl.h>

#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <string>

#include "gtest/gtest.h"

namespace server {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using ErrorCode = boost::system::error_code;

// The listener closes a connection (a deadline, an eviction) while one of its operations may
// already have been woken and queued to resume; the descriptor number is free at once, and the
// listener's accept takes the lowest free one for the next connection. An operation that then
// resumed into OpenSSL would read that connection's first bytes (or write into it): its caller
// would wait for a reply that never comes.
TEST(TlsSocketTest, AClosedSocketsDescriptorIsNeverReadAgain) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  tcp::socket first_client(io);
  first_client.connect(acceptor.local_endpoint());
  tcp::socket first(io);
  acceptor.accept(first);
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  ASSERT_NE(ctx, nullptr);
  {
    TlsSocket tls(std::move(first), ctx);
    const int descriptor = tls.socket().native_handle();
    tcp::socket next_client(io);  // its own descriptor is taken before the close
    next_client.connect(acceptor.local_endpoint());
    ErrorCode ec;
    tls.socket().close(ec);
    tcp::socket next(io);
    acceptor.accept(next);
    ASSERT_EQ(next.native_handle(), descriptor) << "the next connection got another number";
    const std::string hello = "the next connection's first bytes";
    asio::write(next_client, asio::buffer(hello));

    std::array<char, 64> into{};
    ErrorCode read_error;
    bool completed = false;
    tls.async_read_some(asio::buffer(into), [&](ErrorCode e, size_t) {
      read_error = e;
      completed = true;
    });
    io.run();
    EXPECT_TRUE(completed);
    EXPECT_TRUE(read_error) << "a read on a closed socket succeeded";

    std::array<char, 64> got{};
    next.non_blocking(true, ec);  // loopback: the bytes are there already, unless taken
    size_t n = next.read_some(asio::buffer(got), ec);
    EXPECT_EQ(std::string(got.data(), n), hello) << "the closed socket's read took them";
  }
  SSL_CTX_free(ctx);
}

}  // namespace
}  // namespace server
