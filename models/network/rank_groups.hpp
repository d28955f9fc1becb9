// The groups of a communication pattern stored flat: every group's ranks back to back in one array, and where
// each group starts in a second one, instead of one heap vector per group.
//
// A pipeline pattern of 131,072 GPUs has 114,688 send/recv pairs: as a vector of vectors that was 114,688
// allocations to build, copy and free, and every scan (validation, the symmetry reductions, the hash) chased a
// pointer per group. Here a pattern is two allocations whatever its groups, and a scan over every rank is one
// pass over one array (all_ranks). The read API follows std::vector<std::vector<int64_t>>'s (size, operator[],
// front, back, iteration), with a group read as std::span<const int64_t>, so code that only reads groups reads
// them unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <iterator>
#include <memory>
#include <new>
#include <span>
#include <utility>
#include <vector>

namespace clustersim::models {

/// std::allocator, except that an element made without arguments is default-initialised (an int is left
/// unwritten) where std::allocator value-initialises it (zero): a vector's resize(n) then costs no fill, for
/// storage its owner writes in full before reading it (RankGroups::append_uniform_flat). Everything else (copies,
/// inserts) constructs as std::allocator does. (The "default_init_allocator" idiom of the C++ standard library's
/// allocator model: [allocator.requirements] lets an allocator's construct choose the initialisation.)
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>& /*other*/) noexcept {}  // NOLINT(google-explicit-constructor)
  template <typename U>
  void construct(U* p) noexcept(noexcept(::new (static_cast<void*>(p)) U)) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// An ordered list of groups of global GPU ranks (int64, any values: a pattern is validated where it is solved).
/// Group i is ranks [offsets_[i], offsets_[i + 1]) of the flat rank array; no groups: both arrays empty. At most
/// 2^32 - 1 ranks in all (offsets are 32-bit; more throws std::length_error). Groups may be empty. A value type:
/// copies are two allocations, moves none.
class RankGroups {
 public:
  using value_type = std::span<const int64_t>;
  using size_type = std::size_t;

  /// A random-access iterator over the groups; dereferencing gives the group as a span (a value, not a
  /// reference: valid while the RankGroups is neither changed nor destroyed).
  class const_iterator {
   public:
    using iterator_concept = std::random_access_iterator_tag;
    using iterator_category = std::input_iterator_tag;  // a proxy: *it is a value, not a reference
    using value_type = std::span<const int64_t>;
    using difference_type = std::ptrdiff_t;
    using reference = value_type;
    using pointer = void;

    const_iterator() = default;
    const_iterator(const int64_t* ranks, const uint32_t* offset) : ranks_(ranks), offset_(offset) {}
    value_type operator*() const { return {ranks_ + offset_[0], static_cast<size_t>(offset_[1] - offset_[0])}; }
    value_type operator[](difference_type n) const { return *(*this + n); }
    const_iterator& operator++() { ++offset_; return *this; }
    const_iterator operator++(int) { const_iterator t = *this; ++offset_; return t; }
    const_iterator& operator--() { --offset_; return *this; }
    const_iterator operator--(int) { const_iterator t = *this; --offset_; return t; }
    const_iterator& operator+=(difference_type n) { offset_ += n; return *this; }
    const_iterator& operator-=(difference_type n) { offset_ -= n; return *this; }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) { return a.offset_ - b.offset_; }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.offset_ == b.offset_; }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.offset_ <=> b.offset_; }

   private:
    const int64_t* ranks_ = nullptr;
    const uint32_t* offset_ = nullptr;  ///< this group's start; its end is offset_[1]
  };
  using iterator = const_iterator;

  RankGroups() = default;
  /// The groups as written: RankGroups{{0, 1}, {2, 3}}.
  RankGroups(std::initializer_list<std::initializer_list<int64_t>> groups);
  /// The groups of a vector of vectors, in order.
  RankGroups(const std::vector<std::vector<int64_t>>& groups);  // NOLINT(google-explicit-constructor): tests assign

  [[nodiscard]] size_t size() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }
  [[nodiscard]] bool empty() const { return offsets_.empty(); }
  /// Group i (i < size()) as a view of its ranks.
  [[nodiscard]] std::span<const int64_t> operator[](size_t i) const {
    return {ranks_.data() + offsets_[i], static_cast<size_t>(offsets_[i + 1] - offsets_[i])};
  }
  [[nodiscard]] std::span<const int64_t> front() const { return (*this)[0]; }
  [[nodiscard]] std::span<const int64_t> back() const { return (*this)[size() - 1]; }
  [[nodiscard]] const_iterator begin() const { return {ranks_.data(), offsets_.data()}; }
  [[nodiscard]] const_iterator end() const { return {ranks_.data(), offsets_.data() + size()}; }
  /// Every rank of every group, groups in order, members in order (size: the sum of the group sizes).
  [[nodiscard]] std::span<const int64_t> all_ranks() const { return ranks_; }
  /// Where each group starts in all_ranks(), then the end: size() + 1 entries (none when there are no groups).
  [[nodiscard]] std::span<const uint32_t> offsets() const { return offsets_; }

  /// Room for `groups` groups holding `ranks` ranks in all, so that appending them allocates nothing.
  void reserve(size_t groups, size_t ranks = 0);
  void clear() {
    ranks_.clear();
    offsets_.clear();
  }
  /// Appends one group (a copy of `group`'s ranks, which must not lie in this RankGroups).
  void push_back(std::span<const int64_t> group) {
    check_total(ranks_.size() + group.size());
    if (offsets_.empty()) offsets_.push_back(0);
    ranks_.insert(ranks_.end(), group.begin(), group.end());
    offsets_.push_back(static_cast<uint32_t>(ranks_.size()));
  }
  void push_back(std::initializer_list<int64_t> group) { push_back(std::span<const int64_t>(group.begin(), group.size())); }
  void push_back(const std::vector<int64_t>& group) { push_back(std::span<const int64_t>(group)); }
  /// Appends `count` groups of `group_size` ranks each; fill(g, out) writes the ranks of the g-th of them
  /// (g = 0 .. count - 1) into `out` (a span of group_size ranks, unwritten on entry: fill writes every one).
  template <typename Fill>
  void append_uniform(size_t count, size_t group_size, Fill&& fill) {
    append_uniform_flat(count, group_size, [&fill, count, group_size](std::span<int64_t> out) {
      for (size_t g = 0; g < count; ++g) fill(g, out.subspan(g * group_size, group_size));
    });
  }
  /// Appends `count` groups of `group_size` ranks each; write(out) writes all their ranks into `out` (a span of
  /// count x group_size ranks, group after group, unwritten on entry: write must store every one before anything
  /// reads them). One resize of each array, neither zero-filled (the builder's writes are the only ones), and the
  /// offsets in closed form (group k ends at first + (k + 1) x group_size): the layouts' regular patterns
  /// (StridedGroups::pattern, neighbour_pairs) are built this way. If write throws, the groups are as before.
  template <typename Write>
  void append_uniform_flat(size_t count, size_t group_size, Write&& write) {
    if (count == 0) return;
    const size_t first = ranks_.size();
    check_total(first + count * group_size);
    const size_t g0 = offsets_.size();
    try {
      if (g0 == 0) offsets_.push_back(0);
      const size_t base = offsets_.size();
      offsets_.resize(base + count);
      uint32_t* end = offsets_.data() + base;
      auto at = static_cast<uint32_t>(first);
      const auto step = static_cast<uint32_t>(group_size);
      for (size_t g = 0; g < count; ++g) end[g] = at += step;
      ranks_.resize(first + count * group_size);
      write(std::span<int64_t>(ranks_.data() + first, count * group_size));
    } catch (...) {
      ranks_.resize(first);
      offsets_.resize(g0);
      throw;
    }
  }
  /// Removes the last group (size() >= 1).
  void pop_back() {
    offsets_.pop_back();
    ranks_.resize(offsets_.back());
    if (offsets_.size() == 1) offsets_.clear();
  }
  /// Group i's ranks, writable in place (reorder or rewrite them; the group's size is fixed). Invalidates any
  /// hash computed from these groups (CommPattern::hash caches: edit before the first hash).
  [[nodiscard]] std::span<int64_t> mutable_group(size_t i) {
    return {ranks_.data() + offsets_[i], static_cast<size_t>(offsets_[i + 1] - offsets_[i])};
  }

  /// Equal groups in equal order (a RankGroups and a vector of vectors with the same groups are equal).
  friend bool operator==(const RankGroups& a, const RankGroups& b) {
    return a.offsets_ == b.offsets_ && a.ranks_ == b.ranks_;
  }
  friend bool operator==(const RankGroups& a, const std::vector<std::vector<int64_t>>& b);

  /// A 64-bit hash of the groups (their count, sizes and ranks in order): equal groups hash equal in any process
  /// of this build; different groupings of the same ranks ({{0, 1}, {2}} and {{0}, {1, 2}}) differ through the
  /// offsets. Not a stable format: use it only as an in-process key. Never 0 (0 marks "not computed" in
  /// CommPattern). O(ranks + groups): four independent lanes taking two words a round (wyhash's 128-bit multiply
  /// mix, as rapidhash's bulk loop), folded by xxHash64's merge and avalanche (rank_groups.cpp).
  [[nodiscard]] uint64_t content_hash() const;

 private:
  /// Throws std::length_error when `total` ranks do not fit the 32-bit offsets.
  static void check_total(size_t total);

  /// Every group's ranks, back to back (grown unfilled: every path that grows it writes what it adds).
  std::vector<int64_t, DefaultInitAllocator<int64_t>> ranks_;
  /// Group i is ranks_[offsets_[i], offsets_[i + 1]); empty: no groups.
  std::vector<uint32_t, DefaultInitAllocator<uint32_t>> offsets_;
};

/// gtest's printer: {{0, 1}, {2, 3}}.
void PrintTo(const RankGroups& groups, std::ostream* os);

}  // namespace clustersim::models
