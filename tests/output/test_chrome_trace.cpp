// Tests of the Chrome trace (sim/output/chrome_trace.hpp) on a hand-made PipelineResult (2 stages, 2
// microbatches), independent of the executor: exact event text, tracks and names, lanes for overlapping
// transfers, JSON escaping, determinism, atomic writing, and a structural check with Python's json module
// (what chrome://tracing and Perfetto need) when /usr/bin/python3 exists.
#include "sim/output/chrome_trace.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/cli.hpp"
#include "tests/support/files.hpp"

namespace {

namespace fs = std::filesystem;
using clustersim::sim::ChromeTraceInfo;
using clustersim::sim::PipelineResult;
using clustersim::sim::SpanKind;
using clustersim::sim::StageBreakdown;
using clustersim::sim::TraceSpan;
using clustersim::units::microseconds;

TraceSpan span(int64_t stage, SpanKind kind, int64_t mb, double start_us, double end_us, double tp_us = 0.0,
               int64_t chunk = 0) {
  TraceSpan s;
  s.stage = stage;
  s.chunk = chunk;
  s.microbatch = mb;
  s.kind = kind;
  s.start = microseconds(start_us);
  s.end = microseconds(end_us);
  s.tp_comm = microseconds(tp_us);
  return s;
}

/// 1F1B on 2 stages with 2 microbatches (times in µs): forward 10 (2 of it TP), backward 20 (4 of it TP),
/// transfers 1, then gradient sync and Adam on each stage.
PipelineResult two_stage_pipeline() {
  PipelineResult r;
  r.stages.resize(2);
  r.step_time = microseconds(103.0);
  r.critical_stage = 0;
  r.spans = {
      span(0, SpanKind::forward, 0, 0, 10, 2),     span(0, SpanKind::forward, 1, 10, 20, 2),
      span(1, SpanKind::p2p, 0, 10, 11),           span(1, SpanKind::forward, 0, 11, 21, 2),
      span(1, SpanKind::p2p, 1, 20, 21),           span(1, SpanKind::backward, 0, 21, 41, 4),
      span(0, SpanKind::p2p, 0, 41, 42),           span(1, SpanKind::forward, 1, 41, 51, 2),
      span(0, SpanKind::backward, 0, 42, 62, 4),   span(1, SpanKind::backward, 1, 51, 71, 4),
      span(0, SpanKind::p2p, 1, 71, 72),           span(1, SpanKind::grad_sync, -1, 71, 79),
      span(1, SpanKind::optimizer, -1, 79, 82),    span(0, SpanKind::backward, 1, 72, 92, 4),
      span(0, SpanKind::grad_sync, -1, 92, 100),   span(0, SpanKind::optimizer, -1, 100, 103),
  };
  return r;
}

ChromeTraceInfo sample_info() {
  ChromeTraceInfo info;
  info.scenario = "two-stage test";
  info.tensor_parallel = 4;
  info.data_parallel = 2;
  info.microbatches = 2;
  info.other_data = {{"software_version", "0.1.0"}};
  return info;
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(ChromeTrace, ProcessesThreadsAndCompleteEvents) {
  const std::string json = clustersim::sim::chrome_trace_json(two_stage_pipeline(), sample_info());
  EXPECT_EQ(json.rfind("{\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"scenario\": \"two-stage test\"", 0), 0u)
      << json.substr(0, 200);
  EXPECT_TRUE(contains(json, "\"pipeline_parallel\": 2, \"data_parallel\": 2, \"microbatches\": 2, "
                             "\"step_time_s\": 0.000103000"));
  EXPECT_TRUE(contains(json, "\"software_version\": \"0.1.0\"}"));
  // One process per stage, named with its GPUs (t * d = 8 consecutive ranks each).
  EXPECT_TRUE(contains(json, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": "
                             "\"stage 0 (GPUs 0-7)\"}}"));
  EXPECT_TRUE(contains(json, "\"pid\": 2, \"args\": {\"name\": \"stage 1 (GPUs 8-15)\"}}"));
  // Threads: compute, tp comm, p2p, dp sync, optimizer on each stage; tids above the pids, unique overall.
  int tid = 3;
  for (const char* pid : {"1", "2"}) {
    for (const char* stream : {"compute", "tp comm", "p2p", "dp sync", "optimizer"}) {
      EXPECT_TRUE(contains(json, std::string("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": ") + pid +
                                     ", \"tid\": " + std::to_string(tid) + ", \"args\": {\"name\": \"" + stream +
                                     "\"}}"))
          << pid << " " << stream;
      ++tid;
    }
  }
  // Passes on compute, their TP part at their end on "tp comm", transfers, tail.
  EXPECT_TRUE(contains(json, "{\"name\": \"F mb 0\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 0.000, "
                             "\"dur\": 10.000, \"pid\": 1, \"tid\": 3, \"args\": {\"microbatch\": 0, \"chunk\": 0, "
                             "\"tp_comm_us\": 2.000}}"));
  EXPECT_TRUE(contains(json, "{\"name\": \"tp comm F mb 0\", \"cat\": \"tp_comm\", \"ph\": \"X\", \"ts\": 8.000, "
                             "\"dur\": 2.000, \"pid\": 1, \"tid\": 4, \"args\": {\"microbatch\": 0, \"chunk\": 0}}"));
  EXPECT_TRUE(contains(json, "{\"name\": \"tp comm B mb 1\", \"cat\": \"tp_comm\", \"ph\": \"X\", \"ts\": 88.000, "
                             "\"dur\": 4.000, \"pid\": 1, \"tid\": 4,"));
  EXPECT_TRUE(contains(json, "{\"name\": \"recv act mb 1\", \"cat\": \"p2p\", \"ph\": \"X\", \"ts\": 20.000, "
                             "\"dur\": 1.000, \"pid\": 2, \"tid\": 10,"));
  EXPECT_TRUE(contains(json, "{\"name\": \"recv grad mb 0\", \"cat\": \"p2p\", \"ph\": \"X\", \"ts\": 41.000, "
                             "\"dur\": 1.000, \"pid\": 1, \"tid\": 5,"));
  EXPECT_TRUE(contains(json, "{\"name\": \"grad sync\", \"cat\": \"dp_sync\", \"ph\": \"X\", \"ts\": 92.000, "
                             "\"dur\": 8.000, \"pid\": 1, \"tid\": 6, \"args\": {}}"));
  EXPECT_TRUE(contains(json, "{\"name\": \"adam\", \"cat\": \"optimizer\", \"ph\": \"X\", \"ts\": 79.000, "
                             "\"dur\": 3.000, \"pid\": 2, \"tid\": 12, \"args\": {}}"));
  EXPECT_FALSE(contains(json, "chunk 0\""));  // no chunk in names without interleaving
  EXPECT_FALSE(contains(json, " #2"));        // no overlapping spans, no extra lanes
  // 16 spans + 8 TP children; 2 x 2 process and 10 x 2 thread metadata events.
  std::size_t x = 0;
  std::size_t m = 0;
  for (std::size_t p = json.find("\"ph\": \""); p != std::string::npos; p = json.find("\"ph\": \"", p + 1)) {
    (json[p + 7] == 'X' ? x : m) += 1;
  }
  EXPECT_EQ(x, 24u);
  EXPECT_EQ(m, 24u);
}

// The trace says the fidelity that ran (issue 28: a full-fidelity trace said "replica").
TEST(ChromeTrace, SaysTheFidelityThatRan) {
  ChromeTraceInfo info = sample_info();
  const std::string replica = clustersim::sim::chrome_trace_json(two_stage_pipeline(), info);
  EXPECT_TRUE(contains(replica, "\"fidelity\": \"replica: ")) << replica.substr(0, 400);
  EXPECT_FALSE(contains(replica, "\"fidelity\": \"full"));
  info.full_fidelity = true;
  const std::string full = clustersim::sim::chrome_trace_json(two_stage_pipeline(), info);
  EXPECT_TRUE(contains(full, "\"fidelity\": \"full: every data-parallel replica of a stage simulated ("))
      << full.substr(0, 400);
  EXPECT_FALSE(contains(full, "\"fidelity\": \"replica"));
}

TEST(ChromeTrace, OutputIsSortedAndIndependentOfSpanOrder) {
  PipelineResult a = two_stage_pipeline();
  PipelineResult b = a;
  std::reverse(b.spans.begin(), b.spans.end());
  const std::string ja = clustersim::sim::chrome_trace_json(a, sample_info());
  EXPECT_EQ(ja, clustersim::sim::chrome_trace_json(b, sample_info()));
  EXPECT_EQ(ja, clustersim::sim::chrome_trace_json(a, sample_info()));
  // Complete events come by pid, tid, then time: stage 0's compute track is F0 F1 B0 B1.
  const auto f0 = ja.find("\"F mb 0\"");
  const auto f1 = ja.find("\"F mb 1\"");
  const auto b0 = ja.find("\"B mb 0\"");
  const auto b1 = ja.find("\"B mb 1\"");
  EXPECT_LT(f0, f1);
  EXPECT_LT(f1, b0);
  EXPECT_LT(b0, b1);
  EXPECT_LT(ja.rfind("\"ph\": \"M\""), ja.find("\"ph\": \"X\""));  // metadata first
}

TEST(ChromeTrace, OverlappingTransfersGoToExtraLanes) {
  PipelineResult r;
  r.stages.resize(2);
  r.step_time = microseconds(100.0);
  r.spans = {span(0, SpanKind::forward, 0, 0, 5), span(0, SpanKind::forward, 1, 5, 10),
             span(1, SpanKind::p2p, 0, 5, 30),    span(1, SpanKind::p2p, 1, 10, 35),
             span(1, SpanKind::forward, 0, 30, 35), span(1, SpanKind::forward, 1, 35, 40)};
  const std::string json = clustersim::sim::chrome_trace_json(r, sample_info());
  EXPECT_TRUE(contains(json, "\"args\": {\"name\": \"p2p\"}}")) << json;
  EXPECT_TRUE(contains(json, "\"args\": {\"name\": \"p2p #2\"}}")) << json;
  EXPECT_TRUE(contains(json, "{\"name\": \"recv act mb 0\", \"cat\": \"p2p\", \"ph\": \"X\", \"ts\": 5.000"));
  EXPECT_TRUE(contains(json, "{\"name\": \"recv act mb 1\", \"cat\": \"p2p\", \"ph\": \"X\", \"ts\": 10.000"));
  // A transfer that ends when the next begins shares the lane.
  r.spans[3] = span(1, SpanKind::p2p, 1, 30, 35);
  EXPECT_FALSE(contains(clustersim::sim::chrome_trace_json(r, sample_info()), "p2p #2"));
}

TEST(ChromeTrace, InterleavedNamesCarryTheChunkAndZeroParamGatherIsNamed) {
  PipelineResult r;
  r.stages.resize(1);
  r.step_time = microseconds(10.0);
  r.spans = {span(0, SpanKind::forward, 0, 0, 1, 0, 0), span(0, SpanKind::p2p, 0, 1, 2, 0, 1),
             span(0, SpanKind::forward, 0, 2, 3, 0, 1), span(0, SpanKind::backward, 0, 3, 5, 0, 1),
             span(0, SpanKind::grad_sync, -1, 5, 6),    span(0, SpanKind::optimizer, -1, 6, 7),
             span(0, SpanKind::grad_sync, -1, 7, 8)};
  ChromeTraceInfo info = sample_info();
  info.tensor_parallel = 1;
  info.data_parallel = 1;
  const std::string json = clustersim::sim::chrome_trace_json(r, info);
  EXPECT_TRUE(contains(json, "\"stage 0 (GPU 0)\"")) << json;
  EXPECT_TRUE(contains(json, "\"name\": \"F mb 0 chunk 0\""));
  EXPECT_TRUE(contains(json, "\"name\": \"F mb 0 chunk 1\""));
  EXPECT_TRUE(contains(json, "\"name\": \"B mb 0 chunk 1\""));
  EXPECT_TRUE(contains(json, "\"name\": \"recv act mb 0 chunk 1\""));
  EXPECT_TRUE(contains(json, "\"name\": \"grad sync\", \"cat\": \"dp_sync\", \"ph\": \"X\", \"ts\": 5.000"));
  EXPECT_TRUE(contains(json, "\"name\": \"param all-gather\", \"cat\": \"dp_sync\", \"ph\": \"X\", \"ts\": 7.000"));
  EXPECT_FALSE(contains(json, "tp comm"));  // no TP time, no TP track
}

TEST(ChromeTrace, StringsAreEscaped) {
  ChromeTraceInfo info = sample_info();
  info.scenario = std::string("a\"b\\c\nd\x01" "e\xff\xc3(") + "✓";
  const std::string json = clustersim::sim::chrome_trace_json(two_stage_pipeline(), info);
  EXPECT_TRUE(contains(json, "\"scenario\": \"a\\\"b\\\\c\\nd\\u0001e\\ufffd\\ufffd(✓\"")) << json.substr(0, 200);
}

TEST(ChromeTrace, InconsistentInputThrows) {
  PipelineResult r = two_stage_pipeline();
  r.spans.push_back(span(2, SpanKind::forward, 0, 0, 1));
  EXPECT_THROW(clustersim::sim::chrome_trace_json(r, sample_info()), std::logic_error);
  r = two_stage_pipeline();
  r.spans.push_back(span(0, SpanKind::forward, 0, 5, 4));
  EXPECT_THROW(clustersim::sim::chrome_trace_json(r, sample_info()), std::logic_error);
  ChromeTraceInfo info = sample_info();
  info.other_data.push_back({"scenario", "x"});
  EXPECT_THROW(clustersim::sim::chrome_trace_json(two_stage_pipeline(), info), std::invalid_argument);
  info = sample_info();
  info.other_data.push_back({"software_version", "x"});
  EXPECT_THROW(clustersim::sim::chrome_trace_json(two_stage_pipeline(), info), std::invalid_argument);
}

TEST(ChromeTrace, WritesAtomically) {
  clustersim::testing::TempDir dir("clustersim-trace-");
  const fs::path path = dir.path() / "t.json";
  std::ofstream(path) << "old contents";
  fs::create_hard_link(path, dir.path() / "old_link");  // a rename leaves the old inode alone
  clustersim::sim::write_chrome_trace(path, two_stage_pipeline(), sample_info());
  EXPECT_EQ(clustersim::testing::read_file(path), clustersim::sim::chrome_trace_json(two_stage_pipeline(), sample_info()));
  EXPECT_EQ(clustersim::testing::read_file(dir.path() / "old_link"), "old contents");
  EXPECT_EQ(clustersim::testing::entries(dir.path()), (std::vector<std::string>{"old_link", "t.json"}));  // no temp file left

  const fs::path missing = dir.path() / "missing" / "t.json";
  try {
    clustersim::sim::write_chrome_trace(missing, two_stage_pipeline(), sample_info());
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), missing.string())) << e.what();
  }
  // The target is a non-empty directory: the temp file is written, then rename() fails and it is removed.
  const fs::path busy = dir.path() / "busy.json";
  fs::create_directory(busy);
  std::ofstream(busy / "keep") << "x";
  try {
    clustersim::sim::write_chrome_trace(busy, two_stage_pipeline(), sample_info());
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), "rename")) << e.what();
  }
  EXPECT_EQ(clustersim::testing::entries(dir.path()), (std::vector<std::string>{"busy.json", "old_link", "t.json"}));
}

/// Loads the trace with Python's json module and checks what chrome://tracing and Perfetto rely on.
const char* const kCheckTrace = R"PY(
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    d = json.load(f)
assert d["displayTimeUnit"] == "ms"
ev = d["traceEvents"]
assert isinstance(ev, list) and len(ev) > 0
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
threads = {e["tid"]: (e["pid"], e["args"]["name"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
xs = [e for e in ev if e["ph"] == "X"]
assert xs
for e in xs:
    for k in ("name", "cat", "ts", "dur", "pid", "tid", "args"):
        assert k in e, (k, e)
    assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)), e
    assert e["ts"] >= 0 and e["dur"] >= 0, e
    assert e["pid"] in procs, e
    assert threads[e["tid"]][0] == e["pid"], e       # named thread of this process
assert not set(procs) & set(threads)                   # tids and pids disjoint (Perfetto)
tracks = {}
for e in xs:
    tracks.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
for tid, spans in tracks.items():                      # complete events on a thread must not overlap
    spans.sort()
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert b0 >= a1 - 1e-6, (threads[tid], a0, a1, b0, b1)  # 1 ps: float rounding of ts + dur
want_stages = int(sys.argv[2])
assert sorted(procs) == list(range(1, want_stages + 1)), procs
assert {e["pid"] for e in xs} == set(procs), "every stage has events"
for pid, name in procs.items():
    assert name.startswith("stage %d (GPU" % (pid - 1)), name
names = {e["name"] for e in xs}
for n in sys.argv[3:]:
    assert n in names, (n, sorted(names)[:20])
print("ok", len(xs))
)PY";

std::pair<int, std::string> check_with_python(const fs::path& trace, int stages, const std::string& names) {
  return clustersim::testing::run_command("/usr/bin/python3 -c '" + std::string(kCheckTrace) + "' '" + trace.string() + "' " +
                     std::to_string(stages) + " " + names);
}

TEST(ChromeTrace, LoadsAsJsonWithTheStructureTraceViewersNeed) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
  clustersim::testing::TempDir dir("clustersim-trace-");
  const fs::path path = dir.path() / "t.json";
  ChromeTraceInfo info = sample_info();
  info.scenario = std::string("quote\" back\\slash\nnewline ✓ \x02");
  clustersim::sim::write_chrome_trace(path, two_stage_pipeline(), info);
  const auto [rc, out] = check_with_python(
      path, 2, "'F mb 0' 'B mb 1' 'tp comm F mb 1' 'recv act mb 0' 'recv grad mb 1' 'grad sync' adam");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(contains(out, "ok 24")) << out;
  const auto [rc2, out2] =
      clustersim::testing::run_command("/usr/bin/python3 -c 'import json,sys; "
                  "print(repr(json.load(open(sys.argv[1]))[\"otherData\"][\"scenario\"]))' '" + path.string() + "'");
  EXPECT_EQ(rc2, 0) << out2;
  EXPECT_EQ(out2, "'quote\" back\\\\slash\\nnewline ✓ \\x02'\n");
}

}  // namespace
