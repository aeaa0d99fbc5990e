//===- Executor.h - Batched tasks of a cell over state pools ---*- C++ -*-===//
//
// The layer under the scheduler: "run this cell type for these n rows".
// The executor owns one SlotPool per row type of the artifact (element type
// and row size), shared by every cell input and output of that type, so the
// row one cell writes is the row the next cell reads, in place. A task runs
// with the smallest supported batch size >= n; the padding rows of the
// batch are never read or written. (CPU backend; the CUDA backend comes
// next.)
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_EXECUTOR_H
#define CELLRUN_EXECUTOR_H

#include "cellrun/Artifact.h"
#include "cellrun/SlotPool.h"

#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

namespace cellrun {
namespace cpu {
class CpuTaskRunner;
class ThreadPool;
} // namespace cpu

class Executor {
public:
  /// Pools of `rowsPerPool` rows for every row type of `artifact`; kernel
  /// steps split their rows among `threads` workers.
  static Result<std::unique_ptr<Executor>>
  create(std::shared_ptr<const LoadedArtifact> artifact, uint32_t rowsPerPool,
         unsigned threads = 1);
  ~Executor();

  const LoadedArtifact &artifact() const { return *artifact_; }

  /// The pool that holds input (`isOutput` false) or output `index` of
  /// `cell`.
  SlotPool &pool(const cellpack::CellType &cell, bool isOutput, uint32_t index);

  /// Runs one task of `cell` for `rows` rows: inputRows[i][r] is the pool
  /// row of input i for the task's row r, outputRows likewise. Returns the
  /// batch size it ran at.
  Result<uint32_t> run(const cellpack::CellType &cell, uint32_t rows,
                       const std::vector<std::vector<int32_t>> &inputRows,
                       const std::vector<std::vector<int32_t>> &outputRows);

private:
  explicit Executor(std::shared_ptr<const LoadedArtifact> artifact);
  Status checkRows(const cellpack::CellType &cell, uint32_t rows,
                   const std::vector<std::vector<int32_t>> &taskRows,
                   bool isOutput);

  std::shared_ptr<const LoadedArtifact> artifact_;
  std::unique_ptr<cpu::ThreadPool> threads_;
  /// (element type, row bytes) -> pool.
  std::map<std::pair<int, size_t>, std::unique_ptr<SlotPool>> pools_;
  std::unordered_map<const cellpack::BatchPlan *,
                     std::unique_ptr<cpu::CpuTaskRunner>>
      runners_;
};

} // namespace cellrun

#endif // CELLRUN_EXECUTOR_H
