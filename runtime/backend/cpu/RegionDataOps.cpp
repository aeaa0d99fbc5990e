//===- RegionDataOps.cpp - Casts, moves, gathers and constants ----------===//
//
// The ops of a fused region that move or select elements rather than
// compute them, for the region interpreter (RegionInterpreter.cpp
// dispatches here): Cast, the copies of Identity, Reshape, Squeeze and
// Unsqueeze, the moves of Split, Concat, Slice and Transpose (as runs of
// consecutive elements prepared once, RegionPreparation.cpp), Gather and
// ArgMax (which depend on the data) and Constant.
//
//===----------------------------------------------------------------------===//
#include "RegionInterpreterImpl.h"

#include "artifact/ElementIO.h"

#include <cstring>
#include <string>

using namespace cellrun;
using namespace cellrun::cpu;

namespace {
/// Copies element `from` of `source` into element `to` of `target`,
/// converting between float and integer storage.
void copyElement(const Value &source, int64_t from, Value &target, int64_t to) {
  if (target.isFloat)
    target.f[to] = source.isFloat ? source.floats()[from]
                                  : static_cast<float>(source.ints()[from]);
  else
    target.i[to] = source.isFloat ? static_cast<int64_t>(source.floats()[from])
                                  : source.ints()[from];
}
} // namespace

/// Cast: element by element, to 0 or 1 for a boolean result.
Status RegionInterpreter::Impl::executeCast(PreparedOp &prepared,
                                            int64_t rows) {
  auto operand = [&](size_t n) -> Value & {
    return values[prepared.operands[n]];
  };
  Value &out = values[prepared.results[0]];
  int64_t outRows = out.hasBatch ? rows : 1;
  for (int64_t r = 0; r < outRows; ++r)
    for (int64_t k = 0; k < out.count; ++k) {
      const Value &in = operand(0);
      int64_t at = r * out.count + k, from = (in.hasBatch ? at : k);
      if (out.dtype == cellpack::DType::Bool)
        out.i[at] =
            in.isFloat ? in.floats()[from] != 0.0f : in.ints()[from] != 0;
      else
        copyElement(in, from, out, at);
    }
  return Status::ok();
}

/// Identity, Reshape, Squeeze and Unsqueeze: the same elements, copied.
Status RegionInterpreter::Impl::executeCopy(PreparedOp &prepared,
                                            int64_t rows) {
  const Value &in = values[prepared.operands[0]];
  Value &out = values[prepared.results[0]];
  int64_t outRows = out.hasBatch ? rows : 1;
  if (out.view) { // the same rows, seen again
    for (int64_t r = 0; r < outRows; ++r)
      out.rowPointers[r] = in.floatRow(r);
    return Status::ok();
  }
  if (in.view) {
    for (int64_t r = 0; r < outRows; ++r)
      std::memcpy(out.f.data() + r * out.count, in.floatRow(r),
                  out.count * sizeof(float));
    return Status::ok();
  }
  if (in.isFloat && out.isFloat) {
    std::memcpy(out.f.data(), in.floats(), outRows * out.count * sizeof(float));
    return Status::ok();
  }
  for (int64_t k = 0; k < outRows * out.count; ++k)
    copyElement(in, k, out, k);
  return Status::ok();
}

/// Split, Concat, Slice and Transpose: the runs of their move maps,
/// prepared once, into every result.
Status RegionInterpreter::Impl::executeMoves(PreparedOp &prepared,
                                             int64_t rows) {
  auto operand = [&](size_t n) -> Value & {
    return values[prepared.operands[n]];
  };
  for (size_t n = 0; n < prepared.results.size(); ++n) {
    Value &target = values[prepared.results[n]];
    int64_t targetRows = target.hasBatch ? rows : 1;
    if (target.view) { // one run of its operand's row: seen where it lies
      const MoveRun &run = prepared.runs[n][0];
      const Value &source = operand(run.operand);
      for (int64_t r = 0; r < targetRows; ++r)
        target.rowPointers[r] = source.floatRow(r) + run.from;
      continue;
    }
    for (int64_t r = 0; r < targetRows; ++r)
      for (const MoveRun &run : prepared.runs[n]) {
        const Value &source = operand(run.operand);
        int64_t from = (source.hasBatch ? r * source.count : 0) + run.from;
        int64_t to = r * target.count + run.to;
        if (source.isFloat && target.isFloat) {
          std::memcpy(target.f.data() + to, source.floatRow(r) + run.from,
                      run.length * sizeof(float));
          continue;
        }
        for (int64_t e = 0; e < run.length; ++e)
          copyElement(source, from + e, target, to + e);
      }
  }
  return Status::ok();
}

/// Gather: rows of the data along the op's axis, as the indices (negative
/// ones from the end) say; an index outside the table is an error.
Status RegionInterpreter::Impl::executeGather(PreparedOp &prepared,
                                              int64_t rows) {
  const Value &data = values[prepared.operands[0]],
              &indices = values[prepared.operands[1]];
  Value &out = values[prepared.results[0]];
  int64_t outRows = out.hasBatch ? rows : 1;
  int64_t axis = prepared.op->axis();
  int64_t outer = product(data.shape, 0, axis);
  int64_t length = data.shape[axis];
  int64_t inner = product(data.shape, axis + 1, data.shape.size());
  // Index n of row r, from the end when negative; false outside the table.
  auto tableRow = [&](int64_t at, int64_t &index) {
    index = indices.isFloat ? static_cast<int64_t>(indices.floats()[at])
                            : indices.ints()[at];
    if (index < 0)
      index += length;
    return index >= 0 && index < length;
  };
  if (out.view && outer == 1 && indices.count == 1 && !data.hasBatch &&
      !indices.isFloat && indices.hasBatch) {
    // One whole table row a row (an embedding): its address, nothing
    // copied, in a loop of its own.
    const int64_t *index = indices.ints();
    const float *table = data.floats();
    for (int64_t r = 0; r < outRows; ++r) {
      int64_t at = index[r] < 0 ? index[r] + length : index[r];
      if (at < 0 || at >= length)
        return Status(StatusCode::OutOfRange, "index " + std::to_string(at) +
                                                  " is outside a table of " +
                                                  std::to_string(length) +
                                                  " rows");
      out.rowPointers[r] = table + at * inner;
    }
    return Status::ok();
  }
  for (int64_t r = 0; r < outRows; ++r) {
    int64_t k = r * out.count;
    int64_t dataBase = data.hasBatch ? r * data.count : 0;
    int64_t indexBase = indices.hasBatch ? r * indices.count : 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t n = 0; n < indices.count; ++n) {
        int64_t index;
        if (!tableRow(indexBase + n, index))
          return Status(StatusCode::OutOfRange,
                        "index " + std::to_string(index) +
                            " is outside a table of " + std::to_string(length) +
                            " rows");
        int64_t from = dataBase + (o * length + index) * inner;
        if (out.view) { // a whole table row: read where it lies
          out.rowPointers[r] = data.floats() + from;
          continue;
        }
        if (data.isFloat && out.isFloat) {
          std::memcpy(out.f.data() + k, data.floats() + from,
                      inner * sizeof(float));
          k += inner;
          continue;
        }
        for (int64_t e = 0; e < inner; ++e)
          copyElement(data, from + e, out, k++);
      }
  }
  return Status::ok();
}

/// ArgMax along the op's axis: the first largest element's index, or the
/// last one with select_last_index.
Status RegionInterpreter::Impl::executeArgMax(PreparedOp &prepared,
                                              int64_t rows) {
  const cellpack::PortableOp &op = *prepared.op;
  const Value &input = values[prepared.operands[0]];
  Value &out = values[prepared.results[0]];
  int64_t outRows = out.hasBatch ? rows : 1;
  int64_t axis = op.axis();
  int64_t outer = product(input.shape, 0, axis);
  int64_t length = input.shape[axis];
  int64_t inner = product(input.shape, axis + 1, input.shape.size());
  bool last = op.select_last_index();
  for (int64_t r = 0; r < outRows; ++r) {
    const float *floats = input.isFloat ? input.floatRow(r) : nullptr;
    const int64_t *ints = input.isFloat ? nullptr : input.intRow(r);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < inner; ++e) {
        auto at = [&](int64_t n) { return (o * length + n) * inner + e; };
        int64_t best = 0;
        for (int64_t n = 1; n < length; ++n) {
          bool greater = floats ? floats[at(n)] > floats[at(best)]
                                : ints[at(n)] > ints[at(best)];
          bool equal = floats ? floats[at(n)] == floats[at(best)]
                              : ints[at(n)] == ints[at(best)];
          if (greater || (last && equal))
            best = n;
        }
        out.i[r * out.count + o * inner + e] = best;
      }
  }
  return Status::ok();
}

/// Constant: the op's data, decoded from its element type (the same for
/// every row: one row).
Status RegionInterpreter::Impl::executeConstant(PreparedOp &prepared) {
  Value &out = values[prepared.results[0]];
  const flatbuffers::Vector<uint8_t> *bytes = prepared.op->constant();
  if (!bytes || static_cast<int64_t>(bytes->size()) !=
                    out.count * static_cast<int64_t>(elementSize(out.dtype)))
    return invalidRegion("constant data does not match its type");
  for (int64_t k = 0; k < out.count; ++k) {
    if (out.isFloat)
      out.f[k] = loadFloat(bytes->data(), out.dtype, k);
    else
      out.i[k] = loadInt(bytes->data(), out.dtype, k);
  }
  return Status::ok();
}
