#include "sim/io/closest_names.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace clustersim::sim {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const std::size_t sub = diag + (std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                                               std::tolower(static_cast<unsigned char>(b[j - 1]))
                                           ? 0
                                           : 1);
      row[j] = std::min({up + 1, row[j - 1] + 1, sub});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest_names(std::string_view wanted, std::vector<std::string> names, std::size_t n) {
  // Each distance once (a comparator calling edit_distance would compute it O(log names) times per name).
  const std::string_view head = wanted.substr(0, kClosestNameBytes);
  std::vector<std::pair<std::size_t, std::string>> ranked;
  ranked.reserve(names.size());
  for (std::string& name : names) ranked.emplace_back(edit_distance(head, name), std::move(name));
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::string out;
  for (std::size_t i = 0; i < std::min(n, ranked.size()); ++i) {
    if (i > 0) out += ", ";
    out += ranked[i].second;
  }
  if (ranked.size() > n) out += ", ...";
  return out;
}

}  // namespace clustersim::sim
