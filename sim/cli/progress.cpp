#include "sim/cli/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <utility>

namespace clustersim::cli {

ProgressLine::ProgressLine(std::string label, std::string unit, std::size_t total, std::size_t target,
                           std::size_t offset, bool target_is_bound)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      target_(target),
      offset_(offset),
      bound_(target_is_bound),
      tty_(::isatty(2) != 0),
      start_(std::chrono::steady_clock::now()) {}

void ProgressLine::update(std::size_t done) {
  last_done_ = done;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (t - last_shown_s_ >= (tty_ ? 0.2 : 2.0)) {
    show(done, false);
    last_shown_s_ = t;
  }
}

void ProgressLine::finish() {
  if (tty_ || last_shown_s_ > 0.0) show(bound_ ? last_done_ : target_, true);
}

void ProgressLine::show(std::size_t done, bool final_line) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
  const double eta = rate > 0 && target_ > done ? static_cast<double>(target_ - done) / rate : 0.0;
  char line[256];
  if (bound_) {
    std::snprintf(line, sizeof line, "%s: %zu of at most %zu %s, %.1f %s/s, at most %.0f s left", label_.c_str(),
                  done + offset_, total_, unit_.c_str(), rate, unit_.c_str(), final_line ? 0.0 : eta);
  } else {
    std::snprintf(line, sizeof line, "%s: %zu/%zu %s, %.1f %s/s, ETA %.0f s", label_.c_str(), done + offset_,
                  total_, unit_.c_str(), rate, unit_.c_str(), eta);
  }
  if (tty_) {
    const int width = 30;
    const int filled = target_ == 0 || done >= target_ || final_line
                           ? width
                           : static_cast<int>(width * static_cast<double>(done) / static_cast<double>(target_));
    std::cerr << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
              << std::string(static_cast<std::size_t>(width - filled), ' ') << "] " << line
              << (final_line ? "\n" : "") << std::flush;
  } else {
    std::cerr << line << "\n";
  }
}

}  // namespace clustersim::cli
