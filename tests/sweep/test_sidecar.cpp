// The sweep's row codec and sidecar (sim/sweep/sidecar.hpp): numbers and text round-trip bit for bit, a column
// list is written once, a resumed sidecar gives back its rows and ignores a torn last line, and a foreign or
// malformed file is refused.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "sim/errors.hpp"
#include "sim/sweep/sidecar.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;

fs::path temp_file(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-test-sidecar-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

std::shared_ptr<const SweepMetaList> meta() {
  static const auto m = std::make_shared<const SweepMetaList>(SweepMetaList{
      {"step_time_s", "s", "step time", false}, {"verdict", "", "memory\tverdict\nwith specials", true}});
  return m;
}

SweepRow ok_row(int64_t index, double t, std::string verdict) {
  SweepRow r;
  r.index = index;
  r.seed = 0x7fffffffffffffffULL - static_cast<uint64_t>(index);
  r.status = "ok";
  r.meta = meta();
  r.values = {t, std::move(verdict)};
  return r;
}

SweepRow invalid_row(int64_t index) {
  SweepRow r;
  r.index = index;
  r.seed = 3;
  r.status = "invalid";
  r.reason = "--set:1:1: parallelism.tensor: must divide\\heads";
  return r;
}

/// A fingerprint of one part (the scenario's hash `h`).
std::vector<FingerprintPart> fp(const std::string& h) { return {{"scenario", h}, {"shard", "0/1"}}; }

void expect_same(const SweepRow& a, const SweepRow& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.reason, b.reason);
  ASSERT_EQ(static_cast<bool>(a.meta), static_cast<bool>(b.meta));
  if (a.meta) {
    EXPECT_EQ(*a.meta, *b.meta);
  }
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t k = 0; k < a.values.size(); ++k) {
    if (std::holds_alternative<double>(a.values[k])) {
      ASSERT_TRUE(std::holds_alternative<double>(b.values[k]));
      EXPECT_EQ(std::bit_cast<uint64_t>(std::get<double>(a.values[k])),
                std::bit_cast<uint64_t>(std::get<double>(b.values[k])));
    } else {
      EXPECT_EQ(std::get<std::string>(a.values[k]), std::get<std::string>(b.values[k]));
    }
  }
}

TEST(RowCodec, NumbersRoundTripBitForBit) {
  for (const double v : {0.0, -0.0, 0.1, 1.0 / 3.0, 6.02214076e23, 4.9e-324, std::numeric_limits<double>::max(),
                         std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN()}) {
    const auto back = parse_number(number_text(v));
    ASSERT_TRUE(back) << number_text(v);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(*back));
      EXPECT_EQ(std::signbit(*back), std::signbit(v));
    } else {
      EXPECT_EQ(std::bit_cast<uint64_t>(*back), std::bit_cast<uint64_t>(v)) << number_text(v);
    }
  }
  EXPECT_EQ(number_text(0.1), "0.1");
  EXPECT_FALSE(parse_number("1.5x"));
  EXPECT_FALSE(parse_number(""));
}

TEST(RowCodec, TextWithTabsNewlinesAndBackslashesRoundTrips) {
  const std::string field = "a\tb\nc\rd\\e\\t";
  const std::string line = escape(field) + "\t" + escape("") + "\t" + escape("plain");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(split_tabs(line), (std::vector<std::string>{field, "", "plain"}));
}

TEST(RowCodec, ColumnListWrittenOnceAndRowsDecodeIdentically) {
  RowEncoder encoder;
  const std::vector<SweepRow> rows{ok_row(0, 1.25, "fits"), invalid_row(1),
                                   ok_row(2, std::numeric_limits<double>::quiet_NaN(), "OOM\tby 3 GiB")};
  std::string text;
  for (const SweepRow& r : rows) text += encoder.encode(r);
  size_t m_lines = 0;
  std::istringstream lines(text);
  std::string line;
  RowDecoder decoder("test");
  std::vector<SweepRow> back;
  while (std::getline(lines, line)) {
    if (line.rfind("M\t", 0) == 0) ++m_lines;
    if (auto r = decoder.decode(line)) back.push_back(std::move(*r));
  }
  EXPECT_EQ(m_lines, 1u);
  ASSERT_EQ(back.size(), rows.size());
  for (size_t k = 0; k < rows.size(); ++k) expect_same(rows[k], back[k]);
  // Decoded rows share one column list, as the encoded ones did.
  EXPECT_EQ(back[0].meta.get(), back[2].meta.get());
}

TEST(RowCodec, MalformedLinesAreDataErrorsNamingTheSource) {
  RowDecoder decoder("rank 3");
  EXPECT_THROW(decoder.decode("X\t1"), DataError);
  EXPECT_THROW(decoder.decode("R\tnot-a-number\t1\tok\t\t-1"), DataError);
  try {
    decoder.decode("R\t4\t1\tok\t\t7\t1.0");  // column list 7 was never sent
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos);
  }
}

TEST(Sidecar, ResumeReadsTheFinishedRowsAndIgnoresATornLastLine) {
  const fs::path path = temp_file("resume.h5.partial");
  {
    std::map<int64_t, SweepRow> none;
    Sidecar sidecar(path, fp("1"), false, none);
    sidecar.append(ok_row(5, 2.5, "fits"));
    sidecar.append(invalid_row(6));
  }
  {
    std::ofstream torn(path, std::ios::app | std::ios::binary);
    torn << "R\t7\t1\tok\t\t0\t3.";  // killed mid-write: no newline
  }
  std::map<int64_t, SweepRow> done;
  {
    Sidecar sidecar(path, fp("1"), true, done);
    ASSERT_EQ(done.size(), 2u);
    expect_same(done.at(5), ok_row(5, 2.5, "fits"));
    expect_same(done.at(6), invalid_row(6));
    sidecar.append(ok_row(7, 3.5, "fits"));  // written where the torn line was
  }
  std::map<int64_t, SweepRow> again;
  Sidecar reread(path, fp("1"), true, again);
  ASSERT_EQ(again.size(), 3u);
  expect_same(again.at(7), ok_row(7, 3.5, "fits"));
  reread.remove();
  EXPECT_FALSE(fs::exists(path));
}

TEST(Sidecar, AnotherSweepsOrAForeignFileIsRefused) {
  const fs::path path = temp_file("foreign.h5.partial");
  {
    std::map<int64_t, SweepRow> none;
    Sidecar sidecar(path, fp("A"), false, none);
  }
  std::map<int64_t, SweepRow> done;
  EXPECT_THROW(Sidecar(path, fp("B"), true, done), DataError);
  std::ofstream(path) << "hello\n";
  EXPECT_THROW(Sidecar(path, fp("A"), true, done), DataError);
  // Without --resume the file is simply started afresh.
  EXPECT_NO_THROW(Sidecar(path, fp("B"), false, done));
}

/// The DataError message of opening `path` for --resume (with `check`), or "" when it opens.
std::string resume_error(const fs::path& path, const std::vector<FingerprintPart>& parts,
                         const Sidecar::RowCheck& check = {}) {
  std::map<int64_t, SweepRow> done;
  try {
    Sidecar sidecar(path, parts, true, done, check);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

// Issue 26, defect 2: the sidecar says which input changed.
TEST(Sidecar, AChangedInputIsNamed) {
  const fs::path path = temp_file("changed.h5.partial");
  const std::vector<FingerprintPart> was{{"scenario", "1"}, {"request trace 't.csv'", "2"}, {"points", "3"}};
  {
    std::map<int64_t, SweepRow> none;
    Sidecar sidecar(path, was, false, none);
  }
  std::vector<FingerprintPart> now = was;
  now[0].hash = "9";
  now[2].hash = "9";
  const std::string scenario = resume_error(path, now);
  EXPECT_NE(scenario.find(path.string() + ":1: the scenario changed since the sidecar was written"), std::string::npos)
      << scenario;
  EXPECT_EQ(scenario.find("points"), std::string::npos) << scenario;  // a consequence, not named beside a cause
  now = was;
  now[1].hash = "9";
  EXPECT_NE(resume_error(path, now).find("the request trace 't.csv' changed since the sidecar was written"),
            std::string::npos);
  EXPECT_EQ(resume_error(path, was), "");
  // A sidecar of the old format (a hash of the scenario's path) is refused, not trusted.
  std::ofstream(path) << "clustersim-sweep-partial\t1\t0123456789abcdef\n";
  EXPECT_NE(resume_error(path, was).find("older clustersim"), std::string::npos);
}

// Issue 26, defects 15 and 18: every field of a sidecar is checked, and an error names the file and line (65).
TEST(Sidecar, CorruptFieldsAreDataErrorsWithTheLine) {
  const fs::path path = temp_file("corrupt.h5.partial");
  const auto with = [&](const std::string& lines) {
    std::ofstream(path, std::ios::binary) << "clustersim-sweep-partial\t2\tscenario\tA\tshard\t0/1\n" << lines;
    return resume_error(path, fp("A"));
  };
  const std::string ok_meta = "M\t0\tstep_time_s\td\ts\tstep\n";
  EXPECT_EQ(with(ok_meta + "R\t0\t5\tok\t\t0\t1.5\n"), "");
  const std::string name = with("M\t0\tStep Time!\td\ts\tstep\n");
  EXPECT_NE(name.find(path.string() + ":2: column name 'Step Time!' is not [a-z0-9_]+"), std::string::npos) << name;
  EXPECT_NE(with("M\t0\tstep_time_s\tx\ts\tstep\n").find(":2: column type 'x'"), std::string::npos);
  const std::string status = with(ok_meta + "R\t0\t5\tdone\t\t0\t1.5\n");
  EXPECT_NE(status.find(path.string() + ":3: status 'done' of point 0"), std::string::npos) << status;
  EXPECT_NE(with(ok_meta + "R\t0\t-5\tok\t\t0\t1.5\n").find(":3: malformed line: '-5' is not an integer"),
            std::string::npos);
  EXPECT_NE(with(ok_meta + "R\t0\t5x\tok\t\t0\t1.5\n").find(":3:"), std::string::npos);
  EXPECT_NE(with(ok_meta + "R\t0\t5\tok\t\t-1\n").find(":3: point 0 is ok and has no columns"), std::string::npos);
  EXPECT_NE(with(ok_meta + "R\t0\t5\tok\t\t0\tfast\n").find(":3: malformed number"), std::string::npos);
  // The seed checked against the sweep's point (the check sweep_command passes).
  std::ofstream(path, std::ios::binary) << "clustersim-sweep-partial\t2\tscenario\tA\tshard\t0/1\n"
                                        << ok_meta << "R\t0\t5\tok\t\t0\t1.5\n";
  const std::string seed = resume_error(path, fp("A"), [](const SweepRow& r) {
    return r.seed == 7 ? std::string() : "point 0 has seed " + std::to_string(r.seed) + ", the sweep gives it 7";
  });
  EXPECT_NE(seed.find(path.string() + ":3: point 0 has seed 5"), std::string::npos) << seed;
}

// Issue 26, defect 10/17 for sidecars: a FIFO is refused (65), never opened and waited on.
TEST(Sidecar, AFifoIsRefused) {
  const fs::path path = temp_file("fifo.h5.partial");
  fs::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const std::string e = resume_error(path, fp("A"));
  EXPECT_NE(e.find(path.string()), std::string::npos) << e;
  EXPECT_NE(e.find("FIFO"), std::string::npos) << e;
  fs::remove(path);
}

// Issue 26, defect 10 for sidecars: an endless device is refused before it is read (65), not read for gigabytes.
TEST(Sidecar, ADeviceIsRefused) {
  const std::string e = resume_error("/dev/zero", fp("A"));
  EXPECT_EQ(e.rfind("/dev/zero: ", 0), 0u) << e;
}

}  // namespace
}  // namespace clustersim::sim
