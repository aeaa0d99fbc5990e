//===- Span.h - A view of consecutive elements ------------------*- C++ -*-===//
//
// std::span for C++17: a pointer and a count, for the engine's views into
// flat per-request arrays (a node's inputs and output rows). A view is valid
// until the array it points into grows.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_SPAN_H
#define CELLRUN_SCHED_SPAN_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cellrun {

template <typename T> class Span {
public:
  Span() = default;
  Span(T *data, size_t size) : data_(data), size_(size) {}
  template <typename U, typename Allocator>
  Span(const std::vector<U, Allocator> &values) // NOLINT: like std::span
      : data_(values.data()), size_(values.size()) {}
  template <typename U, typename Allocator>
  Span(std::vector<U, Allocator> &values) // NOLINT: like std::span
      : data_(values.data()), size_(values.size()) {}

  T *begin() const { return data_; }
  T *end() const { return data_ + size_; }
  T &operator[](size_t index) const { return data_[index]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

private:
  T *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace cellrun

#endif // CELLRUN_SCHED_SPAN_H
