// SweepRanks for `clustersim-mpi`: the ranks of MPI_COMM_WORLD (sim/sweep/mpi_ranks.hpp). The only translation
// unit that includes <mpi.h>. Waits poll (MPI_Test, then a 1 ms sleep) rather than block, because Open MPI's
// blocking calls spin a core that the worker threads of the same rank would rather use.
#include "sim/sweep/mpi_ranks.hpp"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <list>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace clustersim::sim {

namespace {

/// Completes `request`, sleeping 1 ms between tests.
void wait_for(MPI_Request& request) {
  int done = 0;
  MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  while (done == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  }
}

/// Collective: the number of ranks on this machine (those that can share memory).
int local_ranks() {
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int n = 1;
  MPI_Comm_size(local, &n);
  MPI_Comm_free(&local);
  return n;
}

}  // namespace

/// Sends in flight: each request with the bytes it reads (list nodes do not move).
struct SweepRanks::Pending {
  struct Send {
    MPI_Request request = MPI_REQUEST_NULL;
    std::string bytes;
  };
  std::list<Send> sends;

  /// Drops the sends that have completed.
  void progress() {
    for (auto it = sends.begin(); it != sends.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done != 0 ? sends.erase(it) : std::next(it);
    }
  }
};

SweepRanks::SweepRanks() : pending_(std::make_unique<Pending>()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  local_size_ = local_ranks();
}

SweepRanks::~SweepRanks() {
  pending_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized == 0) MPI_Finalize();
}

int SweepRanks::default_threads() const {
  const int cpus = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  int allowed = cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) allowed = std::max(1, CPU_COUNT(&set));
  return std::max(1, std::min(allowed, cpus / std::max(1, local_size_)));
}

int SweepRanks::agree(int code, const std::string& message, uint64_t check) {
  const int64_t mine[2] = {code, static_cast<int64_t>(check)};
  std::vector<int64_t> all(2 * static_cast<size_t>(size_));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallgather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, MPI_COMM_WORLD, &request);
  wait_for(request);
  const auto code_of = [&](int r) { return static_cast<int>(all[2 * static_cast<size_t>(r)]); };
  const auto check_of = [&](int r) { return all[2 * static_cast<size_t>(r) + 1]; };
  int culprit = -1;
  for (int r = 0; r < size_ && culprit < 0; ++r) {
    if (code_of(r) != 0) culprit = r;
  }
  if (culprit >= 0) {
    if (culprit == rank_ && !message.empty()) {
      std::cerr << (rank_ == 0 ? "" : "rank " + std::to_string(rank_) + ": ") << message << std::flush;
    }
    return code_of(culprit);
  }
  for (int r = 1; r < size_; ++r) {
    if (check_of(r) != check_of(0)) {
      if (rank_ == 0) {
        std::cerr << "clustersim: error: rank " << r << " loaded another sweep than rank 0 (scenario, options or "
                  << "points differ: are the files the same on every node?)\n"
                  << std::flush;
      }
      return 65;
    }
  }
  return 0;
}

int SweepRanks::finish(int code) {
  while (!pending_->sends.empty()) {
    pending_->progress();
    if (!pending_->sends.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int value = code;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD, &request);
  wait_for(request);
  return value;
}

void SweepRanks::send(int dest, int tag, const std::string& bytes) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw std::length_error("SweepRanks::send: message over 2 GiB");
  }
  pending_->progress();
  Pending::Send& s = pending_->sends.emplace_back();
  s.bytes = bytes;
  MPI_Isend(s.bytes.data(), static_cast<int>(s.bytes.size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD, &s.request);
}

bool SweepRanks::poll(int& source, int& tag, std::string& bytes) {
  pending_->progress();
  int flag = 0;
  MPI_Message handle = MPI_MESSAGE_NULL;
  MPI_Status status;
  MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &handle, &status);
  if (flag == 0) return false;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  bytes.assign(static_cast<size_t>(count), '\0');
  MPI_Mrecv(bytes.data(), count, MPI_CHAR, &handle, MPI_STATUS_IGNORE);
  source = status.MPI_SOURCE;
  tag = status.MPI_TAG;
  return true;
}

void SweepRanks::abort(int code, const std::string& message) {
  std::cout << std::flush;
  std::cerr << (size_ > 1 ? "rank " + std::to_string(rank_) + ": " : std::string()) << message
            << (message.empty() || message.back() != '\n' ? "\n" : "") << std::flush;
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace clustersim::sim
