//===- CudaCell.h - One cell type's code and weights on a GPU -*- C++ -*-===//
//
// Loads a cell's kernels with the CUDA runtime's library API
// (cudaLibraryLoadData: the CUBIN built for the device's architecture, else
// the PTX, which the driver JIT-compiles) and uploads its weights once, each
// 256-byte aligned in one device block. Every task runner of the cell, at
// every batch size, shares them.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDACELL_H
#define CELLRUN_BACKEND_CUDA_CUDACELL_H

#include "CudaLaunch.h"
#include "CudaMemory.h"

#include "artifact/Artifact.h"
#include "artifact/CodeSelection.h"

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cellrun::cuda {

class CudaCell {
public:
  /// Loads `cell`'s code for a device of compute capability
  /// `computeCapability` (the current device) and uploads its weights.
  static Result<std::unique_ptr<CudaCell>>
  create(const LoadedArtifact &artifact, const cellpack::CellType &cell,
         int computeCapability);
  ~CudaCell();
  CudaCell(const CudaCell &) = delete;
  CudaCell &operator=(const CudaCell &) = delete;

  const cellpack::CellType &cell() const { return cell_; }
  /// The kernel called `name`, or NotFound.
  Result<cudaKernel_t> kernel(const std::string &name) const;
  /// Device address of weights[index].
  const uint8_t *weight(uint32_t index) const {
    return weights_.data() + weightOffsets_[index];
  }
  /// Launch kernels as programmatic dependent launches (CudaLaunch.h):
  /// requested, and safe for this code (waitsForPriorGrids_).
  bool launchesProgrammatically() const {
    return waitsForPriorGrids_ && programmaticLaunchRequested();
  }
  /// The code carries cellrun_copy_rows_to_addresses (RowCopyKernel.h):
  /// compiled since 2026-12.
  bool writesToAddresses() const { return writesToAddresses_; }
  /// "CUBIN sm_90" or "PTX compute_80 (JIT)".
  const std::string &codeDescription() const { return codeDescription_; }

private:
  explicit CudaCell(const cellpack::CellType &cell) : cell_(cell) {}

  const cellpack::CellType &cell_;
  cudaLibrary_t library_ = nullptr;
  std::map<std::string, cudaKernel_t> kernels_;
  DeviceBuffer weights_;
  std::vector<size_t> weightOffsets_;
  std::string codeDescription_;
  /// Every kernel of the code waits for the grids before it in the stream:
  /// it lists GridDependency.h's marker and was compiled for sm_90 on.
  bool waitsForPriorGrids_ = false;
  bool writesToAddresses_ = false;
};

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUDACELL_H
