#include "sim/sweep/distribution.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "sim/run/exit_status.hpp"
#include "sim/sweep/command_support.hpp"
#include "sim/sweep/sidecar.hpp"

namespace clustersim::sim {

GuidedScheduler::GuidedScheduler(size_t points, size_t workers)
    : points_(points), workers_(std::max<size_t>(1, workers)),
      max_chunk_(std::max<size_t>(1, points / (8 * std::max<size_t>(1, workers)))) {}

bool GuidedScheduler::next(size_t& begin, size_t& end, size_t cap, size_t weight) {
  size_t first = next_.load();
  size_t size = 0;
  do {
    if (first >= points_) return false;
    size = std::max<size_t>(1, std::min(cap, weight * (points_ - first) / (2 * workers_)));
  } while (!next_.compare_exchange_weak(first, first + size));
  begin = first;
  end = std::min(points_, first + size);
  return true;
}

namespace {

/// The first failure among the threads of a rank: its exit status and message (whole lines).
struct Failure {
  std::atomic<bool> failed{false};
  std::mutex mutex;
  int code = 0;
  std::string message;

  void set(int c, const std::string& m) {
    std::lock_guard lock(mutex);
    if (failed) return;
    code = c;
    message = m;
    failed = true;
  }
};

/// Takes every message waiting on `ranks`, each through `handle(source, bytes)` after checking that it carries
/// `tag` and comes from a rank `expected(source)` accepts (std::runtime_error naming the tag and the rank
/// otherwise). Returns whether there was any: the caller sleeps a millisecond when there was none.
template <typename Expected, typename Handle>
bool drain_messages(RankChannel& ranks, int tag, Expected&& expected, Handle&& handle) {
  int source = 0;
  int got = 0;
  std::string bytes;
  bool any = false;
  while (ranks.poll(source, got, bytes)) {
    any = true;
    if (got != tag || !expected(source)) {
      throw std::runtime_error("unexpected message (tag " + std::to_string(got) + ") from rank " +
                               std::to_string(source));
    }
    handle(source, bytes);
  }
  return any;
}

}  // namespace

std::vector<SweepRow> serve_points(RankChannel& ranks, const LoadedSweep& sweep, const models::Catalog& catalog,
                                   const std::vector<const SweepPoint*>& todo, int jobs,
                                   const std::function<void(const SweepRow&)>& on_row,
                                   const std::function<void(size_t)>& progress) {
  const size_t target = todo.size();
  std::vector<SweepRow> rows(target);
  std::map<int64_t, size_t> position;  // run_index -> position in todo
  for (size_t k = 0; k < target; ++k) position[todo[k]->index] = k;
  std::vector<int> owner(target, -1);  // the rank a point was handed to (main thread only)
  const size_t threads_per_rank = static_cast<size_t>(std::max(1, jobs));
  GuidedScheduler scheduler(target, threads_per_rank * static_cast<size_t>(ranks.size()));
  std::atomic<size_t> finished{0};
  Failure failure;

  const auto clusters = std::make_shared<ClusterCache>();  // one flow-solve memo for all threads
  const auto worker = [&] {
    std::string message;
    const int code = attempt("sweep", message, [&] {
      SweepPointRunner runner(sweep, catalog, clusters);
      size_t begin = 0;
      size_t end = 0;
      while (!failure.failed && scheduler.next(begin, end)) {
        for (size_t k = begin; k < end && !failure.failed; ++k) {
          SweepRow row = runner.run(*todo[k]);
          on_row(row);
          rows[k] = std::move(row);
          finished.fetch_add(1);
        }
      }
      return 0;
    });
    if (code != 0) failure.set(code, message);
  };
  std::vector<std::thread> threads;
  for (size_t j = 0; j < std::min(static_cast<size_t>(jobs), target); ++j) threads.emplace_back(worker);

  std::vector<RowDecoder> decoders;
  for (int r = 0; r < ranks.size(); ++r) decoders.emplace_back("the rows of rank " + std::to_string(r));
  int finals = 0;
  std::string message;
  const int code = attempt("sweep", message, [&] {
    const auto worker_rank = [&](int source) { return source > 0 && source < ranks.size(); };
    while (!failure.failed) {
      const bool busy = drain_messages(ranks, kTagRows, worker_rank, [&](int source, const std::string& bytes) {
        std::string_view text = bytes;
        size_t want = 0;
        bool final_message = false;
        for (bool header = true; !text.empty(); header = false) {
          const size_t end = text.find('\n');
          const std::string_view line = text.substr(0, end);
          text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
          if (header) {
            const auto f = split_tabs(line);
            const auto w = f.size() == 3 && f[0] == "W" ? parse_int(f[1]) : std::nullopt;
            if (!w || *w < 0 || (f[2] != "0" && f[2] != "1")) throw std::runtime_error("malformed message header");
            want = static_cast<size_t>(*w);
            final_message = f[2] == "1";
            continue;
          }
          std::optional<SweepRow> row = decoders[static_cast<size_t>(source)].decode(line);
          if (!row) continue;
          const auto it = position.find(row->index);
          if (it == position.end() || owner[it->second] != source) {
            throw std::runtime_error("rank " + std::to_string(source) + " sent point " + std::to_string(row->index) +
                                     ", which it was not given");
          }
          owner[it->second] = -2;  // received
          on_row(*row);
          rows[it->second] = std::move(*row);
          finished.fetch_add(1);
        }
        if (want > 0) {
          // The same guided rule as the threads', weighted by the rank's threads: ranks finish together.
          size_t first = 0;
          size_t last = 0;
          scheduler.next(first, last, want, threads_per_rank);
          std::string points;
          for (size_t k = first; k < last; ++k) {
            owner[k] = source;
            points += (points.empty() ? "" : "\t") + std::to_string(todo[k]->index);
          }
          ranks.send(source, kTagPoints, points);
        }
        if (final_message) ++finals;
      });
      progress(finished.load());
      if (finals == ranks.size() - 1 && finished.load() == target) break;
      if (!busy) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return 0;
  });
  if (code != 0) failure.set(code, message);
  if (failure.failed) ranks.abort(failure.code, failure.message);
  for (auto& t : threads) t.join();
  return rows;
}

void work_on_points(RankChannel& ranks, const LoadedSweep& sweep, const models::Catalog& catalog, int jobs) {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<const SweepPoint*> queue;
  size_t running = 0;
  bool no_more = false;
  std::vector<SweepRow> outbox;
  Failure failure;

  const auto clusters = std::make_shared<ClusterCache>();  // one flow-solve memo for all threads
  const auto worker = [&] {
    std::string message;
    const int code = attempt("sweep", message, [&] {
      SweepPointRunner runner(sweep, catalog, clusters);
      while (true) {
        const SweepPoint* point = nullptr;
        {
          std::unique_lock lock(mutex);
          wake.wait(lock, [&] { return !queue.empty() || no_more; });
          if (queue.empty()) break;
          point = queue.front();
          queue.pop_front();
          ++running;
        }
        SweepRow row = runner.run(*point);
        std::lock_guard lock(mutex);
        outbox.push_back(std::move(row));
        --running;
      }
      return 0;
    });
    if (code != 0) failure.set(code, message);
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);

  RowEncoder encoder;
  bool asked = false;
  std::string message;
  const int code = attempt("sweep", message, [&] {
    const auto rank_zero = [](int source) { return source == 0; };
    while (!failure.failed) {
      bool busy = drain_messages(ranks, kTagPoints, rank_zero, [&](int, const std::string& bytes) {
        std::vector<const SweepPoint*> points;
        if (!bytes.empty()) {
          for (const std::string& field : split_tabs(bytes)) {
            const auto index = parse_int(field);
            if (!index || *index < 0 || static_cast<size_t>(*index) >= sweep.points.size()) {
              throw std::runtime_error("rank 0 sent a point that is not in the sweep: '" + field + "'");
            }
            points.push_back(&sweep.points[static_cast<size_t>(*index)]);
          }
        }
        {
          std::lock_guard lock(mutex);
          if (points.empty()) no_more = true;
          queue.insert(queue.end(), points.begin(), points.end());
        }
        wake.notify_all();
        asked = false;
      });
      std::vector<SweepRow> rows;
      size_t pending = 0;
      {
        std::lock_guard lock(mutex);
        rows.swap(outbox);
        pending = queue.size() + running;
      }
      const bool done = no_more && pending == 0;
      const auto per_rank = static_cast<size_t>(jobs);
      const size_t want = !no_more && !asked && pending <= per_rank ? 2 * per_rank - pending : 0;
      if (!rows.empty() || want > 0 || done) {
        std::string text = "W\t" + std::to_string(want) + "\t" + (done ? "1" : "0") + "\n";
        for (const SweepRow& r : rows) text += encoder.encode(r);
        ranks.send(0, kTagRows, text);
        asked = asked || want > 0;
        busy = true;
      }
      if (done) break;
      if (!busy) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return 0;
  });
  if (code != 0) failure.set(code, message);
  if (failure.failed) ranks.abort(failure.code, failure.message);
  for (auto& t : threads) t.join();
}

}  // namespace clustersim::sim
