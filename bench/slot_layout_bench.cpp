//===- slot_layout_bench.cpp - The cuda backend's staging on the host -----===//
//
// What the host spends a task row getting a chain task into the cuda
// backend's staging slot, on any machine (no GPU needed: this is the host's
// part). An LSTM-like cell: a token column written, the emitted h column
// read, row indices for three inputs and two outputs. Per batch size: the
// task's columns expanded into a record a row first (what the executor did
// for the cuda backend before it took columns), the columns laid out and
// filled as they are, the copies that then deliver a finished task's
// emitted rows out of the read-back area (cpu::copyRows on the calling
// thread, as the backend does with one copy thread), and the columns laid
// out with the results in value memory the device writes (--pinned-results:
// an address a row, no delivery; at every row size here, though the
// backend addresses only rows of SlotLayout::kMinAddressedRowBytes or
// more). Prints ns a row, the median of --repeat
// runs; writes a CSV with --csv.
//
//===----------------------------------------------------------------------===//
#include "backend/cuda/CudaSlotLayout.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace cellrun;
using namespace cellrun::cuda;

namespace {

using Clock = std::chrono::steady_clock;

/// One chain task of `rows` rows as the engine gives it, with the memory
/// its rows come from and go to.
struct ChainTask {
  std::vector<PoolRef> inputs, outputs;
  std::vector<std::vector<int32_t>> rowIndices;
  std::vector<const std::vector<int32_t> *> indexPointers;
  std::vector<int32_t> tokens;
  std::vector<uint8_t> results; // where the emitted rows go (from resultsAt)
  uint8_t *resultsAt = nullptr; // on 64 bytes
  std::vector<Executor::WriteColumn> writeColumns;
  std::vector<Executor::ReadColumn> readColumns;
};

ChainTask makeTask(uint32_t rows, uint32_t batch, size_t rowBytes,
                   std::vector<uint8_t> &pools, std::mt19937 &random) {
  ChainTask task;
  uint8_t *base = pools.data();
  task.inputs = {{base, 4}, {base + 4096, rowBytes}, {base + 4096, rowBytes}};
  task.outputs = {{base + 4096, rowBytes}, {base + 4096, rowBytes}};
  for (size_t t = 0; t < 5; ++t) {
    std::vector<int32_t> indices(batch, 0);
    for (uint32_t r = 0; r < rows; ++r)
      indices[r] = static_cast<int32_t>(random() % 60000);
    task.rowIndices.push_back(indices);
  }
  for (const auto &indices : task.rowIndices)
    task.indexPointers.push_back(&indices);
  task.tokens.resize(rows);
  task.results.resize(size_t(rows) * rowBytes + 64);
  task.resultsAt =
      task.results.data() +
      (64 - reinterpret_cast<uintptr_t>(task.results.data()) % 64) % 64;
  Executor::WriteColumn tokens;
  tokens.input = 0;
  Executor::ReadColumn emitted;
  emitted.output = 0;
  for (uint32_t r = 0; r < rows; ++r) {
    task.tokens[r] = static_cast<int32_t>(random() % 30000);
    tokens.bytes.push_back(&task.tokens[r]);
    emitted.to.push_back(task.resultsAt + size_t(r) * rowBytes);
  }
  task.writeColumns = {tokens};
  task.readColumns = {emitted};
  return task;
}

/// The task's results as value memory the device writes.
class ResultsMemory final : public ValueMemory {
public:
  explicit ResultsMemory(const std::vector<uint8_t> &results)
      : begin_(results.data()), end_(results.data() + results.size()) {}
  void *allocate(size_t) noexcept override { return nullptr; }
  bool owns(const void *values) const noexcept override {
    auto *at = static_cast<const uint8_t *>(values);
    return at >= begin_ && at < end_;
  }
  void free(void *, size_t) noexcept override {}

private:
  const uint8_t *begin_, *end_;
};

/// Median of `values`.
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app("The cuda backend's staging of a chain task on the host (no "
               "GPU needed): ns a task row, columns expanded into single "
               "records against columns as they are, the deliveries of the "
               "emitted rows, and the columns laid out with the results in "
               "memory the device writes (--pinned-results: no delivery).");
  std::vector<uint32_t> batches = {1, 8, 64, 256, 512};
  size_t rowBytes = 4096;
  uint32_t repeat = 5, tasks = 2000;
  std::string csv;
  app.add_option("--batches", batches, "rows a task (batch sizes)")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::Range(1u, 1u << 16));
  app.add_option("--row-bytes", rowBytes,
                 "bytes of an emitted row (4096: hidden 1024, fp32)")
      ->capture_default_str()
      ->check(CLI::Range(size_t(4), size_t(1) << 20));
  app.add_option("--tasks", tasks, "tasks timed a measurement")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 24));
  app.add_option("--repeat", repeat, "measurements; the median is shown")
      ->capture_default_str()
      ->check(CLI::Range(1u, 99u));
  app.add_option("--csv", csv, "write the rows here");
  CLI11_PARSE(app, argc, argv);

  std::mt19937 random(1);
  std::vector<uint8_t> pools(8192);
  std::printf("cuda staging on the host, emitted rows of %zu bytes: ns a row, "
              "the median of 3 alternating sets, each the median of %u runs "
              "of %u tasks\n",
              rowBytes, repeat, tasks);
  std::printf("%6s %16s %15s %15s %17s %16s\n", "batch", "expanded ns/row",
              "columns ns/row", "deliver ns/row", "addressed ns/row",
              "staged/addressed");
  std::ofstream out;
  if (!csv.empty()) {
    out.open(csv);
    out << "batch,row_bytes,expanded_ns_per_row,columns_ns_per_row,"
           "deliver_ns_per_row,addressed_ns_per_row\n";
  }
  for (uint32_t batch : batches) {
    ChainTask task = makeTask(batch, batch, rowBytes, pools, random);
    SlotLayout layout;
    layout.setMinAddressedRowBytes(0); // the addressed column at any size
    std::vector<uint8_t> host, back(size_t(batch) * rowBytes);
    std::vector<cpu::RowCopy> deliveries;
    // The executor's expansion keeps its vectors' room from task to task.
    std::vector<Executor::RowWrite> writes;
    std::vector<Executor::RowRead> reads;
    ResultsMemory pinned(task.results);
    auto stage = [&](bool expand, const ValueMemory *addressable = nullptr) {
      deliveries.clear();
      RowMoves moves;
      if (expand) {
        writes.clear();
        reads.clear();
        for (const auto &column : task.writeColumns)
          column.appendTo(writes);
        for (const auto &column : task.readColumns)
          column.appendTo(reads);
        moves = {&writes, &reads};
      } else {
        moves = {nullptr, nullptr, &task.writeColumns, &task.readColumns};
      }
      layout.layOut(moves, task.inputs, task.outputs, task.rowIndices.size(),
                    batch, addressable);
      if (host.size() < layout.bytes())
        host.resize(layout.bytes()); // once: the same task every time
      layout.fill(host.data(), 1, task.indexPointers, batch, batch, moves,
                  back.data(), deliveries);
    };
    auto timeOf = [&](auto &&work) {
      std::vector<double> runs;
      for (uint32_t k = 0; k < repeat; ++k) {
        auto start = Clock::now();
        for (uint32_t t = 0; t < tasks; ++t)
          work();
        std::chrono::duration<double, std::nano> spent = Clock::now() - start;
        runs.push_back(spent.count() / (double(tasks) * batch));
      }
      return median(runs);
    };
    // Alternating, so that both see the same machine.
    std::vector<double> expandedRuns, columnRuns, addressedRuns;
    for (uint32_t k = 0; k < 3; ++k) {
      expandedRuns.push_back(timeOf([&] { stage(true); }));
      columnRuns.push_back(timeOf([&] { stage(false); }));
      addressedRuns.push_back(timeOf([&] { stage(false, &pinned); }));
    }
    double expanded = median(expandedRuns), columns = median(columnRuns),
           addressed = median(addressedRuns);
    if (!deliveries.empty() || layout.addressedGroups().size() != 1 ||
        layout.addressedGroups()[0].count != batch) {
      std::fprintf(stderr, "slot_layout_bench: the emitted rows were not "
                           "all addressed\n");
      return 1;
    }
    stage(false);
    // As the backend delivers them with one copy thread (the calling one).
    double deliver = timeOf([&] { cpu::copyRows(deliveries, nullptr); });
    std::printf("%6u %16.2f %15.2f %15.2f %17.2f %16.2f\n", batch, expanded,
                columns, deliver, addressed, (columns + deliver) / addressed);
    if (out)
      out << batch << ',' << rowBytes << ',' << expanded << ',' << columns
          << ',' << deliver << ',' << addressed << '\n';
  }
  return 0;
}
