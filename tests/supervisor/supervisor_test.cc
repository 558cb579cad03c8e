// Supervise, SignalForwarder and WorkerGroup on real processes (/bin/sh): the training's exit
// code and the trial's end marker, SIGTERM forwarded to a training that traps it, a third signal
// turned into SIGKILL, a worker that hangs past its time-out killed, and a training that ignores
// its stop signal terminated after the grace, and each child's end seen without waiting out the
// poll interval. Times are short options, never asserted but as half a minute-long poll.
#include "trainscope/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "store/trial_test_util.h"
#include "trainscope/env.h"

namespace trainscope {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

ProcessOptions Shell(const std::string& script) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.own_group = true;  // as `trainscope run` starts its workers: signals reach what they start
  return o;
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

SuperviseOptions Fast(const std::string& trial, const std::string& training) {
  SuperviseOptions o;
  o.trial = trial;
  o.training = Shell(training);
  o.poll_interval = 20ms;
  o.stop_grace = 300ms;
  o.workers_timeout = 300ms;
  o.worker_kill_grace = 300ms;
  return o;
}

TEST(SuperviseTest, ReportsTheTrainingsExitCodeAndEndsTheTrial) {
  TempDir trial;
  pid_t started = 0;
  int ended = -1;
  SuperviseEvents ev;
  ev.on_training_started = [&](pid_t pid) { started = pid; };
  ev.on_training_ended = [&](int ws) { ended = ExitCodeOf(ws); };
  auto run = Supervise(Fast(trial.path(), "exit 5"), ev);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_GT(started, 0);
  EXPECT_EQ(ended, 5);
  EXPECT_EQ(run->training_exit_code, 5);
  EXPECT_FALSE(run->stop_requested);
  EXPECT_EQ(run->signals_forwarded, 0);
  // The training never wrote its end marker: the supervisor did, so the rules stop waiting.
  EXPECT_TRUE(Exists(JoinPath(trial.path(), "training_job_end.ts")));
}

TEST(SuperviseTest, TheTrainingGetsItsEnvironmentAndTheWorkersEndTheirWay) {
  TempDir trial;
  SuperviseOptions o = Fast(trial.path(), "test \"$TS_SUPERVISE_TEST\" = yes");
  o.training.env_add = {"TS_SUPERVISE_TEST=yes"};
  o.workers["clean"] = Shell("exit 0");
  o.workers["found"] = Shell("exit 3");
  o.workers["crashed"] = Shell("kill -KILL $$");
  std::map<std::string, int> ended;
  SuperviseEvents ev;
  ev.on_worker_ended = [&](const std::string& name, int ws) { ended[name] = ExitCodeOf(ws); };
  ev.on_worker_killed = [&](const std::string& name) { ADD_FAILURE() << name << " killed"; };
  auto run = Supervise(o, ev);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->training_exit_code, 0);
  EXPECT_EQ(ended, (std::map<std::string, int>{{"clean", 0}, {"found", 3}, {"crashed", 137}}));
}

// A child's end wakes the supervisor (SIGCHLD): with a minute-long poll interval the training's
// exit and then the worker's are each seen when they happen, and the run ends, in a few polls
// (without the wake it takes two intervals).
TEST(SuperviseTest, EachChildsEndIsSeenWithoutWaitingOutThePollInterval) {
  TempDir trial;
  SuperviseOptions o = Fast(trial.path(), "sleep 0.2");
  o.poll_interval = std::chrono::minutes(1);
  o.workers_timeout = std::chrono::hours(1);
  o.workers["late"] = Shell("sleep 0.5");
  int polls = 0;
  std::map<std::string, int> ended;
  SuperviseEvents ev;
  ev.on_poll = [&](double) { ++polls; };
  ev.on_worker_ended = [&](const std::string& name, int ws) { ended[name] = ExitCodeOf(ws); };
  const auto start = std::chrono::steady_clock::now();
  auto run = Supervise(o, ev);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->training_exit_code, 0);
  EXPECT_EQ(ended, (std::map<std::string, int>{{"late", 0}}));
  EXPECT_LE(polls, 6);  // the start, each end, and a spurious wake or two at most
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(SuperviseTest, SigtermToTheSupervisorReachesTheTraining) {
  TempDir trial;
  const std::string ready = trial.path() + "/ready";
  struct sigaction before {};
  sigaction(SIGTERM, nullptr, &before);
  bool sent = false;
  SuperviseEvents ev;
  ev.on_poll = [&](double) {
    if (!sent && Exists(ready)) {
      sent = true;
      ::kill(::getpid(), SIGTERM);  // as a person or a scheduler would stop `trainscope run`
    }
  };
  auto run = Supervise(Fast(trial.path(), "trap 'exit 42' TERM; touch '" + ready +
                                              "'; while :; do sleep 0.02; done"),
                       ev);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(sent);
  EXPECT_EQ(run->training_exit_code, 42);  // its trap ran: the signal was forwarded, as sent
  EXPECT_EQ(run->signals_forwarded, 1);
  struct sigaction after {};
  sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);  // the supervisor's handler is gone
}

TEST(SuperviseTest, AThirdSignalIsSigkill) {
  TempDir trial;
  const std::string ready = trial.path() + "/ready";
  int sent = 0;
  SuperviseEvents ev;
  ev.on_poll = [&](double) {
    if (sent < 3 && Exists(ready)) {
      ++sent;
      ::kill(::getpid(), SIGINT);  // one per poll: each is forwarded before the next
    }
  };
  // A training that shrugs off SIGINT, as one that catches KeyboardInterrupt to save its state.
  auto run = Supervise(Fast(trial.path(), "trap 'echo interrupted >&2' INT; touch '" + ready +
                                              "'; while :; do sleep 0.02; done"),
                       ev);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->signals_forwarded, 3);
  EXPECT_EQ(run->training_exit_code, 128 + SIGKILL);
}

TEST(SuperviseTest, AWorkerThatHangsPastItsTimeoutIsKilled) {
  TempDir trial;
  SuperviseOptions o = Fast(trial.path(), "exit 0");
  // Ignores SIGTERM (the disposition is inherited by sleep): only SIGKILL ends it.
  o.workers["hangs"] = Shell("trap '' TERM; sleep 60; exit 0");
  // Ends on SIGTERM, within the grace: it is not reported as killed.
  o.workers["slow"] = Shell("exec sleep 60");
  // A grace that a loaded machine meets (under TSan with the load at 19 on 2 cores, 300 ms once
  // was not enough to see the SIGTERM'd worker end, and it was killed too).
  o.worker_kill_grace = 2s;
  std::vector<std::string> killed;
  std::vector<std::string> ended;
  SuperviseEvents ev;
  ev.on_worker_killed = [&](const std::string& name) { killed.push_back(name); };
  ev.on_worker_ended = [&](const std::string& name, int) { ended.push_back(name); };
  const auto start = std::chrono::steady_clock::now();
  auto run = Supervise(o, ev);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(killed, std::vector<std::string>{"hangs"});
  EXPECT_TRUE(ended.empty());
  // Well before the workers' own 60 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50s);
}

TEST(SuperviseTest, ATrainingThatIgnoresItsStopSignalIsTerminatedAfterTheGrace) {
  TempDir trial;
  const std::string ready = trial.path() + "/ready";
  int requested = 0, expired = 0;
  SuperviseEvents ev;
  ev.on_poll = [&](double) {
    // The stop file appears while the training runs (a bare file stops training too:
    // docs/formats/stop_signal.md).
    if (Exists(ready) && !Exists(trial.path() + "/rule-output/stop_training.json")) {
      ASSERT_TRUE(Env::Default()->CreateDirs(trial.path() + "/rule-output").ok());
      ASSERT_TRUE(Env::Default()
                      ->WriteFileAtomic(trial.path() + "/rule-output/stop_training.json", "", false)
                      .ok());
    }
  };
  ev.on_stop_requested = [&] { ++requested; };
  ev.on_stop_grace_expired = [&] { ++expired; };
  auto run =
      Supervise(Fast(trial.path(), "touch '" + ready + "'; while :; do sleep 0.02; done"), ev);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->stop_requested);
  EXPECT_TRUE(run->training_terminated);
  EXPECT_EQ(requested, 1);
  EXPECT_EQ(expired, 1);
  EXPECT_EQ(run->training_exit_code, 128 + SIGTERM);
}

TEST(WorkerGroupTest, ReapEndedReportsEachWorkerOnce) {
  WorkerGroup g;
  ASSERT_TRUE(g.Start("a", Shell("exit 4")).ok());
  ASSERT_TRUE(g.Start("b", Shell("exec sleep 60")).ok());
  EXPECT_EQ(g.size(), 2u);
  std::map<std::string, int> ended;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (ended.empty() && std::chrono::steady_clock::now() < deadline) {
    g.ReapEnded([&](const std::string& name, int ws) { ended[name] = ExitCodeOf(ws); });
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(ended, (std::map<std::string, int>{{"a", 4}}));
  EXPECT_EQ(g.size(), 1u);
  std::vector<std::string> killed;
  g.StopAll(5000ms, [&](const std::string& name) { killed.push_back(name); });
  EXPECT_TRUE(killed.empty());  // "b" ended on SIGTERM
  EXPECT_TRUE(g.empty());
}

}  // namespace
}  // namespace trainscope
