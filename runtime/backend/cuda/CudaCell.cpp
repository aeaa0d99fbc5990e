//===- CudaCell.cpp - One cell type's code and weights on a device --------===//
#include "CudaCell.h"

#include "RowCopyKernel.h"

#include "GridDependency.h"

#include "CudaCheck.h"

using namespace cellrun;
using namespace cellrun::cuda;

static constexpr size_t kWeightAlignment = 256;

Result<std::unique_ptr<CudaCell>>
CudaCell::create(const LoadedArtifact &artifact, const cellpack::CellType &cell,
                 int computeCapability) {
  std::unique_ptr<CudaCell> loaded(new CudaCell(cell));
  std::string name = cell.name()->str();
  auto choice = selectCode(artifact, name, computeCapability);
  if (!choice.ok())
    return choice.status();
  bool ptx = choice->kind == CodeChoice::Kind::Ptx;
  loaded->codeDescription_ =
      (ptx ? "PTX " : "CUBIN ") + choice->arch + (ptx ? " (JIT)" : "");
  CELL_CUDA_TRY(cudaLibraryLoadData(&loaded->library_, choice->data, nullptr,
                                    nullptr, 0, nullptr, nullptr, 0));
  for (const cellpack::CellCode *code : *artifact.model().code()) {
    if (code->cell()->str() != name || !code->kernel_names())
      continue;
    for (const flatbuffers::String *kernelName : *code->kernel_names()) {
      cudaKernel_t kernel = nullptr;
      CELL_CUDA_TRY(
          cudaLibraryGetKernel(&kernel, loaded->library_, kernelName->c_str()));
      loaded->kernels_[kernelName->str()] = kernel;
    }
  }
  // The wait is compiled for sm_90 and later only: code for an older
  // architecture (a compute_80 PTX JIT-compiled for a newer device) lists
  // the marker but does not wait.
  loaded->waitsForPriorGrids_ =
      loaded->kernels_.count(cellpack::kGridDependencyMarkerName) != 0 &&
      codeArchNumber(choice->arch) >= 90;
  loaded->writesToAddresses_ =
      loaded->kernels_.count(cellpack::kRowCopyToAddressesKernelName) != 0;

  size_t total = 0;
  if (cell.weights())
    for (const cellpack::Weight *weight : *cell.weights()) {
      loaded->weightOffsets_.push_back(total);
      size_t bytes = weight->data() ? weight->data()->size() : 0;
      total +=
          (bytes + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
    }
  auto weights = DeviceBuffer::allocate(total);
  if (!weights.ok())
    return weights.status();
  loaded->weights_ = std::move(weights).value();
  if (cell.weights())
    for (uint32_t i = 0; i < cell.weights()->size(); ++i) {
      const cellpack::Weight *weight = cell.weights()->Get(i);
      if (weight->data() && weight->data()->size())
        CELL_TRY(uploadNow(loaded->weights_.data() + loaded->weightOffsets_[i],
                           weight->data()->data(), weight->data()->size()));
    }
  return loaded;
}

CudaCell::~CudaCell() {
  if (library_)
    cudaLibraryUnload(library_);
}

Result<cudaKernel_t> CudaCell::kernel(const std::string &name) const {
  auto found = kernels_.find(name);
  if (found == kernels_.end())
    return Status(StatusCode::NotFound, "cell '" + cell_.name()->str() +
                                            "': the code defines no "
                                            "kernel '" +
                                            name + "'");
  return found->second;
}
