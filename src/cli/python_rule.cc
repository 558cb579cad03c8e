#include "cli/python_rule.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "trainscope/process.h"
#include "trainscope/rule_data.h"

namespace trainscope::cli {
namespace {

constexpr const char* kModule = "trainscope.rules.custom";

std::string ParamsJson(const RuleParams& params) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : params) j[k] = v;
  return j.dump();
}

// Forks `argv` with its stdin and stdout on one end of a socket pair; returns the pid and sets
// *fd to the other end. With `serve`: stderr is inherited, the child ignores SIGTERM and gets
// SIGKILL when this process dies; else stderr goes to the socket too.
Result<pid_t> Spawn(const std::vector<std::string>& argv, bool serve, int* fd) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Status::IOError(std::string("socketpair: ") + std::strerror(errno));
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    return Status::IOError(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    if (serve) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::signal(SIGTERM, SIG_IGN);
    }
    ::dup2(sv[1], STDIN_FILENO);
    ::dup2(sv[1], STDOUT_FILENO);
    if (!serve) ::dup2(sv[1], STDERR_FILENO);  // a check's message is read, not shown
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the worker blocks SIGTERM in every thread
    ::execvp(args[0], args.data());
    const char msg[] = "trainscope: cannot start the Python interpreter for a custom rule\n";
    (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);  // nothing else to tell, exiting
    ::_exit(127);
  }
  ::close(sv[1]);
  *fd = sv[0];
  return pid;
}

// Reads up to a newline (kept out of the line) into *line. false at EOF or on an error, or
// once `deadline` passes (when given).
bool ReadLine(int fd, std::string* buffer, std::string* line,
              std::chrono::steady_clock::time_point deadline = {}) {
  for (;;) {
    if (auto nl = buffer->find('\n'); nl != std::string::npos) {
      *line = buffer->substr(0, nl);
      buffer->erase(0, nl + 1);
      return true;
    }
    if (deadline != std::chrono::steady_clock::time_point{}) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
      if (r < 0 && errno != EINTR) return false;
      if (r <= 0) continue;
    }
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer->append(buf, static_cast<size_t>(n));
  }
}

bool LooksLikePython(const std::string& word) {
  const std::string base =
      word.substr(word.find_last_of('/') == std::string::npos ? 0 : word.find_last_of('/') + 1);
  if (base.rfind("python", 0) != 0) return false;
  for (char c : base.substr(6)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

}  // namespace

Result<RuleSpec> ParsePythonRuleSpec(const std::string& text) {
  const std::string form = "write FILE.py:CLASS[:KEY=VALUE,...][@ACTIONS], e.g. rules.py:MyRule";
  const auto py = text.find(".py:");
  if (py == std::string::npos || py == 0) {
    return Status::InvalidArgument("--rule-file '" + text + "': " + form);
  }
  TS_ASSIGN_OR_RETURN(RuleSpec spec, ParseRuleSpec(text.substr(py + 4)));
  spec.python_file = text.substr(0, py + 3);
  spec.text = text;
  for (char c : spec.name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      std::string msg = "--rule-file '" + text + "': '";
      msg += spec.name;
      msg += "' is not a Python class name; ";
      msg += form;
      return Status::InvalidArgument(msg);
    }
  }
  return spec;
}

std::string ResolvePython(const std::vector<std::string>& command) {
  if (const char* p = std::getenv("TRAINSCOPE_PYTHON"); p != nullptr && *p != '\0') return p;
  if (!command.empty() && LooksLikePython(command[0])) return command[0];
  return "python3";
}

Result<RuleParams> CheckPythonRule(const std::string& python, const RuleSpec& spec) {
  const std::string where = "--rule-file " + FormatRuleSpec(spec) + ": ";
  int fd = -1;
  auto pid =
      Spawn({python, "-m", kModule, "check", spec.python_file, spec.name, ParamsJson(spec.params)},
            false, &fd);
  if (!pid.ok()) return Status::InvalidArgument(where + pid.status().message());
  // stdout and stderr: the child's stderr goes to ours only through the socket (one message).
  std::string buffer, out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::string line;
  while (ReadLine(fd, &buffer, &line, deadline)) out += line + "\n";
  out += buffer;
  ::close(fd);
  int ws = 0;
  if (std::chrono::steady_clock::now() >= deadline) ::kill(*pid, SIGKILL);
  while (::waitpid(*pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(ws) || (WEXITSTATUS(ws) != 0 && WEXITSTATUS(ws) != 2)) {
    // Its last line says why (a traceback's exception).
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (const auto nl = out.find_last_of('\n'); nl != std::string::npos) out = out.substr(nl + 1);
    return Status::InvalidArgument(where + "cannot check the rule with " + python + " -m " +
                                   kModule + " (it " + DescribeWaitStatus(ws) +
                                   "): custom rules run in a Python that imports trainscope; set "
                                   "TRAINSCOPE_PYTHON to that interpreter (now: " +
                                   python + ")" +
                                   (out.empty() ? "" : "; it said: " + out.substr(0, 1000)));
  }
  if (WEXITSTATUS(ws) == 2) {
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return Status::InvalidArgument(where + out);
  }
  // The answer is the last line (the rule file may print while it is imported).
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const auto last = out.find_last_of('\n');
  auto j =
      nlohmann::json::parse(last == std::string::npos ? out : out.substr(last + 1), nullptr, false);
  if (!j.is_object() || !j.contains("parameters") || !j["parameters"].is_object()) {
    return Status::InvalidArgument(where + "unexpected answer from " + python + " -m " + kModule +
                                   ": " + out.substr(0, 2000));
  }
  RuleParams params;
  for (const auto& [k, v] : j["parameters"].items()) {
    params[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  return params;
}

PythonRule::PythonRule(std::string python, RuleSpec spec, RuleParams parameters)
    : Rule(spec.name),
      python_(std::move(python)),
      spec_(std::move(spec)),
      parameters_(std::move(parameters)) {}

PythonRule::~PythonRule() {
  if (fd_ >= 0) ::close(fd_);  // EOF on its stdin: the Python process ends
  if (pid_ > 0) {
    int ws = 0;
    for (int i = 0; i < 50; ++i) {
      if (::waitpid(pid_, &ws, WNOHANG) == pid_) return;
      ::usleep(20000);
    }
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
    }
  }
}

Status PythonRule::Ended(const std::string& doing) {
  int ws = 0;
  std::string how = "closed its output";
  if (pid_ > 0) {
    pid_t r = 0;
    for (int i = 0; i < 50 && (r = ::waitpid(pid_, &ws, WNOHANG)) == 0; ++i) ::usleep(20000);
    if (r == pid_) {
      how = DescribeWaitStatus(ws);
      pid_ = -1;
    }
  }
  return Status::Internal("the Python process of rule " + name() + " (" + spec_.python_file + ") " +
                          how + " while " + doing + " (its stderr says why)");
}

Status PythonRule::OnBind() {
  auto pid = Spawn({python_, "-m", kModule, "serve", data().trial().path(), spec_.python_file,
                    spec_.name, ParamsJson(spec_.params)},
                   true, &fd_);
  if (!pid.ok()) return pid.status();
  pid_ = *pid;
  std::string line;
  if (!ReadLine(fd_, &buffer_, &line)) return Ended("creating the rule");
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) {
    return Status::Internal("rule " + name() +
                            ": unexpected answer from its Python process: " + line.substr(0, 500));
  }
  if (j.contains("error")) {
    std::string msg = j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
    if (j.contains("where") && j["where"].is_string())
      msg += " (" + j["where"].get<std::string>() + ")";
    return Status::InvalidArgument(msg);
  }
  if (j.contains("parameters") && j["parameters"].is_object()) {
    parameters_.clear();
    for (const auto& [k, v] : j["parameters"].items()) {
      parameters_[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  return Status::OK();
}

Result<std::string> PythonRule::Call(const std::string& request, int64_t step) {
  const std::string doing = "evaluating step " + std::to_string(step);
  if (fd_ < 0) return Status::Internal("rule " + name() + ": its Python process is not running");
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Ended(doing);
    sent += static_cast<size_t>(n);
  }
  std::string line;
  if (!ReadLine(fd_, &buffer_, &line)) return Ended(doing);
  return line;
}

Result<Verdict> PythonRule::InvokeAtStep(int64_t step) {
  TS_ASSIGN_OR_RETURN(std::string line, Call("step " + std::to_string(step) + "\n", step));
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) {
    return Status::Internal("rule " + name() +
                            ": unexpected answer from its Python process: " + line.substr(0, 500));
  }
  if (j.contains("nodata")) {
    return Status::NotFound(j["nodata"].is_string() ? j["nodata"].get<std::string>() : "no data");
  }
  if (j.contains("error")) {
    std::string msg = j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
    if (j.contains("where") && j["where"].is_string() && !j["where"].get<std::string>().empty()) {
      msg += " (" + j["where"].get<std::string>() + ")";
    }
    return Status::Internal(name() + ".invoke_at_step(" + std::to_string(step) + ") raised " + msg);
  }
  Verdict v;
  if (j.value("met", false)) {
    RuleFinding f = NewFinding(step);
    f.condition = "invoke_at_step returned True";
    f.explanation = "custom rule " + name() + " (" + spec_.python_file +
                    "): its condition was met at step " + std::to_string(step);
    v.Add(std::move(f));
  }
  v.end_of_rule = j.value("end_of_rule", false);
  return v;
}

}  // namespace trainscope::cli
