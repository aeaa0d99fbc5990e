//===- RegionRows.cpp - A block's rows in and out of a region -------------===//
//
// Before the ops of a block run, its batch inputs' rows are read where they
// lie (views, a dense GEMM result) or copied into the block (converted from
// their type); after them, the block's results are written to the task's
// output rows.
//
//===----------------------------------------------------------------------===//
#include "RegionInterpreterImpl.h"
#include "artifact/ElementIO.h"

#include <cstring>

using namespace cellrun;
using namespace cellrun::cpu;

/// Copies the task's rows first..first+rows-1 of every batch input into the
/// block (rows of fp32 inputs as whole rows); an fp32 input whose rows are
/// consecutive (a GEMM's result in the workspace) is read in place.
void RegionInterpreter::Impl::loadRows(const std::vector<InputView> &inputs,
                                       int64_t first, int64_t rows) {
  uint32_t numInputs = step.region()->num_inputs();
  for (uint32_t id = 0; id < numInputs; ++id) {
    Value &value = values[id];
    if (!value.hasBatch)
      continue;
    value.external = nullptr;
    const InputView &input = inputs[id];
    if (value.dtype == cellpack::DType::F32 && !input.rows && !input.rowData &&
        !value.view) {
      // Consecutive rows (a GEMM's result in the workspace): in place.
      value.external =
          static_cast<const float *>(input.data) + first * value.count;
      continue;
    }
    // Row r of the block: where the input's rows lie, or its pool row.
    size_t rowBytes = value.count * elementSize(value.dtype);
    auto rowOf = [&](int64_t r) -> const void * {
      if (input.rowData)
        return input.rowData[first + r];
      int64_t row = input.rows ? input.rows[first + r] : first + r;
      return static_cast<const uint8_t *>(input.data) + row * rowBytes;
    };
    if (value.view) { // read where they lie
      for (int64_t r = 0; r < rows; ++r)
        value.rowPointers[r] = static_cast<const float *>(rowOf(r));
      continue;
    }
    // Copied: fp32 and int64 rows as they are, other types converted.
    bool sameBytes = value.dtype == cellpack::DType::F32 ||
                     value.dtype == cellpack::DType::I64;
    uint8_t *block = value.isFloat
                         ? reinterpret_cast<uint8_t *>(value.f.data())
                         : reinterpret_cast<uint8_t *>(value.i.data());
    // The rows lie scattered (a request's tokens, pool rows): each is asked
    // for kLoadAhead rows before it is copied, so their misses overlap
    // (hidden-16 LSTM in `cellrun run`: 164.5 against 168.5 ns a row-step).
    constexpr int64_t kLoadAhead = 16;
    for (int64_t r = 0; r < rows; ++r) {
      const void *row = rowOf(r);
      if (r + kLoadAhead < rows)
        __builtin_prefetch(rowOf(r + kLoadAhead));
      if (sameBytes && rowBytes == 8) { // a token: no call to memcpy
        std::memcpy(block + r * 8, row, 8);
        continue;
      }
      if (sameBytes) {
        std::memcpy(block + r * rowBytes, row, rowBytes);
        continue;
      }
      for (int64_t k = 0; k < value.count; ++k) {
        if (value.isFloat)
          value.f[r * value.count + k] = loadFloat(row, value.dtype, k);
        else
          value.i[r * value.count + k] = loadInt(row, value.dtype, k);
      }
    }
  }
}

/// Writes the block's results to the task's rows first..first+rows-1 (a
/// result without the batch goes to every row).
void RegionInterpreter::Impl::storeRows(const std::vector<OutputView> &outputs,
                                        int64_t first, int64_t rows) {
  for (size_t j = 0; j < results.size(); ++j) {
    if (!storedAlready.empty() && storedAlready[j])
      continue; // by a fused op (RegionFusion.cpp)
    const Value &value = values[results[j]];
    cellpack::DType type = step.outputs()->Get(j)->dtype();
    if (!outputs[j].rows && value.hasBatch && value.isFloat && !value.view &&
        type == cellpack::DType::F32) {
      // Dense rows (the workspace): the block in one copy.
      std::memcpy(static_cast<float *>(outputs[j].data) + first * value.count,
                  value.floats(), rows * value.count * sizeof(float));
      continue;
    }
    for (int64_t r = 0; r < rows; ++r) {
      int64_t row = first + r;
      int64_t base =
          (outputs[j].rows ? outputs[j].rows[row] : row) * value.count;
      int64_t from = value.hasBatch ? r * value.count : 0;
      if (type == cellpack::DType::F32 && value.isFloat) {
        std::memcpy(static_cast<float *>(outputs[j].data) + base,
                    value.floatRow(r), value.count * sizeof(float));
        continue;
      }
      for (int64_t k = 0; k < value.count; ++k) {
        if (isFloatType(type))
          storeFloat(outputs[j].data, type, base + k,
                     value.isFloat ? value.floats()[from + k]
                                   : value.ints()[from + k]);
        else
          storeInt(outputs[j].data, type, base + k,
                   value.isFloat
                       ? static_cast<int64_t>(value.floats()[from + k])
                       : value.ints()[from + k]);
      }
    }
  }
}

void RegionInterpreter::Impl::copyRows(const std::vector<OutputView> &outputs,
                                       int64_t first, int64_t rows) {
  for (size_t j = 0; j < results.size(); ++j) {
    const OutputView &output = outputs[j];
    if (!output.copyTo || !output.rows ||
        (!copiedAlready.empty() && copiedAlready[j]))
      continue;
    size_t rowBytes =
        values[results[j]].count * elementSize(step.outputs()->Get(j)->dtype());
    const uint8_t *pool = static_cast<const uint8_t *>(output.data);
    for (int64_t r = first; r < first + rows; ++r)
      if (void *to = output.copyTo[r])
        std::memcpy(to, pool + output.rows[r] * rowBytes, rowBytes);
  }
}
