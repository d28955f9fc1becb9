// SweepRanks for the plain `clustersim` binary: one rank, no MPI (sim/sweep/mpi_ranks.hpp).
#include "sim/sweep/mpi_ranks.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <thread>

namespace clustersim::sim {

struct SweepRanks::Pending {};

SweepRanks::SweepRanks() = default;

SweepRanks::~SweepRanks() = default;

int SweepRanks::default_threads() const { return static_cast<int>(std::max(1U, std::thread::hardware_concurrency())); }

int SweepRanks::agree(int code, const std::string& message, uint64_t /*check*/) {
  if (code != 0 && !message.empty()) std::cerr << message << std::flush;
  return code;
}

int SweepRanks::finish(int code) { return code; }

void SweepRanks::send(int dest, int /*tag*/, const std::string& /*bytes*/) {
  throw std::logic_error("SweepRanks::send: no rank " + std::to_string(dest) + " in a single-process run");
}

bool SweepRanks::poll(int& /*source*/, int& /*tag*/, std::string& /*bytes*/) { return false; }

void SweepRanks::abort(int code, const std::string& message) {
  std::cout << std::flush;
  std::cerr << message << (message.empty() || message.back() != '\n' ? "\n" : "") << std::flush;
  std::_Exit(code);
}

}  // namespace clustersim::sim
