//===- ArtifactChecks.cpp - Semantic checks of a cellpack Model -----------===//
//
// Walks the Model once, cell by cell and plan by plan, and stops at the
// first problem. The FlatBuffers Verifier has already made every table,
// vector and string readable; these checks make the values consistent:
// cells named uniquely with one code entry each, enum values known, tensor
// and weight sizes computable (with overflow checks, every number comes
// from the file) and matching the data, batch sizes increasing. The steps
// of each plan are checked by StepChecks.cpp.
//
//===----------------------------------------------------------------------===//
#include "ArtifactChecks.h"
#include "CheckHelpers.h"

#include <string_view>
#include <unordered_map>

namespace cellrun::detail {
namespace {

using namespace cellpack;
using namespace checks;

class ModelChecker {
public:
  explicit ModelChecker(const Model &model) : model_(model) {}

  Status run() {
    if (!isKnown(model_.precision(), EnumValuesPrecision()))
      return fail("unknown model precision " + enumNumber(model_.precision()));
    if (!isKnown(model_.unfolding()->structure(), EnumValuesStructure()))
      return fail("unfolding: unknown structure " +
                  enumNumber(model_.unfolding()->structure()));
    if (Status s = checkCellList(); !s.isOk())
      return s;
    if (Status s = checkCodeEntries(); !s.isOk())
      return s;
    for (const CellType *cell : *model_.cells()) {
      cell_ = cell;
      cellWhere_ = "cell " + quoted(cell->name());
      if (Status s = checkSpecs(cell->inputs(), "input"); !s.isOk())
        return s;
      if (Status s = checkSpecs(cell->outputs(), "output"); !s.isOk())
        return s;
      if (Status s = checkWeights(); !s.isOk())
        return s;
      if (Status s = checkPlans(); !s.isOk())
        return s;
    }
    return Status::ok();
  }

private:
  Status checkCellList() {
    if (sizeOf(model_.cells()) == 0)
      return fail("the model has no cells");
    std::unordered_set<std::string_view> names;
    for (uint32_t i = 0; i < model_.cells()->size(); ++i) {
      const flatbuffers::String *name = model_.cells()->Get(i)->name();
      if (name->size() == 0)
        return fail("cell #" + std::to_string(i) + " has an empty name");
      if (!names.insert(name->string_view()).second)
        return fail("cell " + quoted(name) + " is defined twice");
    }
    return Status::ok();
  }

  Status checkCodeEntries() {
    std::unordered_map<std::string_view, int> entries;
    for (const CellType *cell : *model_.cells())
      entries[cell->name()->string_view()] = 0;
    for (uint32_t i = 0; i < sizeOf(model_.code()); ++i) {
      const CellCode *code = model_.code()->Get(i);
      auto it = entries.find(code->cell()->string_view());
      if (it == entries.end())
        return fail("code entry #" + std::to_string(i) + " is for " +
                    quoted(code->cell()) +
                    ", which is not a cell of the model");
      ++it->second;
      for (uint32_t k = 0; k < sizeOf(code->kernel_names()); ++k)
        kernelNames_[it->first].insert(
            code->kernel_names()->Get(k)->string_view());
    }
    for (const CellType *cell : *model_.cells()) {
      int count = entries[cell->name()->string_view()];
      if (count != 1)
        return fail("cell " + quoted(cell->name()) + " has " +
                    (count == 0 ? "no code entry"
                                : std::to_string(count) + " code entries") +
                    "; it needs exactly one");
    }
    return Status::ok();
  }

  Status checkSpecs(const TableVector<TensorSpec> *specs, const char *what) {
    for (uint32_t i = 0; i < sizeOf(specs); ++i) {
      const TensorSpec *spec = specs->Get(i);
      std::string where = cellWhere_ + ": " + what + " " + quoted(spec->name());
      if (!isKnown(spec->role(), EnumValuesRole()))
        return fail(where + ": unknown role " + enumNumber(spec->role()));
      uint64_t bytes;
      std::string problem;
      if (!denseBytes(spec->row_shape(), spec->dtype(), bytes, problem))
        return fail(where + ": " + problem);
    }
    return Status::ok();
  }

  Status checkWeights() {
    for (uint32_t i = 0; i < sizeOf(cell_->weights()); ++i) {
      const Weight *weight = cell_->weights()->Get(i);
      std::string where = cellWhere_ + ": weight " + quoted(weight->name());
      uint64_t needed;
      std::string problem;
      if (!denseBytes(weight->shape(), weight->dtype(), needed, problem))
        return fail(where + ": " + problem);
      uint64_t has = sizeOf(weight->data());
      if (has != needed)
        return fail(where + " has " + std::to_string(has) +
                    " bytes of data but its shape " +
                    formatShape(weight->shape()) + " of " +
                    EnumNameDType(weight->dtype()) + " needs " +
                    std::to_string(needed));
      // The file sits at an aligned address, so this is the file offset.
      if (has && reinterpret_cast<uintptr_t>(weight->data()->data()) %
                         kArtifactAlignment !=
                     0)
        return fail(where + ": data is not " +
                    std::to_string(kArtifactAlignment) +
                    "-byte aligned in the file (force_align of the schema)");
    }
    return Status::ok();
  }

  Status checkPlans() {
    if (sizeOf(cell_->plans()) == 0)
      return fail(cellWhere_ + " has no batch plans");
    uint32_t previous = 0;
    for (const BatchPlan *plan : *cell_->plans()) {
      uint32_t batch = plan->batch_size();
      if (batch == 0)
        return fail(cellWhere_ + ": batch size 0 is not allowed (>= 1)");
      if (batch <= previous)
        return fail(cellWhere_ + ": batch size " + std::to_string(batch) +
                    " follows " + std::to_string(previous) +
                    "; batch sizes must be strictly increasing");
      previous = batch;
    }
    for (const BatchPlan *plan : *cell_->plans()) {
      std::string where =
          cellWhere_ + ", batch size " + std::to_string(plan->batch_size());
      if (plan->peak_bytes() > plan->workspace_bytes())
        return fail(where + ": peak_bytes " +
                    std::to_string(plan->peak_bytes()) +
                    " exceed workspace_bytes " +
                    std::to_string(plan->workspace_bytes()));
      if (Status s = checkPlanSteps(
              *cell_, *plan, kernelNames_[cell_->name()->string_view()], where);
          !s.isOk())
        return s;
    }
    return Status::ok();
  }

  const Model &model_;
  std::unordered_map<std::string_view, KernelNameSet> kernelNames_;
  const CellType *cell_ = nullptr;
  std::string cellWhere_;
};

} // namespace

Status checkModelSemantics(const Model &model) {
  return ModelChecker(model).run();
}

} // namespace cellrun::detail