//===- PoolCounts.h - A count per pool, without an allocation --*- C++ -*-===//
//
// A request's rows per pool (what it reserved, what it holds): models have
// a handful of pools, so the counts live inside the request's record unless
// there are more than eight.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_POOLCOUNTS_H
#define CELLRUN_SCHED_POOLCOUNTS_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cellrun {

class PoolCounts {
public:
  PoolCounts() = default;
  explicit PoolCounts(size_t pools) { resize(pools); }
  PoolCounts(const std::vector<uint32_t> &counts) { // NOLINT: a conversion
    resize(counts.size());
    for (size_t pool = 0; pool < counts.size(); ++pool)
      (*this)[pool] = counts[pool];
  }

  void resize(size_t pools) {
    size_ = pools;
    if (pools > kInline)
      more_.assign(pools, 0);
  }
  size_t size() const { return size_; }
  uint32_t &operator[](size_t pool) {
    return size_ > kInline ? more_[pool] : inline_[pool];
  }
  uint32_t operator[](size_t pool) const {
    return size_ > kInline ? more_[pool] : inline_[pool];
  }

private:
  static constexpr size_t kInline = 8;
  uint32_t inline_[kInline] = {};
  std::vector<uint32_t> more_;
  size_t size_ = 0;
};

} // namespace cellrun

#endif // CELLRUN_SCHED_POOLCOUNTS_H
