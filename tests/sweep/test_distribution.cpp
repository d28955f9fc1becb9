// The spreading of a sweep's points (sim/sweep/distribution.hpp): the guided scheduler hands every point out
// exactly once in shrinking contiguous chunks, and the rank protocol, run over an in-memory channel between two
// threads standing for two MPI ranks, gives the rows run_sweep gives.
#include <gtest/gtest.h>

#include <bit>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/sweep/distribution.hpp"

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;

TEST(GuidedScheduler, EveryPointOnceInShrinkingContiguousChunks) {
  GuidedScheduler s(1000, 4);
  EXPECT_EQ(s.max_chunk(), 31u);  // 1000 / (8 x 4)
  std::vector<int> seen(1000, 0);
  std::vector<size_t> sizes;
  size_t begin = 0, end = 0, expected_begin = 0;
  while (s.next(begin, end)) {
    EXPECT_EQ(begin, expected_begin);
    ASSERT_GT(end, begin);
    for (size_t k = begin; k < end; ++k) ++seen[k];
    sizes.push_back(end - begin);
    expected_begin = end;
  }
  for (const int n : seen) EXPECT_EQ(n, 1);
  EXPECT_EQ(sizes.front(), 31u);         // capped while much is left
  EXPECT_EQ(sizes.back(), 1u);           // one at a time at the end
  for (size_t i = 1; i < sizes.size(); ++i) EXPECT_LE(sizes[i], sizes[i - 1]);
  EXPECT_FALSE(s.next(begin, end));
}

TEST(GuidedScheduler, ARemoteRankGetsItsThreadsShareUpToWhatItAsks) {
  GuidedScheduler s(800, 8);  // 2 ranks x 4 threads
  size_t begin = 0, end = 0;
  ASSERT_TRUE(s.next(begin, end, 1000, 4));
  EXPECT_EQ(end - begin, 200u);  // 4 x 800 / (2 x 8): the rank's half of the first half
  ASSERT_TRUE(s.next(begin, end, 8, 4));
  EXPECT_EQ(end - begin, 8u);  // no more than it asked for
}

/// Two ranks in one process: each rank's mailbox, guarded by one mutex.
struct Network {
  struct Message {
    int source;
    int tag;
    std::string bytes;
  };
  std::mutex mutex;
  std::deque<Message> inbox[2];
};

class MemoryRank final : public RankChannel {
 public:
  MemoryRank(Network& net, int rank) : net_(net), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  void send(int dest, int tag, const std::string& bytes) override {
    std::lock_guard lock(net_.mutex);
    net_.inbox[dest].push_back({rank_, tag, bytes});
  }
  bool poll(int& source, int& tag, std::string& bytes) override {
    std::lock_guard lock(net_.mutex);
    auto& box = net_.inbox[rank_];
    if (box.empty()) return false;
    source = box.front().source;
    tag = box.front().tag;
    bytes = std::move(box.front().bytes);
    box.pop_front();
    return true;
  }
  [[noreturn]] void abort(int code, const std::string& message) override {
    throw std::runtime_error("abort " + std::to_string(code) + ": " + message);
  }

 private:
  Network& net_;
  int rank_;
};

const models::Catalog& catalog() {
  static const models::Catalog c = models::Catalog::load(models::Catalog::default_directory());
  return c;
}

fs::path small_sweep() {
  const fs::path dir = fs::temp_directory_path() / ("clustersim-test-distribution-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "sweep.toml";
  std::ofstream(path) << "schema_version = 1\nname = \"distribution-test\"\n"
                         "[model]\nnum_layers = 8\nhidden_size = 1024\nnum_attention_heads = 16\n"
                         "vocab_size = 51200\nseq_length = 1024\n"
                         "[training]\nglobal_batch_size = 64\n"
                         "[cluster]\nvm_size = \"Standard_ND96amsr_A100_v4\"\nnodes = 2\n"
                         "[sweep]\n\"parallelism.tensor\" = [1, 2, 4, 3]\n"
                         "\"training.micro_batch_size\" = [1, 2, 4]\n";
  return path;
}

/// The two rows' values are equal, doubles bit for bit (NaN included).
void expect_same_values(const SweepRow& a, const SweepRow& b) {
  ASSERT_EQ(a.values.size(), b.values.size()) << "point " << a.index;
  for (size_t v = 0; v < a.values.size(); ++v) {
    if (const auto* d = std::get_if<double>(&a.values[v])) {
      ASSERT_TRUE(std::holds_alternative<double>(b.values[v]));
      EXPECT_EQ(std::bit_cast<uint64_t>(std::get<double>(b.values[v])), std::bit_cast<uint64_t>(*d))
          << "point " << a.index << ", column " << v;
    } else {
      EXPECT_EQ(a.values[v], b.values[v]) << "point " << a.index << ", column " << v;
    }
  }
}

TEST(RankProtocol, TwoRanksGiveTheRowsOfOneProcess) {
  const LoadedSweep sweep = load_sweep(small_sweep(), {}, catalog());
  ASSERT_EQ(sweep.points.size(), 12u);
  std::vector<const SweepPoint*> todo;
  for (const SweepPoint& p : sweep.points) todo.push_back(&p);
  const std::vector<SweepRow> serial = run_sweep(sweep, catalog(), todo, SweepRunOptions{});

  Network net;
  MemoryRank root(net, 0), other(net, 1);
  std::thread worker([&] { work_on_points(other, sweep, catalog(), 2); });
  std::mutex on_row_mutex;
  size_t appended = 0;
  const std::vector<SweepRow> spread = serve_points(
      root, sweep, catalog(), todo, 1,
      [&](const SweepRow&) {
        std::lock_guard lock(on_row_mutex);
        ++appended;
      },
      [](size_t) {});
  worker.join();
  EXPECT_EQ(appended, 12u);
  ASSERT_EQ(spread.size(), serial.size());
  size_t invalid = 0;
  for (size_t k = 0; k < serial.size(); ++k) {
    EXPECT_EQ(spread[k].index, serial[k].index);
    EXPECT_EQ(spread[k].status, serial[k].status);
    EXPECT_EQ(spread[k].reason, serial[k].reason);
    invalid += serial[k].status == "invalid";
    expect_same_values(serial[k], spread[k]);
  }
  EXPECT_EQ(invalid, 3u);  // tensor 3 does not divide 16 heads
}

TEST(RankProtocol, ThreadsShareOneClusterCacheAndGiveTheSameRows) {
  // Several threads on one ClusterCache hash and solve the same communication patterns at once (the case
  // ThreadSanitizer checks: `make tsan`); the rows do not depend on the number of threads.
  const LoadedSweep sweep = load_sweep(small_sweep(), {}, catalog());
  std::vector<const SweepPoint*> todo;
  for (const SweepPoint& p : sweep.points) todo.push_back(&p);
  const std::vector<SweepRow> one = run_sweep(sweep, catalog(), todo, SweepRunOptions{});
  SweepRunOptions four;
  four.jobs = 4;
  const std::vector<SweepRow> many = run_sweep(sweep, catalog(), todo, four);
  ASSERT_EQ(one.size(), many.size());
  for (size_t k = 0; k < one.size(); ++k) {
    EXPECT_EQ(one[k].status, many[k].status);
    expect_same_values(one[k], many[k]);
  }
}

}  // namespace
}  // namespace clustersim::sim
