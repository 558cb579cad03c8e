// The incomplete markers as the readers see them (ReadIncompleteMarkers, Trial::Incomplete), and
// the writer's refusal to write through a symbolic link below the trial folder.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "store/trial_test_util.h"
#include "trainscope/trial.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace trainscope {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "ts_incomplete_XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    path_ = tmpl;
  }
  ~TempDir() { EXPECT_EQ(std::system(("rm -rf '" + path_ + "'").c_str()), 0); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool IsEmptyDir(const std::string& dir) {
  auto children = Env::Default()->GetChildren(dir);
  return children.ok() && children->empty();
}

// Writes `steps` steps of one small tensor; returns the writer's first error.
Status WriteSteps(const std::string& dir, int steps) {
  WriterOptions opts;
  opts.quiet = true;
  auto w = TrialWriter::Open(dir, opts);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  if (!w.ok()) return w.status();
  (void)(*w)->WriteCollections(testing::CollectionsJson(1));
  const float v[2] = {1.0f, 2.0f};
  for (int s = 0; s < steps; ++s) {
    EXPECT_TRUE((*w)->BeginStep(s, Mode::kTrain, s).ok());
    EXPECT_TRUE((*w)->AddTensor("x", {DType::kF32, v, {2}, {}, {}}).ok());
    EXPECT_TRUE((*w)->EndStep().ok());
  }
  return (*w)->Close();
}

TEST(IncompleteMarkerTest, CompleteTrialHasNone) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/t";
  ASSERT_TRUE(WriteSteps(dir, 3).ok());
  auto markers = ReadIncompleteMarkers(dir);
  ASSERT_TRUE(markers.ok());
  EXPECT_TRUE(markers->empty());
  auto trial = Trial::Open(dir);
  ASSERT_TRUE(trial.ok()) << trial.status().ToString();
  auto inc = (*trial)->Incomplete();
  ASSERT_TRUE(inc.ok());
  EXPECT_TRUE(inc->empty());
}

TEST(IncompleteMarkerTest, PlantedEventsLinkIsRefusedAndRecorded) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/t", elsewhere = tmp.path() + "/elsewhere";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(elsewhere.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(elsewhere.c_str(), (dir + "/events").c_str()), 0);
  Status s = WriteSteps(dir, 4);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir + "/events is a symbolic link"), std::string::npos)
      << s.ToString();
  EXPECT_TRUE(IsEmptyDir(elsewhere));  // nothing written where the link leads
  auto markers = ReadIncompleteMarkers(dir);
  ASSERT_TRUE(markers.ok());
  ASSERT_EQ(markers->size(), 1u);
  const IncompleteMarker& m = (*markers)[0];
  EXPECT_EQ(m.worker, "worker_0");
  EXPECT_EQ(m.path, dir + "/" + trial_format::IncompleteMarkerPath("worker_0"));
  ASSERT_TRUE(m.readable) << m.problem;
  EXPECT_TRUE(m.final);
  EXPECT_EQ(m.steps_written, 0);
  EXPECT_EQ(m.steps_failed, 4);
  EXPECT_EQ(m.steps_dropped, 0);
  EXPECT_EQ(m.first_lost_step, 0);
  EXPECT_NE(m.first_error.find("symbolic link"), std::string::npos) << m.first_error;
}

TEST(IncompleteMarkerTest, DamagedMarkersAreUnreadableNotFatal) {
  TempDir tmp;
  const std::string dir = tmp.path();
  std::ofstream(dir + "/incomplete_a.json").close();                           // empty
  ASSERT_EQ(::symlink("/dev/zero", (dir + "/incomplete_b.json").c_str()), 0);  // link
  ASSERT_EQ(::mkfifo((dir + "/incomplete_c.json").c_str(), 0644), 0);          // FIFO: no hang
  std::ofstream(dir + "/incomplete_d.json") << "[1, 2";                        // not JSON
  std::ofstream(dir + "/incomplete_e.json") << std::string(100000, ' ');       // too large
  std::ofstream(dir + "/incomplete_f.json.tmp") << "{}";                       // not a marker
  auto markers = ReadIncompleteMarkers(dir);
  ASSERT_TRUE(markers.ok());
  ASSERT_EQ(markers->size(), 5u);
  const char* problems[] = {"empty", "symbolic link", "not a regular file", "not a JSON object",
                            "larger than"};
  for (size_t i = 0; i < 5; ++i) {
    const IncompleteMarker& m = (*markers)[i];
    EXPECT_EQ(m.worker, std::string(1, static_cast<char>('a' + i)));
    EXPECT_FALSE(m.readable);
    EXPECT_EQ(m.steps_failed, -1);
    EXPECT_NE(m.problem.find(problems[i]), std::string::npos) << m.worker << ": " << m.problem;
  }
  EXPECT_FALSE(ReadIncompleteMarkers(dir + "/missing").ok());
}

}  // namespace
}  // namespace trainscope
