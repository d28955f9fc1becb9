// Issue 26 ("Nothing silent, nothing destroyed"), the sweep's part, end to end with the clustersim binary:
// --resume and merge check the inputs by content (defects 2 and 13), a grid too large is refused before it is
// expanded (7), a corrupt sidecar is a located 65 (15, 18), a signal during setup or the final write exits 75 and
// leaves no temporary file (16), and invalid points are named (the "Standard_NC96ads_A100v4" typo).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "tests/support/cli.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_cli;

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("clustersim-sweep-inputs-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

/// A request trace of `n` requests, one every 0.5 s, of `prompt` prompt tokens.
std::string trace_text(int n, int prompt) {
  std::string t = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  for (int i = 0; i < n; ++i) {
    char line[96];
    std::snprintf(line, sizeof line, "2023-11-16 18:00:%02d.%d000000,%d,%d\n", i / 2, (i % 2) * 5, prompt, 16);
    t += line;
  }
  return t;
}

/// A 1-GPU Llama 2 7B serving scenario replaying t.csv, with `sweep` as its [sweep] table.
std::string scenario_text(const std::string& sweep) {
  return "schema_version = 1\nname = \"inputs\"\n"
         "[model]\nnum_layers = 32\nhidden_size = 4096\nnum_attention_heads = 32\nffn_hidden_size = 11008\n"
         "vocab_size = 32000\nseq_length = 4096\nmlp = \"swiglu\"\nposition_embedding = \"rope\"\ndropout = 0.0\n"
         "tie_embeddings = false\n"
         "[serving]\nvm_size = \"Standard_NC24ads_A100_v4\"\nreplicas = 1\ntensor = 1\nprecision = \"bf16\"\n"
         "[workload]\ntrace = \"t.csv\"\n"
         "[slo]\nttft_p99_ms = 2000\ntpot_p99_ms = 100\n"
         "[sweep]\n" + sweep;
}

const std::string kFour = "\"serving.replicas\" = [1, 2, 3, 4]\n";

/// A directory with s.toml (the 4-point sweep) and t.csv.
fs::path four_point_sweep(const std::string& name) {
  const fs::path d = temp_dir(name);
  write(d / "s.toml", scenario_text(kFour));
  write(d / "t.csv", trace_text(20, 300));
  return d;
}

std::string sweep_cmd(const fs::path& d, const std::string& out, const std::string& more = "") {
  return "sweep '" + (d / "s.toml").string() + "' -o '" + (d / out).string() + "' -j 1 " + more;
}

bool has_tmp_files(const fs::path& d) {
  for (const auto& e : fs::directory_iterator(d)) {
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return true;
  }
  return false;
}

// Defect 2: a resume after the scenario was edited refuses (65), naming what changed; unchanged, it resumes.
TEST(SweepInputs, ResumeAfterAnEditedScenarioIsRefused) {
  const fs::path d = four_point_sweep("edit");
  auto r = run_cli(sweep_cmd(d, "o.h5", "--stop-after 2"));
  ASSERT_EQ(r.exit_code, 75) << r.err;
  ASSERT_TRUE(fs::exists(d / "o.h5.partial"));
  std::string text = read_file(d / "s.toml");
  text.replace(text.find("ttft_p99_ms = 2000"), 18, "ttft_p99_ms = 1000");
  write(d / "s.toml", text);
  r = run_cli(sweep_cmd(d, "o.h5", "--resume"));
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("o.h5.partial:1: the scenario changed since the sidecar was written"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(d / "o.h5"));
  // The same edit as --set on the old file is still another input: refused too.
  text.replace(text.find("ttft_p99_ms = 1000"), 18, "ttft_p99_ms = 2000");
  write(d / "s.toml", text);
  r = run_cli(sweep_cmd(d, "o.h5", "--resume --set slo.ttft_p99_ms=1000"));
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("the --set overrides changed"), std::string::npos) << r.err;
  // Back as it was: the resume goes on.
  r = run_cli(sweep_cmd(d, "o.h5", "--resume"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(2 resumed"), std::string::npos) << r.out;
  fs::remove_all(d);
}

// Defect 2: replacing the request trace between the stop and the resume is refused, naming the trace.
TEST(SweepInputs, ResumeAfterAReplacedTraceIsRefused) {
  const fs::path d = four_point_sweep("trace");
  auto r = run_cli(sweep_cmd(d, "o.h5", "--stop-after 2"));
  ASSERT_EQ(r.exit_code, 75) << r.err;
  write(d / "t.csv", trace_text(20, 3000));
  r = run_cli(sweep_cmd(d, "o.h5", "--resume"));
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("the request trace 't.csv' changed since the sidecar was written"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("the scenario changed"), std::string::npos) << r.err;
  fs::remove_all(d);
}

// Defect 2: the eviction trace a training scenario reads is part of the fingerprint too.
TEST(SweepInputs, ResumeAfterAnEditedEvictionTraceIsRefused) {
  const fs::path d = temp_dir("eviction");
  std::string text = read_file(fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios/azure/gpt3-175b-h100-spot-15pct.toml");
  const std::string rate = "spot_eviction_rate_per_hour = 0.15";
  ASSERT_NE(text.find(rate), std::string::npos);
  text.replace(text.find(rate), rate.size(), "spot_eviction_trace = \"ev.txt\"");
  write(d / "s.toml", text + "\n[sweep]\n\"training.global_batch_size\" = [1536, 3072]\n");
  write(d / "ev.txt", "1\n5\n");
  ASSERT_EQ(run_cli(sweep_cmd(d, "o.h5", "--stop-after 1")).exit_code, 75);
  write(d / "ev.txt", "2\n5\n");
  auto r = run_cli(sweep_cmd(d, "o.h5", "--resume"));
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("the eviction trace 'ev.txt' changed since the sidecar was written"), std::string::npos)
      << r.err;
  write(d / "ev.txt", "1\n5\n");
  r = run_cli(sweep_cmd(d, "o.h5", "--resume"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(1 resumed"), std::string::npos) << r.out;
  fs::remove_all(d);
}

// Defects 2 and 13: merge refuses shards of different inputs and an incomplete set unless --allow-partial.
TEST(SweepInputs, MergeChecksTheFingerprintAndCompleteness) {
  const fs::path d = four_point_sweep("merge");
  for (int i = 0; i < 2; ++i) {
    const auto r = run_cli(sweep_cmd(d, "s" + std::to_string(i) + ".h5", "--shard " + std::to_string(i) + "/3"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string shards01 = "'" + (d / "s0.h5").string() + "' '" + (d / "s1.h5").string() + "'";
  auto r = run_cli("merge '" + (d / "m.h5").string() + "' " + shards01);
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("the shards hold 3 of the sweep's 4 points (1 missing"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "m.h5"));
  r = run_cli("merge --allow-partial '" + (d / "m.h5").string() + "' " + shards01);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("partial: 1 of 4 points missing"), std::string::npos) << r.out;
  // The third shard run on another version of the trace.
  write(d / "t.csv", trace_text(20, 3000));
  r = run_cli(sweep_cmd(d, "s2.h5", "--shard 2/3"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("merge '" + (d / "m2.h5").string() + "' " + shards01 + " '" + (d / "s2.h5").string() + "'");
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("the request trace 't.csv' changed between"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "m2.h5"));
  // The same trace again: the three shards merge whole, like the unsharded sweep.
  write(d / "t.csv", trace_text(20, 300));
  ASSERT_EQ(run_cli(sweep_cmd(d, "s2.h5", "--shard 2/3")).exit_code, 0);
  r = run_cli("merge '" + (d / "m3.h5").string() + "' " + shards01 + " '" + (d / "s2.h5").string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("merged 3 files, 4 points; wrote"), std::string::npos) << r.out;
  fs::remove_all(d);
}

// Defect 7: three ranges of 1,000 values (10^9 points) are refused at the [sweep] table before expansion.
TEST(SweepInputs, AGridOverTheLimitIsALocated65) {
  const fs::path d = temp_dir("grid");
  write(d / "s.toml", scenario_text("\"serving.replicas\" = { start = 1, stop = 1000, step = 1 }\n"
                                    "\"workload.duration_s\" = { start = 1, stop = 1000, step = 1 }\n"
                                    "\"slo.ttft_p99_ms\" = { start = 1, stop = 1000, step = 1 }\n"));
  write(d / "t.csv", trace_text(4, 300));
  const auto r = run_cli(sweep_cmd(d, "o.h5"));
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("s.toml:24:1: key 'sweep'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("more than 1000000 points: serving.replicas (1000) x workload.duration_s (1000) x "
                       "slo.ttft_p99_ms (1000)"),
            std::string::npos)
      << r.err;
  fs::remove_all(d);
}

// Defect 15: a sidecar with a corrupt column name is a 65 naming the sidecar's line, not 74 at the final write.
TEST(SweepInputs, ACorruptSidecarColumnIsALocated65) {
  const fs::path d = four_point_sweep("corrupt");
  ASSERT_EQ(run_cli(sweep_cmd(d, "o.h5", "--stop-after 1")).exit_code, 75);
  std::istringstream lines(read_file(d / "o.h5.partial"));
  std::string line, text;
  int number = 0, bad = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (bad == 0 && line.rfind("M\t", 0) == 0) {
      const size_t name = line.find('\t', 2) + 1;
      line.replace(name, line.find('\t', name) - name, "Bad Name");
      bad = number;
    }
    text += line + "\n";
  }
  ASSERT_GT(bad, 0);
  write(d / "o.h5.partial", text);
  const auto r = run_cli(sweep_cmd(d, "o.h5", "--resume"));
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("o.h5.partial:" + std::to_string(bad) + ": column name 'Bad Name'"), std::string::npos) << r.err;
  fs::remove_all(d);
}

// Defect 16: SIGTERM during setup exits 75 (not by the signal) and leaves nothing behind.
TEST(SweepInputs, ASignalDuringSetupExits75) {
  const fs::path d = four_point_sweep("setup");
  const auto r = run_cli(sweep_cmd(d, "o.h5", "--test-signal setup"));
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find("interrupted by SIGTERM while setting up"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "o.h5"));
  EXPECT_FALSE(has_tmp_files(d));
  fs::remove_all(d);
}

// Defect 16: SIGTERM during the final write exits 75 with the file whole, no .tmp-* file, the sidecar kept; the
// resume then only writes the file.
TEST(SweepInputs, ASignalDuringTheFinalWriteExits75) {
  const fs::path d = four_point_sweep("write");
  auto r = run_cli(sweep_cmd(d, "o.h5", "--test-signal write"));
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find("while writing"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(d / "o.h5"));
  EXPECT_TRUE(fs::exists(d / "o.h5.partial"));
  EXPECT_FALSE(has_tmp_files(d));
  r = run_cli(sweep_cmd(d, "o.h5", "--resume"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(4 resumed"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d / "o.h5.partial"));
  fs::remove_all(d);
}

// The newcomer's finding: a typo in a swept VM list is printed with its point, overrides and reason; --strict
// makes it a 65.
TEST(SweepInputs, InvalidPointsAreNamedAndStrictRefusesThem) {
  const fs::path d = temp_dir("typo");
  write(d / "s.toml",
        scenario_text("\"serving.vm_size\" = [\"Standard_NC24ads_A100_v4\", \"Standard_NC96ads_A100v4\"]\n"));
  write(d / "t.csv", trace_text(4, 300));
  auto r = run_cli(sweep_cmd(d, "o.h5"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("sweep: point 1 (serving.vm_size=\"Standard_NC96ads_A100v4\") is invalid: key "
                       "'serving.vm_size': unknown VM size 'Standard_NC96ads_A100v4'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Standard_NC96ads_A100v4"), std::string::npos);
  EXPECT_NE(r.err.find("sweep: 1 invalid point"), std::string::npos) << r.err;
  r = run_cli(sweep_cmd(d, "o2.h5", "--strict"));
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("--strict: 1 point is invalid"), std::string::npos) << r.err;
  fs::remove_all(d);
}

// Defect 1 for the sweep: -o naming the scenario, its trace or a directory is refused (74) before any point runs,
// and the input is left as it was.
TEST(SweepInputs, AnOutputThatIsAnInputIsRefusedBeforeTheRun) {
  const fs::path d = four_point_sweep("output-is-input");
  const std::string scenario = read_file(d / "s.toml"), trace = read_file(d / "t.csv");
  auto r = run_cli(sweep_cmd(d, "s.toml"));
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("is the scenario file"), std::string::npos) << r.err;
  r = run_cli(sweep_cmd(d, "t.csv"));
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("is the request trace"), std::string::npos) << r.err;
  fs::create_directories(d / "dir.h5");
  r = run_cli(sweep_cmd(d, "dir.h5"));
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(d / "s.toml"), scenario);
  EXPECT_EQ(read_file(d / "t.csv"), trace);
  EXPECT_FALSE(fs::exists(d / "s.toml.partial"));
  fs::remove_all(d);
}

}  // namespace
}  // namespace clustersim::sim
