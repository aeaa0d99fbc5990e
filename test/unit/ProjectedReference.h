//===- ProjectedReference.h - Reference cases of hoisted inputs -*- C++ -*-===//
//
// cellc moves a chain's feature-input projection into a cell of its own
// (cell-hoist-input-projections), so PyTorch's reference case for the step
// (which gives x) no longer fits the step as compiled. Both cells' cases
// are made from it here: the product x * op(W) * alpha + c * beta computed
// in double from the artifact's own weights and the projection plan's GEMM,
// rounded once, is the step's input in place of x, and the projection
// cell's case is x in, that product out. The step's outputs are still
// PyTorch's.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_PROJECTEDREFERENCE_H
#define CELL_TEST_PROJECTEDREFERENCE_H

#include "ReferenceData.h"
#include "artifact/Artifact.h"

#include <cstring>
#include <string>
#include <vector>

namespace cellc::testing {

/// The product of input `given` (rows of `depth` floats) by the GEMM of
/// `projection`'s largest plan.
inline bool projectRows(const cellrun::LoadedArtifact &artifact,
                        const cellpack::CellType &projection,
                        const RefTensor &given, uint32_t rows,
                        std::vector<float> &product, std::string &error) {
  const cellpack::BatchPlan *plan =
      projection.plans()->Get(projection.plans()->size() - 1);
  const cellpack::GemmStep *gemm = nullptr;
  for (const cellpack::TaskStep *step : *plan->steps())
    if (step->step_as_GemmStep())
      gemm = step->step_as_GemmStep();
  auto weight = [&](const cellpack::ValueRef *ref) -> const float * {
    if (!ref || ref->kind() != cellpack::ValueKind::Weight)
      return nullptr;
    const cellpack::Weight *w = projection.weights()->Get(ref->index());
    return w->dtype() == cellpack::DType::F32
               ? reinterpret_cast<const float *>(w->data()->data())
               : nullptr;
  };
  const float *b = gemm ? weight(gemm->b()) : nullptr;
  const float *c = gemm && gemm->c() ? weight(gemm->c()) : nullptr;
  if (!gemm || !b || (gemm->c() && !c) || !given.f32() ||
      given.numElements() != int64_t(rows) * gemm->k()) {
    error = artifact.displayName() + ": cell '" + projection.name()->str() +
            "' is not an fp32 GEMM of the reference's input";
    return false;
  }
  int64_t k = gemm->k(), n = gemm->n();
  product.assign(size_t(rows) * n, 0.0f);
  for (uint32_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t e = 0; e < k; ++e)
        sum += double(given.f32()[r * k + e]) *
               (gemm->trans_b() ? b[j * k + e] : b[e * n + j]);
      product[r * n + j] = static_cast<float>(
          gemm->alpha() * sum + (c ? gemm->beta() * double(c[j]) : 0.0));
    }
  return true;
}

/// `cell`'s reference cases: `<dir>/h64/<cell>.ref` with every projected
/// input given as its product; for a projection cell, its input and its
/// product, made from the cases of the cell whose input it projects.
inline bool referenceCasesFor(const cellrun::LoadedArtifact &artifact,
                              const cellpack::CellType &cell,
                              const std::string &dir,
                              std::vector<RefCase> &cases, std::string &error) {
  // The step whose input this cell projects, if any.
  const cellpack::CellType *step = &cell;
  int32_t projected = -1;
  for (const cellpack::CellType *other : artifact.cells())
    for (uint32_t i = 0; other->inputs() && i < other->inputs()->size(); ++i)
      if (const auto *by = other->inputs()->Get(i)->projected_by())
        if (by->str() == cell.name()->str()) {
          step = other;
          projected = static_cast<int32_t>(i);
        }
  std::vector<RefCase> read;
  if (!readReference(dir + "/h64/" + step->name()->str() + ".ref", read, error))
    return false;
  for (RefCase &reference : read) {
    RefCase made;
    made.batch = reference.batch;
    for (uint32_t i = 0; i < step->inputs()->size(); ++i) {
      const cellpack::TensorSpec &spec = *step->inputs()->Get(i);
      const RefTensor *given = reference.find(spec.name()->str(), false);
      if (!spec.projected_by() || !given)
        continue;
      auto projection = artifact.cell(spec.projected_by()->str());
      std::vector<float> product;
      if (!projection.ok() ||
          !projectRows(artifact, *projection.value(), *given, reference.batch,
                       product, error))
        return false;
      RefTensor out;
      out.name = spec.name()->str();
      out.dims = {int64_t(reference.batch),
                  int64_t(product.size() / reference.batch)};
      out.data.resize(product.size() * sizeof(float));
      std::memcpy(out.data.data(), product.data(), out.data.size());
      if (int32_t(i) == projected) { // the projection cell's case
        made.tensors.push_back(*given);
        out.isOutput = true;
        made.tensors.push_back(std::move(out));
      } else {
        for (RefTensor &tensor : reference.tensors)
          if (!tensor.isOutput && tensor.name == out.name)
            tensor = out;
      }
    }
    cases.push_back(projected >= 0 ? std::move(made) : std::move(reference));
  }
  return true;
}

} // namespace cellc::testing

#endif // CELL_TEST_PROJECTEDREFERENCE_H
