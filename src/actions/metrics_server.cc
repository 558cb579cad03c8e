// The HTTP side of PrometheusExporter (cpp-httplib, kept out of every header).
#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "trainscope/actions_format.h"
#include "trainscope/prometheus.h"

namespace trainscope {

struct PrometheusExporter::Server {
  httplib::Server http;
  std::thread thread;
  int port = 0;
};

// Here, where Server is complete (unique_ptr<Server> needs it).
PrometheusExporter::PrometheusExporter(std::string trial)
    : trial_(std::move(trial)),
      start_time_(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                      .count()) {}

PrometheusExporter::~PrometheusExporter() { StopServing(); }

Result<int> PrometheusExporter::Serve(const std::string& host, int port) {
  std::lock_guard<std::mutex> lock(server_mu_);
  if (server_) {
    return Status::InvalidArgument("metrics: already serving on port " +
                                   std::to_string(server_->port));
  }
  auto server = std::make_unique<Server>();
  // Scrapes are rare and quick: two workers are plenty (the default is one per core, at least 8).
  server->http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  // httplib's default sets SO_REUSEPORT, which lets a second exporter bind the same port and
  // share its scrapes. SO_REUSEADDR alone: restarts bind at once, a busy port is an error.
  server->http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server->http.Get(std::string(actions_format::kMetricsPath),
                   [this](const httplib::Request&, httplib::Response& res) {
                     {
                       std::lock_guard<std::mutex> l(mu_);
                       ++scrapes_;
                     }
                     res.set_content(Render(), std::string(actions_format::kMetricsContentType));
                   });
  server->http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("trainscope metrics: see /metrics\n", "text/plain; charset=utf-8");
  });
  int bound;
  if (port == 0) {
    bound = server->http.bind_to_any_port(host);
  } else {
    bound = server->http.bind_to_port(host, port) ? port : -1;
  }
  if (bound <= 0) {
    return Status::IOError("metrics: cannot listen on " + host + ":" + std::to_string(port) +
                           " (in use, or not an address of this machine); choose another port, "
                           "or 0 for any free one");
  }
  server->port = bound;
  httplib::Server* http = &server->http;
  auto exited = std::make_shared<std::atomic<bool>>(false);
  server->thread = std::thread([http, exited] {
    http->listen_after_bind();
    exited->store(true);
  });
  // stop() only takes effect once the loop runs, so do not hand back a server that is not yet
  // running (StopServing would then wait forever).
  while (!http->is_running() && !exited->load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (exited->load()) {
    server->thread.join();
    return Status::IOError("metrics: the server on " + host + ":" + std::to_string(bound) +
                           " stopped as it started");
  }
  server_ = std::move(server);
  return bound;
}

void PrometheusExporter::StopServing() {
  std::unique_ptr<Server> server;
  {
    std::lock_guard<std::mutex> lock(server_mu_);
    server = std::move(server_);
  }
  if (!server) return;
  server->http.stop();
  if (server->thread.joinable()) server->thread.join();
}

int PrometheusExporter::port() const {
  std::lock_guard<std::mutex> lock(server_mu_);
  return server_ ? server_->port : 0;
}

}  // namespace trainscope
