//===- RegionInterpreter.h - Fused kernels on the CPU ----------*- C++ -*-===//
//
// Executes the portable op list of a kernel step (what the generated CUDA
// kernel computes) on the CPU, op by op over a block of rows: the CPU
// backend's replacement for the kernels, and the reference semantics of the
// artifact. Activations run as vector code (VectorMath.h), a GEMM inside a
// region as one packed GEMM over the block (PackedGemm.h).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_REGIONINTERPRETER_H
#define CELLRUN_BACKEND_CPU_REGIONINTERPRETER_H

#include "cellrun/Status.h"

#include "cellpack_generated.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace cellrun::cpu {
class PackedMatrix;
class ThreadPool;

/// An operand of a kernel during one task: packed rows (or a whole tensor
/// for broadcast operands) and, for gather operands, the row of each of the
/// task's rows.
struct InputView {
  const void *data = nullptr;
  const int32_t *rows = nullptr; // null: row r is at index r
  /// Rows where they lie (a request's own data): row r at rowData[r],
  /// overriding data and rows (batch inputs only).
  const void *const *rowData = nullptr;
};

struct OutputView {
  void *data = nullptr;
  const int32_t *rows = nullptr; // null: row r goes to index r
  /// When given (with pool rows), row r's bytes also go to copyTo[r] where
  /// that is not null: a request's own results, written as the block's
  /// rows are stored rather than copied from the pool after the task.
  void *const *copyTo = nullptr;
};

struct RegionOptions {
  /// The most rows one call runs (the plan's batch size).
  int64_t maxRows = 1;
  /// Per region input, the packed form of a weight a Gemm reads as B (null
  /// where there is none; then the Gemm packs its B per call).
  std::vector<const PackedMatrix *> packedInputs;
  /// Workers for the GEMMs inside the region (null: the calling thread).
  ThreadPool *pool = nullptr;
};

/// A kernel step prepared for execution (value shapes and types resolved
/// once); reusable across tasks, not thread-safe (it keeps row buffers).
class RegionInterpreter {
public:
  /// Checks the region (op arity, value indices, types it can run) and
  /// prepares it.
  static Result<std::unique_ptr<RegionInterpreter>>
  create(const cellpack::KernelStep &step, RegionOptions options = {});

  /// Whether the region holds a GEMM: then one call should run all the
  /// task's rows (the GEMM reads its weights once per call and splits its
  /// columns among the pool's workers) rather than rows per worker.
  bool hasGemm() const;
  /// Bytes of values a row of the region works through (a measure of its
  /// work a row, to decide whether splitting rows among threads pays).
  int64_t bytesPerRow() const;
  /// Values read where their rows lie rather than copied (Value::view:
  /// pool rows, gathered table rows, split parts); 0 with
  /// CELLRUN_CPU_VIEWS=off.
  int viewCount() const;
  /// LSTM gates run as one op each (an LSTM's element-wise step, its
  /// values kept in registers: LstmGates.h); 0 with
  /// CELLRUN_CPU_FUSED_GATES=off.
  int fusedGateCount() const;
  /// GRU steps whose gates run as one op (GruGates.h).
  int fusedGruCount() const;

  /// Whether region input `input` is an fp32 batch value of `columns`
  /// floats a row that nothing reads but the sum of a fused LSTM's
  /// pre-activations: then the GEMM step that writes it may run in the
  /// gates' loop instead (foldGemm).
  bool canFoldGemmInto(uint32_t input, int64_t columns) const;
  /// Region input `input` (canFoldGemmInto) is no longer read: the fused
  /// gates make its rows from the GEMM of A's rows (setGemmRows) by
  /// `weights` (alpha, beta and a bias of one a column, or none: GateGemm).
  void foldGemm(uint32_t input, const PackedMatrix *weights, float alpha,
                float beta, const float *bias);
  /// The task's rows of the folded GEMM's A (row r at rows[r]), for the
  /// runs that follow; the caller keeps them.
  void setGemmRows(const float *const *rows);
  /// GEMMs folded into the gates (foldGemm).
  int foldedGemmCount() const;
  ~RegionInterpreter();

  /// Runs the region for rows 0..rows-1.
  Status run(int64_t rows, const std::vector<InputView> &inputs,
             const std::vector<OutputView> &outputs);
  /// Runs the region for rows begin..end-1 (another interpreter of the
  /// same step may run other rows at the same time).
  Status runRows(int64_t begin, int64_t end,
                 const std::vector<InputView> &inputs,
                 const std::vector<OutputView> &outputs);

private:
  struct Impl;
  explicit RegionInterpreter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_REGIONINTERPRETER_H
