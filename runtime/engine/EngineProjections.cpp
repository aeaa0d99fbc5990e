//===- EngineProjections.cpp - A chain's inputs projected at admission ---===//
//
// cellc can move a chain cell's input projection (x times W plus c) into a
// cell of its own (cell-hoist-input-projections); the step then reads the
// product's row where it read x. A worker runs that cell over all the steps
// of the requests it admits in one call (every request admitted in a round
// together), in tasks of up to the cell's largest batch size, through pool
// rows taken for the task and given back after it (the worker binds nothing
// else meanwhile), and the products become the requests' step rows. Each step
// then multiplies only its state by the recurrent weights, and the product is
// computed once per request step in large batches, as cuDNN and ONNX Runtime do
// for a sequence.
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

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
  /// Up to `wanted` rows of the input pool and, with `outputs`, as many of
  /// the output pool (at least one each), or an error. Without: the task's
  /// outputs go to rows held elsewhere.
  Status take(uint32_t wanted, bool outputs = true) {
    uint32_t free = !outputs ? in_.available()
                    : &in_ == &out_
                        ? in_.available() / 2
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
      if (!outputs)
        continue;
      taken = out_.acquire();
      if (!taken.ok())
        return taken.status();
      outputRows_[0].push_back(static_cast<int32_t>(taken.value()));
    }
    return Status::ok();
  }
  uint32_t count() const {
    return static_cast<uint32_t>(
        std::max(outputRows_[0].size(), inputRows_[0].size()));
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

Status
EngineWorker::runProjection(const cellpack::CellType &cell, uint32_t d,
                            uint32_t rows,
                            const std::vector<std::vector<int32_t>> &inputRows,
                            const std::vector<std::vector<int32_t>> &outputRows,
                            const Executor::TaskIO &io) {
  Clock::time_point before = Clock::now();
  auto ran = executor_->run(cell, rows, inputRows, outputRows, io);
  executorTime_ += Clock::now() - before;
  if (ran.ok())
    return Status::ok();
  const CellRoles &roles = parser_->structure().cells[0];
  return Status(ran.status().code(), "projecting input '" +
                                         roles.dataSpecs[d]->name()->str() +
                                         "': " + ran.status().message());
}

Status EngineWorker::projectInputs(const std::vector<Entry *> &entries) {
  const ModelStructure &structure = parser_->structure();
  if (structure.kind != cellpack::Structure::Chain || entries.empty())
    return Status::ok();
  const auto &projections = structure.cells[0].dataProjections;
  if (std::none_of(projections.begin(), projections.end(),
                   [](const cellpack::CellType *cell) { return cell; }))
    return Status::ok();
  std::vector<Entry *> inPools, inSteps;
  for (Entry *entry : entries)
    (entry->productsInPools ? inPools : inSteps).push_back(entry);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.productsInPoolRows += inPools.size();
    stats_.productsThroughStepRows += inSteps.size();
  }
  if (!inPools.empty())
    if (Status projected = projectIntoPools(inPools); !projected.isOk())
      return projected;
  return inSteps.empty() ? Status::ok() : projectIntoSteps(inSteps);
}

Status EngineWorker::projectIntoPools(const std::vector<Entry *> &entries) {
  const CellRoles &roles = parser_->structure().cells[0];
  // Each request's product rows, one a step per projected input, taken
  // from its reservation (needOf); given back when it ends.
  // (Before the graph starts: its steps are the request's.)
  auto stepsOf = [](const Entry &entry) {
    return static_cast<uint32_t>(entry.graph->request().steps.size());
  };
  for (Entry *entry : entries) {
    uint32_t steps = stepsOf(*entry);
    uint32_t blocks =
        productBlock(static_cast<uint32_t>(productsInPools_.size()));
    entry->productRows.assign(size_t(blocks) * steps, -1);
    for (uint32_t d = 0; d < productsInPools_.size(); ++d) {
      if (!productsInPools_[d])
        continue;
      uint32_t pool = poolId(0, false, roles.dataInputs[d]);
      int32_t *rows =
          entry->productRows.data() + size_t(productBlock(d)) * steps;
      for (uint32_t s = 0; s < steps; ++s) {
        Status error;
        rows[s] = acquireFor(*entry, pool, &error);
        if (rows[s] < 0)
          return error;
      }
    }
  }
  for (uint32_t d = 0; d < productsInPools_.size(); ++d) {
    if (!productsInPools_[d])
      continue;
    const cellpack::CellType &cell = *roles.dataProjections[d];
    SlotPool &in = executor_->pool(cell, false, 0);
    uint32_t largest =
        cell.plans()->Get(cell.plans()->size() - 1)->batch_size();
    // Every (request, step) in turn, in tasks of up to the largest batch:
    // the request's row of x read where it lies, the product written into
    // the step's own row.
    std::vector<std::pair<Entry *, uint32_t>> steps;
    for (Entry *entry : entries)
      for (uint32_t s = 0; s < stepsOf(*entry); ++s)
        steps.push_back({entry, s});
    for (size_t first = 0; first < steps.size();) {
      ProjectionRows rows(in, in);
      uint32_t wanted = static_cast<uint32_t>(
          std::min<size_t>(largest, steps.size() - first));
      if (Status taken = rows.take(wanted, /*outputs=*/false); !taken.isOk())
        return taken;
      std::vector<std::vector<int32_t>> outputRows(1);
      Executor::TaskIO io;
      for (uint32_t r = 0; r < rows.count(); ++r) {
        auto [entry, s] = steps[first + r];
        size_t block = size_t(productBlock(d)) * stepsOf(*entry);
        outputRows[0].push_back(entry->productRows[block + s]);
        io.writes.push_back(
            {0, r, entry->graph->request().steps.row(s, d), true});
      }
      if (Status ran = runProjection(cell, d, rows.count(), rows.inputRows(),
                                     outputRows, io);
          !ran.isOk())
        return ran;
      first += rows.count();
    }
  }
  return Status::ok();
}

Status EngineWorker::projectIntoSteps(const std::vector<Entry *> &entries) {
  const CellRoles &roles = parser_->structure().cells[0];
  const auto &projections = roles.dataProjections;
  // Per data input, the bytes of a product row (0: not projected).
  std::vector<size_t> productBytes(projections.size(), 0);
  for (size_t d = 0; d < projections.size(); ++d)
    if (projections[d])
      productBytes[d] = executor_->pool(*projections[d], true, 0).rowBytes();
  // Each request's steps as the cell will read them, laid out first (room
  // reserved, so rows do not move): the projected rows are where the
  // projection's reads land, the others are the request's.
  std::vector<StepRows> projected(entries.size());
  // Per data input, the destination of each (request, step) row in order.
  std::vector<std::vector<uint8_t *>> destinations(projections.size());
  std::vector<std::pair<uint32_t, uint32_t>> steps; // (request, step)
  for (uint32_t e = 0; e < entries.size(); ++e) {
    const StepRows &given = entries[e]->graph->request().steps;
    size_t bytes = 0;
    for (size_t s = 0; s < given.size(); ++s)
      for (size_t d = 0; d < projections.size(); ++d)
        bytes += projections[d] ? productBytes[d] : given.rowSize(s, d);
    size_t count = std::max<size_t>(given.size(), 1);
    projected[e].reserve(count, projections.size(),
                         (bytes + count - 1) / count);
    for (uint32_t s = 0; s < given.size(); ++s) {
      steps.push_back({e, s});
      for (size_t d = 0; d < projections.size(); ++d) {
        if (projections[d]) {
          destinations[d].push_back(projected[e].appendRow(productBytes[d]));
        } else {
          size_t size = given.rowSize(s, d);
          std::memcpy(projected[e].appendRow(size), given.row(s, d), size);
        }
      }
      projected[e].endStep();
    }
  }
  for (size_t d = 0; d < projections.size(); ++d) {
    const cellpack::CellType *cell = projections[d];
    if (!cell)
      continue;
    SlotPool &in = executor_->pool(*cell, false, 0);
    SlotPool &out = executor_->pool(*cell, true, 0);
    uint32_t largest =
        cell->plans()->Get(cell->plans()->size() - 1)->batch_size();
    for (size_t first = 0; first < steps.size();) {
      ProjectionRows rows(in, out);
      uint32_t wanted = static_cast<uint32_t>(
          std::min<size_t>(largest, steps.size() - first));
      if (Status taken = rows.take(wanted); !taken.isOk())
        return taken;
      Executor::TaskIO io;
      for (uint32_t r = 0; r < rows.count(); ++r) {
        auto [e, s] = steps[first + r];
        // Read where the request's row lies: not copied into the pool.
        io.writes.push_back(
            {0, r, entries[e]->graph->request().steps.row(s, d), true});
        io.reads.push_back({0, r, destinations[d][first + r]});
      }
      if (Status ran =
              runProjection(*cell, static_cast<uint32_t>(d), rows.count(),
                            rows.inputRows(), rows.outputRows(), io);
          !ran.isOk())
        return ran;
      first += rows.count();
    }
  }
  for (uint32_t e = 0; e < entries.size(); ++e)
    entries[e]->graph->replaceSteps(std::move(projected[e]));
  return Status::ok();
}
