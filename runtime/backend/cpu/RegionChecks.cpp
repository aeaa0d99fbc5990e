//===- RegionChecks.cpp - A region against its kernel step ---------------===//
//
// Checks made before a region is prepared, so that a damaged artifact is an
// error and never a read or write outside a buffer: value shapes are real
// (no negative dimension, no overflow, the values within a memory bound),
// every value is a region input or some op's result, and the region's
// inputs and results fit the ValueRefs of its kernel step (the same element
// type for inputs, the same elements a row), which the artifact checks in
// turn hold to the buffers they name.
//
//===----------------------------------------------------------------------===//
#include "RegionInterpreterImpl.h"

#include <algorithm>

using namespace cellrun;
using namespace cellrun::cpu;

namespace {

/// The most bytes the values of one region may take (every row of a block
/// included): far above a real cell, far below what would exhaust memory.
constexpr int64_t kMaxRegionBytes = int64_t(4) << 30;

/// Elements of `shape`, or -1 where a dimension is negative or the product
/// overflows.
int64_t checkedCount(const flatbuffers::Vector<int64_t> *shape) {
  int64_t count = 1;
  if (!shape)
    return count;
  for (int64_t dim : *shape)
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count))
      return -1;
  return count;
}

/// Elements a row of a step operand has: all of them for a broadcast one,
/// its count over its first dimension (at least `maxRows` rows) otherwise;
/// -1 where the ValueRef cannot hold that.
int64_t refRowElements(const cellpack::ValueRef *ref, cellpack::Access access,
                       int64_t maxRows) {
  if (!ref)
    return -1;
  int64_t count = checkedCount(ref->shape());
  if (count < 0 || access == cellpack::Access::Broadcast)
    return count;
  if (!ref->shape() || ref->shape()->size() == 0)
    return -1;
  int64_t rows = ref->shape()->Get(0);
  if (rows < std::max<int64_t>(maxRows, 1))
    return -1;
  return count / rows;
}

} // namespace

Status
RegionInterpreter::Impl::checkShape(uint32_t id,
                                    const flatbuffers::Vector<int64_t> *shape) {
  if (checkedCount(shape) < 0)
    return invalidRegion("value " + std::to_string(id) +
                         " has a negative or too large shape");
  return Status::ok();
}

Status RegionInterpreter::Impl::checkValueSizes() {
  int64_t rows = std::max<int64_t>(options.maxRows, 1), bytes = 0;
  for (const Value &value : values) {
    int64_t each, valueBytes;
    if (__builtin_mul_overflow(value.count, value.isFloat ? 4 : 8, &each) ||
        __builtin_mul_overflow(each, value.hasBatch ? rows : 1, &valueBytes) ||
        __builtin_add_overflow(bytes, valueBytes, &bytes) ||
        bytes > kMaxRegionBytes)
      return Status(StatusCode::ResourceExhausted,
                    "kernel region: its values need more than " +
                        std::to_string(kMaxRegionBytes >> 30) + " GiB at " +
                        std::to_string(rows) + " rows");
  }
  return Status::ok();
}

Status RegionInterpreter::Impl::checkDefinitions(uint32_t numInputs) {
  std::vector<bool> defined(values.size(), false);
  std::fill(defined.begin(), defined.begin() + numInputs, true);
  for (const PreparedOp &prepared : ops)
    for (uint32_t result : prepared.results) {
      if (result < numInputs)
        return invalidRegion("an op writes region input " +
                             std::to_string(result));
      defined[result] = true;
    }
  for (size_t id = 0; id < values.size(); ++id)
    if (!defined[id])
      return invalidRegion("value " + std::to_string(id) +
                           " is neither an input nor the result of an op");
  return Status::ok();
}

Status RegionInterpreter::Impl::checkBoundary(uint32_t numInputs) {
  const auto *inputs = step.inputs();
  if (!inputs || inputs->size() != numInputs)
    return invalidRegion("the step's inputs and the region's disagree");
  for (uint32_t id = 0; id < numInputs; ++id) {
    const cellpack::ValueRef *ref = inputs->Get(id);
    const Value &value = values[id];
    int64_t elements =
        refRowElements(ref, step.input_access()->Get(id), options.maxRows);
    if (ref->dtype() != value.dtype || elements != value.count)
      return invalidRegion("input " + std::to_string(id) + " has " +
                           std::to_string(value.count) + " elements of " +
                           cellpack::EnumNameDType(value.dtype) +
                           " a row but the step " + "passes " +
                           std::to_string(elements) + " of " +
                           cellpack::EnumNameDType(ref->dtype()));
    // The same count in another shape (a table of 1 row of 64000 for
    // 1000 rows of 64) would index it wrongly: a row's dimensions match.
    std::vector<int64_t> expected;
    bool batched = step.input_access()->Get(id) != cellpack::Access::Broadcast;
    if (batched)
      expected.push_back(1);
    if (ref->shape())
      expected.insert(expected.end(), ref->shape()->begin() + (batched ? 1 : 0),
                      ref->shape()->end());
    if (expected != value.shape)
      return invalidRegion("input " + std::to_string(id) +
                           "'s dimensions differ from those the step passes");
  }
  const auto *outputs = step.outputs();
  const auto *access = step.output_access();
  if (!outputs || !access || outputs->size() != results.size() ||
      access->size() != results.size())
    return invalidRegion("outputs and region results disagree");
  for (size_t j = 0; j < results.size(); ++j) {
    int64_t elements =
        access->Get(j) == cellpack::Access::Broadcast
            ? -1 // every row writes its own
            : refRowElements(outputs->Get(j), access->Get(j), options.maxRows);
    if (elements != values[results[j]].count)
      return invalidRegion("result " + std::to_string(j) + " has " +
                           std::to_string(values[results[j]].count) +
                           " elements a row but the step's output takes " +
                           std::to_string(elements));
  }
  return Status::ok();
}
