// PrometheusExporter: scraped over HTTP and parsed by prometheus_client's parser (an independent
// implementation of the text format), plus direct checks of the exposition.
#include "trainscope/prometheus.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "actions/loopback.h"
#include "actions/prometheus_text.h"

namespace trainscope {
namespace {

using nlohmann::json;
using testing::Child;

// Scrapes `url` with test_servers.py scrape; the parsed families, or null JSON.
json Scrape(const std::string& url) {
  Child child({testing::TestPython(), "-u", testing::TestServersScript(), "scrape", url});
  auto line = child.ReadLine(std::chrono::seconds(30));
  if (!line) return nullptr;
  return json::parse(*line, nullptr, false);
}

// The value of the sample `name` whose labels include `labels`; null when absent.
json SampleValue(const json& scrape, const std::string& family, const std::string& name,
                 const json& labels = json::object()) {
  if (!scrape["families"].contains(family)) return nullptr;
  for (const auto& s : scrape["families"][family]["samples"]) {
    if (s["name"] != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels.items()) {
      if (!s["labels"].contains(k) || s["labels"][k] != v) match = false;
    }
    if (match) return s["value"];
  }
  return nullptr;
}

RuleFinding MakeFinding(std::string rule, int64_t step, Mode mode = Mode::kTrain) {
  RuleFinding f;
  f.rule = std::move(rule);
  f.step = step;
  f.mode = mode;
  f.time_micros = 1795255200000000;
  return f;
}

TEST(PrometheusTest, ScrapedMetricsParseAndCarryTheState) {
  PrometheusExporter exporter("/data/run1");
  exporter.SetRuleStatus("LossNotDecreasing", RuleEvaluationStatus::kInProgress);
  exporter.RecordFinding(MakeFinding("VanishingGradient", 100));
  exporter.RecordFinding(MakeFinding("VanishingGradient", 200));
  exporter.RecordFinding(MakeFinding("Overfit", 30, Mode::kEval));
  exporter.RecordFinding(
      RuleFinding::StatusChange("Overfit", RuleEvaluationStatus::kNoIssuesFound));
  exporter.RecordStep(250, Mode::kTrain);
  exporter.RecordLoss(0.3125, 250);
  ActionOutcome done;
  done.action = "webhook";
  done.result = ActionResult::kDone;
  exporter.RecordAction(done);
  exporter.RecordAction(done);
  ActionOutcome dropped = done;
  dropped.result = ActionResult::kDropped;
  exporter.RecordAction(dropped);
  exporter.SetStopRequested(true);
  ASSERT_TRUE(exporter.SetGauge("gpu_memory_used_bytes", "GPU memory in use.", 2.5e9).ok());

  auto port = exporter.Serve();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_EQ(exporter.port(), *port);
  json s = Scrape("http://127.0.0.1:" + std::to_string(*port) + "/metrics");
  ASSERT_TRUE(s.is_object()) << testing::PyServer::Help();
  EXPECT_EQ(s["content_type"], "text/plain; version=0.0.4; charset=utf-8");

  const auto& fam = s["families"];
  EXPECT_EQ(fam["trainscope_rule_status"]["type"], "gauge");
  EXPECT_EQ(SampleValue(s, "trainscope_rule_status", "trainscope_rule_status",
                        {{"rule", "VanishingGradient"}, {"status", "IssuesFound"}}),
            1.0);
  EXPECT_EQ(SampleValue(s, "trainscope_rule_status", "trainscope_rule_status",
                        {{"rule", "VanishingGradient"}, {"status", "InProgress"}}),
            0.0);
  EXPECT_EQ(SampleValue(s, "trainscope_rule_status", "trainscope_rule_status",
                        {{"rule", "Overfit"}, {"status", "NoIssuesFound"}}),
            1.0);
  EXPECT_EQ(SampleValue(s, "trainscope_rule_status", "trainscope_rule_status",
                        {{"rule", "LossNotDecreasing"}, {"status", "InProgress"}}),
            1.0);
  // prometheus_client names a counter family without its _total suffix.
  EXPECT_EQ(fam["trainscope_rule_findings"]["type"], "counter");
  EXPECT_EQ(SampleValue(s, "trainscope_rule_findings", "trainscope_rule_findings_total",
                        {{"rule", "VanishingGradient"}}),
            2.0);
  EXPECT_EQ(SampleValue(s, "trainscope_rule_findings", "trainscope_rule_findings_total",
                        {{"rule", "Overfit"}}),
            1.0);
  EXPECT_EQ(SampleValue(s, "trainscope_rule_last_finding_step", "trainscope_rule_last_finding_step",
                        {{"rule", "VanishingGradient"}}),
            200.0);
  EXPECT_EQ(SampleValue(s, "trainscope_rule_last_finding_timestamp_seconds",
                        "trainscope_rule_last_finding_timestamp_seconds", {{"rule", "Overfit"}}),
            1795255200.0);
  EXPECT_EQ(SampleValue(s, "trainscope_step", "trainscope_step", {{"mode", "TRAIN"}}), 250.0);
  EXPECT_EQ(SampleValue(s, "trainscope_step", "trainscope_step", {{"mode", "EVAL"}}), 30.0);
  EXPECT_EQ(SampleValue(s, "trainscope_loss", "trainscope_loss"), 0.3125);
  EXPECT_EQ(SampleValue(s, "trainscope_loss_step", "trainscope_loss_step"), 250.0);
  EXPECT_EQ(SampleValue(s, "trainscope_actions", "trainscope_actions_total",
                        {{"action", "webhook"}, {"result", "done"}}),
            2.0);
  EXPECT_EQ(SampleValue(s, "trainscope_actions", "trainscope_actions_total",
                        {{"action", "webhook"}, {"result", "dropped"}}),
            1.0);
  EXPECT_EQ(SampleValue(s, "trainscope_stop_requested", "trainscope_stop_requested"), 1.0);
  EXPECT_EQ(SampleValue(s, "trainscope_scrapes", "trainscope_scrapes_total"), 1.0);
  EXPECT_EQ(SampleValue(s, "trainscope_info", "trainscope_info",
                        {{"trial", "/data/run1"}, {"version", "0.1.0"}}),
            1.0);
  EXPECT_EQ(SampleValue(s, "trainscope_gpu_memory_used_bytes", "trainscope_gpu_memory_used_bytes"),
            2.5e9);
  EXPECT_EQ(fam["trainscope_gpu_memory_used_bytes"]["help"], "GPU memory in use.");

  json again = Scrape("http://127.0.0.1:" + std::to_string(*port) + "/metrics");
  EXPECT_EQ(SampleValue(again, "trainscope_scrapes", "trainscope_scrapes_total"), 2.0);
  exporter.StopServing();
  EXPECT_EQ(exporter.port(), 0);
}

TEST(PrometheusTest, AwkwardRuleNamesAndValuesRoundTripThroughTheParser) {
  PrometheusExporter exporter("C:\\runs\\\"quoted\"\nnext");
  const std::string rule = "My \"Rule\"\\with\nnewline";
  exporter.RecordFinding(MakeFinding(rule, 1));
  exporter.RecordLoss(std::numeric_limits<double>::quiet_NaN(), 3);
  ASSERT_TRUE(exporter.SetGauge("ratio", "a\\b\nc", -std::numeric_limits<double>::infinity()).ok());
  auto port = exporter.Serve("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  json s = Scrape("http://127.0.0.1:" + std::to_string(*port) + "/metrics");
  ASSERT_TRUE(s.is_object()) << testing::PyServer::Help();
  EXPECT_EQ(SampleValue(s, "trainscope_rule_findings", "trainscope_rule_findings_total",
                        {{"rule", rule}}),
            1.0);
  EXPECT_EQ(SampleValue(s, "trainscope_info", "trainscope_info",
                        {{"trial", "C:\\runs\\\"quoted\"\nnext"}}),
            1.0);
  EXPECT_EQ(SampleValue(s, "trainscope_loss", "trainscope_loss"), "NaN");
  EXPECT_EQ(SampleValue(s, "trainscope_ratio", "trainscope_ratio"), "-Inf");
  EXPECT_EQ(s["families"]["trainscope_ratio"]["help"], "a\\b\nc");
}

TEST(PrometheusTest, RenderIsWellFormed) {
  PrometheusExporter exporter;
  exporter.RecordFinding(MakeFinding("R", 7));
  const std::string text = exporter.Render();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  // Each family's HELP and TYPE come once, before its samples.
  EXPECT_NE(text.find("# HELP trainscope_rule_findings_total "), std::string::npos);
  EXPECT_NE(text.find("# TYPE trainscope_rule_findings_total counter\n"
                      "trainscope_rule_findings_total{rule=\"R\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("\ntrainscope_loss "), std::string::npos)
      << "no loss sample before one is seen";
}

TEST(PrometheusTest, SetGaugeRejectsBadOrBuiltInNames) {
  PrometheusExporter exporter;
  EXPECT_EQ(exporter.SetGauge("9lives", "", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(exporter.SetGauge("has-dash", "", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(exporter.SetGauge("", "", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(exporter.SetGauge("rule_status", "", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(exporter.SetGauge("ok_name:sub", "", 1).ok());
}

TEST(PrometheusTest, ServeReportsABusyPort) {
  PrometheusExporter first, second;
  auto port = first.Serve();
  ASSERT_TRUE(port.ok());
  auto clash = second.Serve("127.0.0.1", *port);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.status().code(), StatusCode::kIOError);
  EXPECT_NE(clash.status().message().find("127.0.0.1:" + std::to_string(*port)), std::string::npos);
  EXPECT_FALSE(first.Serve().ok()) << "already serving";
}

TEST(PrometheusTest, ConcurrentUpdatesAreAllCounted) {
  PrometheusExporter exporter;
  auto port = exporter.Serve();
  ASSERT_TRUE(port.ok());
  constexpr int kThreads = 2;
  std::atomic<bool> stop{false};
  std::vector<int64_t> done(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Keep updating until the scrape below has finished, so it really runs concurrently.
      for (int64_t i = 0; !stop.load() || i < 100; ++i) {
        exporter.RecordFinding(MakeFinding("Rule" + std::to_string(t % 2), i));
        exporter.RecordLoss(static_cast<double>(i), i);
        ActionOutcome o;
        o.action = "stop";
        exporter.RecordAction(o);
        done[t] = i + 1;
        std::this_thread::sleep_for(std::chrono::microseconds(20));  // leave the cores to Python
      }
    });
  }
  json during = Scrape("http://127.0.0.1:" + std::to_string(*port) + "/metrics");
  stop.store(true);
  for (auto& th : threads) th.join();
  ASSERT_TRUE(during.is_object()) << "a scrape during updates parses";
  json s = Scrape("http://127.0.0.1:" + std::to_string(*port) + "/metrics");
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(SampleValue(s, "trainscope_rule_findings", "trainscope_rule_findings_total",
                        {{"rule", "Rule0"}}),
            static_cast<double>(done[0]));
  EXPECT_EQ(SampleValue(s, "trainscope_rule_findings", "trainscope_rule_findings_total",
                        {{"rule", "Rule1"}}),
            static_cast<double>(done[1]));
  EXPECT_EQ(SampleValue(s, "trainscope_actions", "trainscope_actions_total",
                        {{"action", "stop"}, {"result", "done"}}),
            static_cast<double>(done[0] + done[1]));
}

TEST(PrometheusTextTest, ValueFormatting) {
  using actions_internal::FormatSampleValue;
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(-3), "-3");
  EXPECT_EQ(FormatSampleValue(1795255200), "1795255200");
  EXPECT_EQ(FormatSampleValue(0.1), "0.1");
  EXPECT_EQ(FormatSampleValue(1e300), "1e+300");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

}  // namespace
}  // namespace trainscope
