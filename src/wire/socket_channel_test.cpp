#include "socket_channel.h"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "errors.h"

namespace dcp {
namespace {

std::pair<SocketChannel, SocketChannel> channel_pair() {
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  return {SocketChannel(fds[0]), SocketChannel(fds[1])};
}

TEST_CASE("LineBuffer splits a byte stream into lines, whatever the chunking") {
  LineBuffer buf;
  buf.append("{\"a\":1}\n{\"b\"");
  CHECK(buf.next_line() == std::optional<std::string>("{\"a\":1}"));
  CHECK_FALSE(buf.next_line().has_value());  // the second line is incomplete
  buf.append(":2}\n\n{\"c\":3}\n");
  CHECK(buf.next_line() == std::optional<std::string>("{\"b\":2}"));
  CHECK(buf.next_line() == std::optional<std::string>(""));
  CHECK(buf.next_line() == std::optional<std::string>("{\"c\":3}"));
  CHECK_FALSE(buf.next_line().has_value());
  CHECK(buf.buffered_bytes() == 0);
}

TEST_CASE("LineBuffer refuses an endless unterminated line") {
  LineBuffer buf;
  std::string chunk(1 << 20, 'x');
  bool threw = false;
  try {
    for (size_t i = 0; i <= (LineBuffer::kMaxLineBytes >> 20) + 1; ++i) buf.append(chunk);
  } catch (const HarnessError&) {
    threw = true;
  }
  CHECK(threw);
}

TEST_CASE("SocketChannel carries JSON messages both ways, one per line") {
  auto [a, b] = channel_pair();
  a.send({{"type", "hello"}, {"rank", 3}});
  a.send({{"type", "gather"}, {"data", std::string(200000, 'f')}});  // larger than one read
  auto m1 = b.receive(2.0);
  REQUIRE(m1.has_value());
  CHECK((*m1)["type"] == "hello");
  CHECK((*m1)["rank"] == 3);
  auto m2 = b.receive(2.0);
  REQUIRE(m2.has_value());
  CHECK((*m2)["data"].get<std::string>().size() == 200000);
  b.send({{"type", "shutdown"}});
  auto m3 = a.receive(2.0);
  REQUIRE(m3.has_value());
  CHECK((*m3)["type"] == "shutdown");
}

TEST_CASE("SocketChannel::receive times out, and reports a closed peer") {
  auto [a, b] = channel_pair();
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(b.receive(0.2).has_value());
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(waited >= 0.15);
  CHECK(waited < 2.0);
  a.send({{"type", "last"}});
  a.close();
  auto last = b.receive(1.0);  // buffered messages survive the hang-up
  REQUIRE(last.has_value());
  CHECK((*last)["type"] == "last");
  CHECK_THROWS_AS(b.receive(1.0), HarnessError);
}

TEST_CASE("SocketChannel::send to a closed peer throws instead of raising SIGPIPE") {
  auto [a, b] = channel_pair();
  b.close();
  bool threw = false;
  try {
    for (int i = 0; i < 100; ++i) a.send({{"type", "x"}, {"pad", std::string(4096, 'y')}}, 0.5);
  } catch (const HarnessError&) {
    threw = true;
  }
  CHECK(threw);
}

TEST_CASE("A line that is not a JSON object is a harness error") {
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  SocketChannel b(fds[1]);
  const char junk[] = "not json\n";
  REQUIRE(write(fds[0], junk, sizeof(junk) - 1) == static_cast<ssize_t>(sizeof(junk) - 1));
  CHECK_THROWS_AS(b.receive(1.0), HarnessError);
  close(fds[0]);
}

TEST_CASE("hex payloads round-trip every byte value and reject bad digits") {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  const std::string hex = hex_encode(all);
  CHECK(hex.size() == 512);
  CHECK(hex.substr(0, 6) == "000102");
  CHECK(hex_decode(hex) == all);
  CHECK(hex_decode("") == "");
  CHECK_THROWS_AS(hex_decode("abc"), HarnessError);
  CHECK_THROWS_AS(hex_decode("zz"), HarnessError);
}

TEST_CASE("UnixListener accepts a connection and unlinks its path") {
  const std::string path = "/tmp/dcp-check-test-sock-" + std::to_string(getpid());
  {
    UnixListener listener(path);
    SocketChannel client = SocketChannel::connect(path, 2.0);
    std::optional<SocketChannel> server;
    for (int i = 0; i < 100 && !server; ++i) {
      server = listener.accept_now();
      if (!server) usleep(10000);
    }
    REQUIRE(server.has_value());
    client.send({{"type", "hello"}});
    auto m = server->receive(2.0);
    REQUIRE(m.has_value());
    CHECK((*m)["type"] == "hello");
    CHECK(access(path.c_str(), F_OK) == 0);
  }
  CHECK(access(path.c_str(), F_OK) != 0);
  CHECK_THROWS_AS(SocketChannel::connect(path, 0.1), HarnessError);
}

}  // namespace
}  // namespace dcp
