//===- EngineProjections.cpp - A chain's inputs projected at admission ---===//
//
// cellc can move a chain cell's input projection (x times W plus c) into a
// cell of its own (cell-hoist-input-projections); the step then reads the
// product's row where it read x. When a worker admits such a request it
// runs that cell over all of the request's steps, in tasks of up to the
// cell's largest batch size, through pool rows taken for the task and given
// back after it (the worker binds nothing else meanwhile), and the products
// become the request's step rows. Each step then multiplies only its state
// by the recurrent weights, and the product is computed once per request
// step in large batches, as cuDNN and ONNX Runtime do for a sequence.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

#include <algorithm>
#include <cstring>

using namespace cellrun;

namespace {

/// Rows taken from the projection cell's pools for one task, given back
/// when it goes out of scope.
class ProjectionRows {
public:
  ProjectionRows(SlotPool &in, SlotPool &out) : in_(in), out_(out) {}
  ~ProjectionRows() {
    for (int32_t row : inputRows_[0])
      (void)in_.release(static_cast<uint32_t>(row));
    for (int32_t row : outputRows_[0])
      (void)out_.release(static_cast<uint32_t>(row));
  }
  /// Up to `wanted` rows in each pool (at least one), or an error.
  Status take(uint32_t wanted) {
    uint32_t free = &in_ == &out_ ? in_.available() / 2
                                  : std::min(in_.available(), out_.available());
    uint32_t count = std::min(wanted, free);
    if (count == 0)
      return Status(StatusCode::ResourceExhausted,
                    "out of memory: no free pool row to project the "
                    "request's inputs into");
    for (uint32_t r = 0; r < count; ++r) {
      auto taken = in_.acquire();
      if (!taken.ok())
        return taken.status();
      inputRows_[0].push_back(static_cast<int32_t>(taken.value()));
      taken = out_.acquire();
      if (!taken.ok())
        return taken.status();
      outputRows_[0].push_back(static_cast<int32_t>(taken.value()));
    }
    return Status::ok();
  }
  uint32_t count() const {
    return static_cast<uint32_t>(outputRows_[0].size());
  }
  const std::vector<std::vector<int32_t>> &inputRows() const {
    return inputRows_;
  }
  const std::vector<std::vector<int32_t>> &outputRows() const {
    return outputRows_;
  }

private:
  SlotPool &in_, &out_;
  std::vector<std::vector<int32_t>> inputRows_{1}, outputRows_{1};
};

} // namespace

Status EngineWorker::projectInputs(Entry &entry) {
  const ModelStructure &structure = parser_->structure();
  if (structure.kind != cellpack::Structure::Chain)
    return Status::ok();
  const CellRoles &roles = structure.cells[0];
  const auto &projections = roles.dataProjections;
  if (std::none_of(projections.begin(), projections.end(),
                   [](const cellpack::CellType *cell) { return cell; }))
    return Status::ok();
  const StepRows &given = entry.graph->request().steps;
  size_t steps = given.size();
  // Per data input, the products of all steps, laid end to end.
  std::vector<std::vector<uint8_t>> products(projections.size());
  for (size_t d = 0; d < projections.size(); ++d) {
    const cellpack::CellType *cell = projections[d];
    if (!cell)
      continue;
    SlotPool &in = executor_->pool(*cell, false, 0);
    SlotPool &out = executor_->pool(*cell, true, 0);
    size_t rowBytes = out.rowBytes();
    products[d].resize(steps * rowBytes);
    uint32_t largest =
        cell->plans()->Get(cell->plans()->size() - 1)->batch_size();
    for (size_t first = 0; first < steps;) {
      ProjectionRows rows(in, out);
      uint32_t wanted =
          static_cast<uint32_t>(std::min<size_t>(largest, steps - first));
      if (Status taken = rows.take(wanted); !taken.isOk())
        return taken;
      Executor::TaskIO io;
      for (uint32_t r = 0; r < rows.count(); ++r) {
        io.writes.push_back({0, r, given.row(first + r, d)});
        io.reads.push_back({0, r, products[d].data() + (first + r) * rowBytes});
      }
      Clock::time_point before = Clock::now();
      auto ran = executor_->run(*cell, rows.count(), rows.inputRows(),
                                rows.outputRows(), io);
      executorTime_ += Clock::now() - before;
      if (!ran.ok())
        return Status(ran.status().code(),
                      "projecting input '" + roles.dataSpecs[d]->name()->str() +
                          "': " + ran.status().message());
      first += rows.count();
    }
  }
  // The steps' rows as the cell reads them.
  StepRows projected;
  for (size_t s = 0; s < steps; ++s) {
    for (size_t d = 0; d < projections.size(); ++d) {
      if (projections[d]) {
        size_t rowBytes = products[d].size() / steps;
        std::memcpy(projected.appendRow(rowBytes),
                    products[d].data() + s * rowBytes, rowBytes);
      } else {
        size_t size = given.rowSize(s, d);
        std::memcpy(projected.appendRow(size), given.row(s, d), size);
      }
    }
    projected.endStep();
  }
  entry.graph->replaceSteps(std::move(projected));
  return Status::ok();
}
