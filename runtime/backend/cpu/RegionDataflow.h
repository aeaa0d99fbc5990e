//===- RegionDataflow.h - Where a prepared region's values flow -*- C++ -*-===//
//
// What the fusion matchers (RegionFusion.cpp, RegionFusionGru.cpp) ask of a
// prepared region: the ops reading each value, the op defining it, how many
// define it, whether it is a result, and a few tests of ops' shapes.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_REGIONDATAFLOW_H
#define CELLRUN_BACKEND_CPU_REGIONDATAFLOW_H

#include "RegionInterpreterImpl.h"

#include <vector>

namespace cellrun::cpu::detail {

struct RegionDataflow {
  const std::vector<Value> &values;
  const std::vector<PreparedOp> &ops;
  std::vector<std::vector<size_t>> readers; // per value
  std::vector<size_t> definer;              // per value, SIZE_MAX: none
  std::vector<uint32_t> definitions;        // per value
  std::vector<bool> isResult;               // per value

  RegionDataflow(const std::vector<Value> &values,
                 const std::vector<PreparedOp> &ops,
                 const std::vector<uint32_t> &results)
      : values(values), ops(ops), readers(values.size()),
        definer(values.size(), SIZE_MAX), definitions(values.size(), 0),
        isResult(values.size(), false) {
    for (size_t index = 0; index < ops.size(); ++index) {
      for (uint32_t operand : ops[index].operands)
        readers[operand].push_back(index);
      for (uint32_t result : ops[index].results) {
        definer[result] = index;
        ++definitions[result];
      }
    }
    for (uint32_t result : results)
      isResult[result] = true;
  }

  cellpack::OpCode opcode(size_t index) const {
    return ops[index].op->opcode();
  }
  bool plainFloat(uint32_t id) const {
    return values[id].isFloat && values[id].dtype == cellpack::DType::F32;
  }
  /// The one op reading `id` when it is fp32, not a result and read once;
  /// SIZE_MAX otherwise.
  size_t onlyReader(uint32_t id) const {
    if (isResult[id] || readers[id].size() != 1 || !plainFloat(id))
      return SIZE_MAX;
    return readers[id][0];
  }
  /// An element-wise op `code` of two same-shaped fp32 operands, one result.
  bool sameShapeBinary(size_t index, cellpack::OpCode code) const {
    const PreparedOp &op = ops[index];
    if (opcode(index) != code || op.operands.size() != 2 ||
        op.results.size() != 1 || !plainFloat(op.results[0]))
      return false;
    for (const std::vector<int64_t> &map : op.broadcast)
      if (!map.empty())
        return false;
    for (uint32_t operand : op.operands)
      if (!plainFloat(operand) ||
          values[operand].count != values[op.results[0]].count ||
          values[operand].hasBatch != values[op.results[0]].hasBatch)
        return false;
    return true;
  }
  /// Op `index` is `code` of `operand` alone, with one fp32 result.
  bool unary(size_t index, cellpack::OpCode code, uint32_t operand) const {
    if (index == SIZE_MAX)
      return false;
    const PreparedOp &op = ops[index];
    return opcode(index) == code && op.operands.size() == 1 &&
           op.operands[0] == operand && op.results.size() == 1 &&
           plainFloat(op.results[0]);
  }
  /// The operand of two-operand op `index` that is not `one`.
  uint32_t other(size_t index, uint32_t one) const {
    const PreparedOp &op = ops[index];
    return op.operands[0] == one ? op.operands[1] : op.operands[0];
  }
};

} // namespace cellrun::cpu::detail

#endif // CELLRUN_BACKEND_CPU_REGIONDATAFLOW_H
