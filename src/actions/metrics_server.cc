// The HTTP side of PrometheusExporter: a small HTTP/1.1 server on one thread that polls
// non-blocking sockets. Every connection gets one request and one answer (Connection: close).
// An answer goes out as soon as its request's header is complete, so a client that half-closes
// after sending is answered; a client that has not finished its header within the request
// time-out is dropped, and one past the connection cap is answered 503 at once. No client can
// hold up another: nothing here blocks but poll().
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "trainscope/actions_format.h"
#include "trainscope/prometheus.h"

namespace trainscope {
namespace {

using Clock = std::chrono::steady_clock;

// A request header larger than this is answered 431 (a scrape's is a few hundred bytes).
constexpr size_t kMaxHeaderBytes = size_t{16} * 1024;

struct Connection {
  int fd = -1;
  std::string in;   // the request as received so far
  std::string out;  // the answer, once the request is complete
  size_t sent = 0;
  bool answering = false;
  Clock::time_point deadline;
};

std::string Response(int code, std::string_view reason, std::string_view content_type,
                     const std::string& body, bool head, std::string_view extra_headers = "") {
  std::string r = "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) + "\r\n";
  r += "Content-Type: " + std::string(content_type) + "\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  r += extra_headers;
  r += "Connection: close\r\n\r\n";
  if (!head) r += body;
  return r;
}

constexpr std::string_view kText = "text/plain; charset=utf-8";

// Closes after reading what the client still sent, so the close does not reset the connection
// (a reset can discard the answer before the client reads it).
void CloseConnection(int fd) {
  char buf[4096];
  while (::recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
  }
  ::close(fd);
}

}  // namespace

struct PrometheusExporter::Server {
  int listen_fd = -1;
  int wake[2] = {-1, -1};  // StopServing writes to wake[1]
  std::thread thread;
  int port = 0;
  ServeLimits limits;

  ~Server() {
    for (int fd : {listen_fd, wake[0], wake[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }
};

namespace {

// The answer to a complete request header `head` (request line first).
std::string Answer(std::string_view head, const std::function<std::string()>& render) {
  const size_t eol = head.find("\r\n");
  const std::string_view line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0) {
    return Response(400, "Bad Request", kText, "malformed request line\n", false);
  }
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));
  const bool head_only = method == "HEAD";
  if (method != "GET" && !head_only) {
    return Response(405, "Method Not Allowed", kText, "only GET and HEAD\n", false,
                    "Allow: GET, HEAD\r\n");
  }
  if (target == actions_format::kMetricsPath) {
    return Response(200, "OK", actions_format::kMetricsContentType, render(), head_only);
  }
  if (target == "/") {
    return Response(200, "OK", kText, "trainscope metrics: see /metrics\n", head_only);
  }
  return Response(404, "Not Found", kText, "not found; the metrics are at /metrics\n", head_only);
}

// Serves until a byte arrives on `wake_fd`.
void ServeLoop(int listen_fd, int wake_fd, PrometheusExporter::ServeLimits limits,
               const std::function<std::string()>& render) {
  std::vector<Connection> conns;
  std::vector<pollfd> fds;
  const auto timeout = limits.request_timeout;
  for (;;) {
    fds.clear();
    fds.push_back({wake_fd, POLLIN, 0});
    fds.push_back({listen_fd, POLLIN, 0});
    auto now = Clock::now();
    int wait_ms = -1;
    for (const Connection& c : conns) {
      fds.push_back({c.fd, static_cast<short>(c.answering ? POLLOUT : POLLIN), 0});
      auto left = std::chrono::ceil<std::chrono::milliseconds>(c.deadline - now).count();
      left = std::max<decltype(left)>(left, 0);
      if (wait_ms < 0 || left < wait_ms) wait_ms = static_cast<int>(left);
    }
    int ready = ::poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    now = Clock::now();
    // Serve the connections first: accepting below may grow `conns` past `fds`.
    std::vector<Connection> kept;
    kept.reserve(conns.size());
    for (size_t i = 0; i < conns.size(); ++i) {
      Connection& c = conns[i];
      const short ev = ready > 0 ? fds[i + 2].revents : short{0};
      bool done = false;
      if (!c.answering && (ev & (POLLIN | POLLHUP | POLLERR))) {
        char buf[4096];
        ssize_t n = ::recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) {
          c.in.append(buf, static_cast<size_t>(n));
          const size_t end = c.in.find("\r\n\r\n");
          if (end != std::string::npos) {
            c.out = Answer(std::string_view(c.in).substr(0, end), render);
            c.answering = true;
            c.deadline = now + timeout;
          } else if (c.in.size() > kMaxHeaderBytes) {
            c.out = Response(431, "Request Header Fields Too Large", kText,
                             "request header over 16 KiB\n", false);
            c.answering = true;
            c.deadline = now + timeout;
          }
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          done = true;  // closed (or reset) before its request was complete
        }
      }
      if (c.answering && !done) {
        // Try at once (the socket usually has room), then whenever poll says it has.
        ssize_t n =
            ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) c.sent += static_cast<size_t>(n);
        if (c.sent == c.out.size()) {
          ::shutdown(c.fd, SHUT_WR);
          done = true;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          done = true;
        }
      }
      if (!done && now >= c.deadline) done = true;  // too slow to send or to take the answer
      if (done) {
        CloseConnection(c.fd);
      } else {
        kept.push_back(std::move(c));
      }
    }
    conns.swap(kept);
    if (fds[1].revents & POLLIN) {
      for (;;) {
        int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN: all taken; other errors (EMFILE...): try on the next poll
        if (static_cast<int>(conns.size()) >= limits.max_connections) {
          static const std::string kBusy =
              Response(503, "Service Unavailable", kText,
                       "too many connections to the metrics endpoint; try again\n", false);
          // Best effort: the connection is closed right after, answered or not.
          (void)::send(fd, kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          ::shutdown(fd, SHUT_WR);
          CloseConnection(fd);
          continue;
        }
        Connection c;
        c.fd = fd;
        c.deadline = now + timeout;
        conns.push_back(std::move(c));
      }
    }
  }
  for (const Connection& c : conns) ::close(c.fd);
}

}  // namespace

// Here, where Server is complete (unique_ptr<Server> needs it).
PrometheusExporter::PrometheusExporter(std::string trial)
    : trial_(std::move(trial)),
      start_time_(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                      .count()) {}

PrometheusExporter::~PrometheusExporter() { StopServing(); }

Result<int> PrometheusExporter::Serve(const std::string& host, int port) {
  return Serve(host, port, ServeLimits{});
}

Result<int> PrometheusExporter::Serve(const std::string& host, int port,
                                      const ServeLimits& limits) {
  MutexLock lock(&server_mu_);
  if (server_) {
    return Status::InvalidArgument("metrics: already serving on port " +
                                   std::to_string(server_->port));
  }
  if (limits.max_connections < 1 || limits.request_timeout.count() < 1) {
    return Status::InvalidArgument(
        "metrics: max_connections and request_timeout must be "
        "positive");
  }
  const std::string where = host + ":" + std::to_string(port);
  const Status cannot_listen = Status::IOError(
      "metrics: cannot listen on " + where +
      " (in use, or not an address of this machine); choose another port, or 0 for any free one");
  auto server = std::make_unique<Server>();
  server->limits = limits;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return cannot_listen;
  }
  for (addrinfo* a = found; a != nullptr && server->listen_fd < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR alone (not SO_REUSEPORT, which would let a second exporter share the port):
    // restarts bind at once, a busy port is an error.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      server->listen_fd = fd;
    } else {
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (server->listen_fd < 0) return cannot_listen;
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(server->listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
  server->port = bound.ss_family == AF_INET6
                     ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                     : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (::pipe2(server->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    return Status::IOError("metrics: cannot create the server's wake-up pipe on " + where);
  }
  std::function<std::string()> render = [this] {
    {
      MutexLock l(&mu_);
      ++scrapes_;
    }
    return Render();
  };
  server->thread = std::thread(ServeLoop, server->listen_fd, server->wake[0], limits, render);
  const int served = server->port;
  server_ = std::move(server);
  return served;
}

void PrometheusExporter::StopServing() {
  std::unique_ptr<Server> server;
  {
    MutexLock lock(&server_mu_);
    server = std::move(server_);
  }
  if (!server) return;
  const char byte = 0;
  // A full pipe already wakes the loop (a result cast to void still warns under _FORTIFY_SOURCE).
  [[maybe_unused]] const ssize_t written = ::write(server->wake[1], &byte, 1);
  if (server->thread.joinable()) server->thread.join();
}

int PrometheusExporter::port() const {
  MutexLock lock(&server_mu_);
  return server_ ? server_->port : 0;
}

}  // namespace trainscope
