//===- RowReductions.cpp - A row's sum and largest element ---------------===//
#include "RowReductions.h"

namespace cellrun::cpu {
namespace {
/// The larger of `a` and `b`, NaN when either is.
inline float maxOrNan(float a, float b) { return a != a || a > b ? a : b; }
} // namespace

float rowSum(const float *x, int64_t count) {
  float lanes[kRowLanes] = {};
  int64_t i = 0;
  for (; i + kRowLanes <= count; i += kRowLanes)
    for (int64_t l = 0; l < kRowLanes; ++l)
      lanes[l] += x[i + l];
  for (int64_t l = 0; i < count; ++i, ++l)
    lanes[l] += x[i];
  for (int64_t width = kRowLanes / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l)
      lanes[l] += lanes[l + width];
  return lanes[0];
}

float rowMax(const float *x, int64_t count) {
  float lanes[kRowLanes];
  int64_t first = count < kRowLanes ? count : kRowLanes;
  for (int64_t l = 0; l < kRowLanes; ++l)
    lanes[l] = x[l < first ? l : 0];
  int64_t i = first;
  for (; i + kRowLanes <= count; i += kRowLanes)
    for (int64_t l = 0; l < kRowLanes; ++l)
      lanes[l] = maxOrNan(lanes[l], x[i + l]);
  for (int64_t l = 0; i < count; ++i, ++l)
    lanes[l] = maxOrNan(lanes[l], x[i]);
  for (int64_t width = kRowLanes / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l)
      lanes[l] = maxOrNan(lanes[l], lanes[l + width]);
  return lanes[0];
}

} // namespace cellrun::cpu
