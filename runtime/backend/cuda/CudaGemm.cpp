//===- CudaGemm.cpp - One GEMM step of a plan through cuBLASLt ------------===//
#include "CudaGemm.h"

#include "CudaCheck.h"
#include "CudaTiming.h"

#include "SkinnyGemmKernel.h"

#include <cstdio>
#include <vector>

using namespace cellrun;
using namespace cellrun::cuda;

cublasComputeType_t
cellrun::cuda::gemmComputeType(cellpack::Precision precision) {
  switch (precision) {
  case cellpack::Precision::TF32:
    return CUBLAS_COMPUTE_32F_FAST_TF32;
  case cellpack::Precision::BF16:
    return CUBLAS_COMPUTE_32F_FAST_16BF;
  case cellpack::Precision::FP16:
    return CUBLAS_COMPUTE_32F_FAST_16F;
  case cellpack::Precision::FP32:
    break;
  }
  return CUBLAS_COMPUTE_32F;
}

/// The largest power of two (at most 256) that divides `pointer`.
static uint32_t alignmentOf(const void *pointer) {
  auto address = reinterpret_cast<uintptr_t>(pointer);
  uint32_t alignment = 256;
  while (alignment > 4 && address % alignment)
    alignment /= 2;
  return alignment;
}

static int64_t elementCount(const cellpack::ValueRef &ref) {
  int64_t count = 1;
  if (ref.shape())
    for (int64_t dim : *ref.shape())
      count *= dim;
  return count;
}

Result<std::unique_ptr<CudaGemm>>
CudaGemm::create(cublasLtHandle_t handle, const cellpack::GemmStep &step,
                 int64_t rows, const GemmOperands &operands, void *workspace,
                 size_t workspaceBytes, cudaStream_t stream,
                 const SkinnyGemmKernel &skinny, int candidates) {
  for (const cellpack::ValueRef *ref : {step.a(), step.b(), step.d()})
    if (ref->dtype() != cellpack::DType::F32)
      return Status(StatusCode::Unsupported,
                    "the CUDA backend runs GEMMs on fp32 data");
  std::unique_ptr<CudaGemm> gemm(new CudaGemm());
  gemm->handle_ = handle;
  gemm->a_ = operands.a;
  gemm->b_ = operands.b;
  gemm->d_ = operands.d;
  gemm->workspace_ = workspace;
  gemm->workspaceBytes_ = workspaceBytes;
  gemm->alpha_ = step.alpha();
  int64_t m = rows, n = step.n(), k = step.k();
  gemm->m_ = m;
  gemm->n_ = n;
  gemm->k_ = k;
  gemm->skinnyBeta_ = step.beta();

  CELL_TRY(gemm->createDescriptors(step));
  CELL_TRY(gemm->attachBiasOrC(step, operands));
  char text[96];
  std::snprintf(text, sizeof text, "m=%lld n=%lld k=%lld %s",
                static_cast<long long>(m), static_cast<long long>(n),
                static_cast<long long>(k),
                cellpack::EnumNamePrecision(step.precision()));
  gemm->description_ = text;
  gemm->skinny_ = skinny;
  CELL_TRY(gemm->chooseKernel(step, operands, stream, candidates));
  return gemm;
}

Status CudaGemm::createDescriptors(const cellpack::GemmStep &step) {
  int64_t m = m_, n = n_, k = k_;
  CELL_CUBLAS_TRY(lt().cublasLtMatmulDescCreate(
      &operation_, gemmComputeType(step.precision()), CUDA_R_32F));
  // Column-major D^T = op(B)^T op(A)^T: cuBLASLt's first operand is our B.
  cublasOperation_t opFirst = step.trans_b() ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSecond = step.trans_a() ? CUBLAS_OP_T : CUBLAS_OP_N;
  CELL_CUBLAS_TRY(lt().cublasLtMatmulDescSetAttribute(
      operation_, CUBLASLT_MATMUL_DESC_TRANSA, &opFirst, sizeof opFirst));
  CELL_CUBLAS_TRY(lt().cublasLtMatmulDescSetAttribute(
      operation_, CUBLASLT_MATMUL_DESC_TRANSB, &opSecond, sizeof opSecond));
  CELL_CUBLAS_TRY(lt().cublasLtMatrixLayoutCreate(
      &layoutA_, CUDA_R_32F, step.trans_b() ? k : n, step.trans_b() ? n : k,
      step.trans_b() ? k : n));
  CELL_CUBLAS_TRY(lt().cublasLtMatrixLayoutCreate(
      &layoutB_, CUDA_R_32F, step.trans_a() ? m : k, step.trans_a() ? k : m,
      step.trans_a() ? m : k));
  CELL_CUBLAS_TRY(
      lt().cublasLtMatrixLayoutCreate(&layoutD_, CUDA_R_32F, n, m, n));
  CELL_CUBLAS_TRY(
      lt().cublasLtMatrixLayoutCreate(&layoutC_, CUDA_R_32F, n, m, n));
  return Status::ok();
}

Status CudaGemm::attachBiasOrC(const cellpack::GemmStep &step,
                               const GemmOperands &operands) {
  // Bias: a vector of n as the BIAS epilogue, a full [m, n] C as beta * C.
  c_ = d_;
  beta_ = 0.0f;
  if (!step.c())
    return Status::ok();
  int64_t m = m_, n = n_;
  int64_t count = elementCount(*step.c());
  // With m == 1 both shapes fit: a weight is a bias, anything else is C.
  bool fullC = count == m * n;
  if (count == n && !(fullC && !operands.hostBias))
    return attachBias(step, operands);
  if (!fullC)
    return Status(StatusCode::Unsupported,
                  "a GEMM's C must have n or m * n elements");
  c_ = operands.c;
  beta_ = step.beta();
  skinnyC_ = operands.c;
  return Status::ok();
}

Status CudaGemm::attachBias(const cellpack::GemmStep &step,
                            const GemmOperands &operands) {
  int64_t n = n_;
  const void *bias = operands.c;
  if (step.beta() != 1.0f) {
    if (!operands.hostBias)
      return Status(StatusCode::Unsupported,
                    "a GEMM bias scaled by beta must be a weight");
    std::vector<float> scaled(operands.hostBias, operands.hostBias + n);
    for (float &value : scaled)
      value *= step.beta();
    auto buffer = DeviceBuffer::allocate(n * sizeof(float));
    if (!buffer.ok())
      return buffer.status();
    scaledBias_ = std::move(buffer).value();
    CELL_TRY(uploadNow(scaledBias_.data(), scaled.data(), n * sizeof(float)));
    bias = scaledBias_.data();
  }
  skinnyBias_ = operands.c; // the kernel scales it by beta
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  cudaDataType_t biasType = CUDA_R_32F;
  CELL_CUBLAS_TRY(lt().cublasLtMatmulDescSetAttribute(
      operation_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  CELL_CUBLAS_TRY(lt().cublasLtMatmulDescSetAttribute(
      operation_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
      sizeof biasType));
  CELL_CUBLAS_TRY(lt().cublasLtMatmulDescSetAttribute(
      operation_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  return Status::ok();
}

Status CudaGemm::chooseKernel(const cellpack::GemmStep &step,
                              const GemmOperands &operands, cudaStream_t stream,
                              int candidates) {
  int64_t m = m_, n = n_, k = k_;
  bool contest = !skinny_.variants.empty() && !step.trans_a() &&
                 !step.trans_b() && cellpack::skinnyGemmFits(m, n, k) &&
                 step.precision() != cellpack::Precision::BF16 &&
                 step.precision() != cellpack::Precision::FP16;
  for (const void *pointer : std::initializer_list<const void *>{
           operands.a, operands.b, operands.d, skinnyBias_, skinnyC_})
    contest = contest && alignmentOf(pointer) >= 16;
  Status chosen = chooseAlgorithm(stream, candidates);
  if (contest) {
    Status contested =
        contestSkinny(stream, chosen.isOk() ? cublasMicros_ : -1.0f);
    if (!contested.isOk()) {
      if (!chosen.isOk())
        return contested; // neither runs the GEMM
      useSkinny_ = false;
      description_ +=
          " (the skinny kernel failed: " + contested.message() + ")";
    }
  }
  if (!chosen.isOk() && !useSkinny_)
    return chosen;
  if (useSkinny_ && chosen.isOk()) {
    Status checked = checkSkinny(stream, operands, step.precision());
    if (!checked.isOk()) { // cuBLASLt runs it, unless the device is broken
      cudaError_t sticky = cudaGetLastError();
      if (sticky != cudaSuccess && cudaGetLastError() != cudaSuccess)
        return checked;
      useSkinny_ = false;
      description_ +=
          " (its check against cuBLASLt failed: " + checked.message() +
          "; cuBLASLt runs it)";
    }
  }
  if (!useSkinny_) { // its k-split buffers are not needed
    partial_ = DeviceBuffer();
    counters_ = DeviceBuffer();
  }
  return Status::ok();
}

Status CudaGemm::chooseAlgorithm(cudaStream_t stream, int candidates) {
  cublasLtMatmulPreference_t preference = nullptr;
  CELL_CUBLAS_TRY(lt().cublasLtMatmulPreferenceCreate(&preference));
  struct Release {
    cublasLtMatmulPreference_t preference;
    ~Release() { lt().cublasLtMatmulPreferenceDestroy(preference); }
  } release{preference};
  uint64_t bytes = workspaceBytes_;
  CELL_CUBLAS_TRY(lt().cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes,
      sizeof bytes));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void *>
      alignments[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, b_},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, a_},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c_},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, d_}};
  for (const auto &[attribute, pointer] : alignments) {
    uint32_t alignment = alignmentOf(pointer);
    CELL_CUBLAS_TRY(lt().cublasLtMatmulPreferenceSetAttribute(
        preference, attribute, &alignment, sizeof alignment));
  }
  std::vector<cublasLtMatmulHeuristicResult_t> proposed(candidates);
  int returned = 0;
  CELL_CUBLAS_TRY(lt().cublasLtMatmulAlgoGetHeuristic(
      handle_, operation_, layoutA_, layoutB_, layoutC_, layoutD_, preference,
      candidates, proposed.data(), &returned));
  if (returned == 0)
    return Status(StatusCode::Unsupported,
                  "cuBLASLt has no algorithm for the GEMM " + description_);
  algorithm_ = proposed[0].algo;
  // Time every proposal on the plan's buffers; keep the fastest.
  float best = -1.0f;
  int usable = 0;
  cublasLtMatmulAlgo_t fastest = proposed[0].algo;
  for (int i = 0; i < returned; ++i) {
    if (proposed[i].state != CUBLAS_STATUS_SUCCESS)
      continue;
    algorithm_ = proposed[i].algo;
    if (!enqueue(stream).isOk()) // warm-up; an algorithm that fails is skipped
      continue;
    auto micros = timeEnqueuedMicros(
        stream, [&] { return enqueue(stream); }, /*warmUp=*/false);
    if (!micros.ok())
      return micros.status();
    ++usable;
    if (best < 0.0f || micros.value() < best) {
      best = micros.value();
      fastest = proposed[i].algo;
    }
  }
  if (usable == 0)
    return Status(StatusCode::Unsupported,
                  "no cuBLASLt proposal runs the GEMM " + description_);
  algorithm_ = fastest;
  cublasMicros_ = best;
  char text[96];
  std::snprintf(text, sizeof text, ", fastest of %d proposals: %.1f us", usable,
                cublasMicros_);
  description_ += text;
  return Status::ok();
}

Status CudaGemm::enqueue(cudaStream_t stream,
                         const GatheredRows *gathered) const {
  if (gathered && !gathersA())
    return Status(StatusCode::Internal,
                  "a GEMM was given gathered rows of A but does not gather");
  if (gathered && (gathered->count < 1 || gathered->count > m_))
    return Status(StatusCode::OutOfRange,
                  "a GEMM of " + std::to_string(m_) + " rows was given " +
                      std::to_string(gathered->count) + " gathered rows");
  if (useSkinny_)
    return enqueueSkinny(stream, gathered);
  CELL_CUBLAS_TRY(lt().cublasLtMatmul(handle_, operation_, &alpha_, b_,
                                      layoutA_, a_, layoutB_, &beta_, c_,
                                      layoutC_, d_, layoutD_, &algorithm_,
                                      workspace_, workspaceBytes_, stream));
  return Status::ok();
}

CudaGemm::~CudaGemm() {
  for (cublasLtMatrixLayout_t layout : {layoutA_, layoutB_, layoutC_, layoutD_})
    if (layout)
      lt().cublasLtMatrixLayoutDestroy(layout);
  if (operation_)
    lt().cublasLtMatmulDescDestroy(operation_);
}
