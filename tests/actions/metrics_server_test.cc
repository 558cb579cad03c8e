// The metrics endpoint's connection handling, over real loopback sockets: idle or slow clients
// must not stall a scrape, a client that half-closes after its request is answered, and
// connections beyond the cap are turned away without harm to the server.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "trainscope/prometheus.h"

namespace trainscope {
namespace {

using Clock = std::chrono::steady_clock;

// A connected loopback client socket whose reads give up after `recv_timeout` (so a stalled
// server fails the test instead of hanging it); -1 when it cannot connect.
int Connect(int port, std::chrono::seconds recv_timeout = std::chrono::seconds(5)) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(recv_timeout.count());
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Everything the peer sends until it closes; `*error` is the errno that ended the read early
// (EAGAIN: the receive time-out ran out), 0 on a clean close.
std::string ReadToClose(int fd, int* error = nullptr) {
  std::string out;
  char buf[4096];
  if (error) *error = 0;
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && error) *error = errno;
    return out;
  }
}

constexpr char kGet[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

// A full GET /metrics on a fresh connection: the raw response ("" when none came), and how long
// it took in `*ms`.
std::string Scrape(int port, double* ms = nullptr, bool half_close = false) {
  const auto start = Clock::now();
  int fd = Connect(port);
  if (fd < 0) return "";
  std::string response;
  if (SendAll(fd, kGet)) {
    if (half_close) ::shutdown(fd, SHUT_WR);
    response = ReadToClose(fd);
  }
  ::close(fd);
  if (ms) *ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return response;
}

// The body of a complete 200 response whose Content-Length matches; "" otherwise.
std::string OkBody(const std::string& response) {
  if (response.rfind("HTTP/1.1 200", 0) != 0) return "";
  size_t end = response.find("\r\n\r\n");
  if (end == std::string::npos) return "";
  std::string body = response.substr(end + 4);
  size_t cl = response.find("Content-Length: ");
  if (cl == std::string::npos || cl > end) return "";
  if (std::stoul(response.substr(cl + 16)) != body.size()) return "";
  return body;
}

TEST(MetricsServerTest, IdleConnectionsDoNotDelayAScrape) {
  PrometheusExporter exporter("run");
  auto port = exporter.Serve();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) {
    int fd = Connect(*port);
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  // One idle client has sent half a request line: it must not hold the server either.
  ASSERT_TRUE(SendAll(idle[0], "GET /met"));
  double ms = 0;
  std::string body = OkBody(Scrape(*port, &ms));
  std::printf("GET with %zu idle connections held open: %.1f ms\n", idle.size(), ms);
  EXPECT_NE(body.find("trainscope_info{trial=\"run\""), std::string::npos)
      << "no complete answer within the client's 5 s time-out while idle connections are open";
  for (int fd : idle) ::close(fd);
}

TEST(MetricsServerTest, HalfClosedClientGetsTheWholeAnswer) {
  PrometheusExporter exporter("run");
  exporter.RecordLoss(0.5, 12);
  auto port = exporter.Serve();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  std::string body = OkBody(Scrape(*port, nullptr, /*half_close=*/true));
  EXPECT_NE(body.find("trainscope_loss_step 12\n"), std::string::npos) << body;
  EXPECT_NE(body.find("trainscope_scrapes_total 1\n"), std::string::npos) << body;
}

TEST(MetricsServerTest, ConnectionsBeyondTheCapAreTurnedAwayCleanly) {
  PrometheusExporter exporter("run");
  PrometheusExporter::ServeLimits limits;
  limits.max_connections = 4;
  auto port = exporter.Serve("127.0.0.1", 0, limits);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    int fd = Connect(*port);
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  // Let the server take the four in before the fifth arrives.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string refused = Scrape(*port);
  EXPECT_EQ(refused.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << refused;
  for (int fd : idle) ::close(fd);
  // Once the idle ones are gone (the server notices on its next poll), scrapes are answered.
  std::string body;
  for (int attempt = 0; attempt < 50 && body.empty(); ++attempt) {
    body = OkBody(Scrape(*port));
    if (body.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(body.find("trainscope_info{"), std::string::npos);
}

TEST(MetricsServerTest, SlowClientIsDroppedWithoutHoldingUpOthers) {
  PrometheusExporter exporter("run");
  PrometheusExporter::ServeLimits limits;
  limits.request_timeout = std::chrono::milliseconds(1000);
  auto port = exporter.Serve("127.0.0.1", 0, limits);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  int slow = Connect(*port);
  ASSERT_GE(slow, 0);
  // A byte every 200 ms: the header would take 8 s, the server allows 1 s.
  const std::string request = kGet;
  const auto start = Clock::now();
  bool still_sending = true;
  size_t i = 0;
  for (; i < 10 && still_sending; ++i) {
    still_sending = SendAll(slow, request.substr(i, 1));
    if (i == 2) {
      double ms = 0;
      std::string body = OkBody(Scrape(*port, &ms));
      std::printf("GET beside a byte-a-second client: %.1f ms\n", ms);
      EXPECT_NE(body.find("trainscope_info{"), std::string::npos);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  int error = 0;
  std::string got = ReadToClose(slow, &error);
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("slow client dropped after %.2f s\n", s);
  ::close(slow);
  EXPECT_TRUE(got.empty()) << "the slow client got an answer to half a request: " << got;
  EXPECT_NE(error, EAGAIN) << "the slow client was still connected after 5 s more";
  // And the server goes on serving.
  EXPECT_NE(OkBody(Scrape(*port)).find("trainscope_info{"), std::string::npos);
}

TEST(MetricsServerTest, HeadUnknownPathsAndOtherMethods) {
  PrometheusExporter exporter;
  auto port = exporter.Serve();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  auto ask = [&](const std::string& request) {
    int fd = Connect(*port);
    if (fd < 0) return std::string();
    SendAll(fd, request);
    std::string r = ReadToClose(fd);
    ::close(fd);
    return r;
  };
  std::string head = ask("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << head;
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "") << "HEAD has no body";
  EXPECT_EQ(ask("GET /nope HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404 ", 0), 0u);
  EXPECT_EQ(ask("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n").rfind("HTTP/1.1 405 ", 0),
            0u);
  EXPECT_EQ(ask("garbage\r\n\r\n").rfind("HTTP/1.1 400 ", 0), 0u);
  EXPECT_EQ(ask("GET /metrics?x=1 HTTP/1.0\r\n\r\n").rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
}

}  // namespace
}  // namespace trainscope
