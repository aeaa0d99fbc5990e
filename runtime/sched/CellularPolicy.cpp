//===- CellularPolicy.cpp - Cellular batching through Algorithm 1 ---------===//
//
// Every ready subgraph of a request becomes a scheduler subgraph whose tag
// points at the policy's record of it (the request and its cell-graph
// nodes), so turning a scheduled task into cell-graph nodes needs no
// lookup. A request that ends drops its subgraphs: those with nodes still
// running leave the scheduler when the nodes finish.
//
//===----------------------------------------------------------------------===//
#include "sched/BatchingPolicy.h"

#include <algorithm>

using namespace cellrun;

namespace {

struct SubgraphRecord {
  uint64_t request = 0;
  uint32_t part = 0;
  bool chain = true;
  SubgraphId id = 0;
  /// The cell-graph nodes, by scheduler index: `nodes`, or when it is
  /// empty `length` consecutive nodes from `first` (chains, as a cell graph
  /// hands them over).
  std::vector<uint32_t> nodes;
  uint32_t first = 0, length = 0;

  uint32_t node(uint32_t index) const {
    return nodes.empty() ? first + index : nodes[index];
  }
  void set(ReadySubgraph &subgraph) {
    nodes = std::move(subgraph.nodes);
    first = subgraph.first;
    length = subgraph.count;
  }
  void append(const ReadySubgraph &more) {
    if (nodes.empty() && more.nodes.empty() && more.first == first + length) {
      length += more.count;
      return;
    }
    for (uint32_t k = 0; nodes.empty() && k < length; ++k)
      nodes.push_back(first + k);
    for (size_t k = 0; k < more.size(); ++k)
      nodes.push_back(more.node(k));
  }
};

class CellularPolicy final : public BatchingPolicy {
public:
  CellularPolicy(const std::vector<PartInfo> &parts, uint32_t maxTasks)
      : scheduler_(configs(parts), maxTasks) {
    // The engine names only parts that exist, none feeding itself.
    for (uint32_t part = 0; part < parts.size(); ++part)
      if (parts[part].fill.rows > 0)
        (void)scheduler_.setFillRule(part, parts[part].fill);
  }

  void admitted(uint64_t, uint32_t) override {}

  Status add(uint64_t request, ReadySubgraph subgraph,
             uint64_t deadline) override {
    std::vector<std::unique_ptr<SubgraphRecord>> &open = openOf(request);
    if (subgraph.continuesChain) {
      // The request's open chain of this part grows (a decoder).
      for (auto &record : open)
        if (record->chain && record->part == subgraph.part &&
            scheduler_
                .extend(record->id, static_cast<uint32_t>(subgraph.size()))
                .isOk()) {
          record->append(subgraph);
          return Status::ok();
        }
      // It has left (every node ran): the new nodes start a chain.
    }
    std::unique_ptr<SubgraphRecord> record = newRecord();
    record->request = request;
    record->part = subgraph.part;
    record->chain = subgraph.successor.empty();
    uint64_t tag = reinterpret_cast<uintptr_t>(record.get());
    if (record->chain) {
      record->id = scheduler_.addSubgraph(
          subgraph.part, static_cast<uint32_t>(subgraph.size()), tag, deadline);
    } else {
      auto id =
          scheduler_.addTree(subgraph.part, subgraph.successor, tag, deadline);
      if (!id.ok())
        return id.status();
      record->id = id.value();
    }
    record->set(subgraph);
    open.push_back(std::move(record));
    return Status::ok();
  }

  std::vector<PlannedTask> next() override {
    std::vector<PlannedTask> planned;
    for (Task &task : scheduler_.schedule(0)) {
      PlannedTask out;
      out.part = task.cellType;
      out.nodes.resize(task.nodes.size());
      for (size_t n = 0; n < task.nodes.size(); ++n) {
        auto *record =
            reinterpret_cast<SubgraphRecord *>(scheduler_.tagOf(task.nodes[n]));
        // Field by field: no store-forwarding stall per node.
        out.nodes[n].request = record->request;
        out.nodes[n].node = record->node(task.nodes[n].index);
      }
      out.schedulerTask = std::move(task);
      planned.push_back(std::move(out));
    }
    return planned;
  }

  void finished(const PlannedTask &task) override {
    for (const Scheduler::Completed &done :
         scheduler_.finish(task.schedulerTask))
      forget(reinterpret_cast<SubgraphRecord *>(done.tag));
  }

  void requestDone(uint64_t request, std::vector<uint64_t> &returned) override {
    returned.push_back(request);
    std::vector<std::unique_ptr<SubgraphRecord>> *open = findOpen(request);
    if (!open || open->empty())
      return;
    std::vector<SubgraphRecord *> records;
    for (auto &record : *open)
      records.push_back(record.get());
    for (SubgraphRecord *record : records)
      if (scheduler_.cancel(record->id))
        forget(record);
  }

  bool release(uint64_t request,
               std::vector<ReadySubgraph> &remaining) override {
    std::vector<std::unique_ptr<SubgraphRecord>> *open = findOpen(request);
    if (!open)
      return false; // nothing of it here to hand over
    for (auto &record : *open)
      if (scheduler_.running(record->id))
        return false;
    size_t before = remaining.size();
    std::vector<SubgraphRecord *> records;
    for (auto &record : *open) {
      records.push_back(record.get());
      std::vector<int32_t> successor;
      std::vector<uint32_t> indices = scheduler_.unsubmitted(
          record->id, record->chain ? nullptr : &successor);
      if (indices.empty())
        continue;
      ReadySubgraph &rest = remaining.emplace_back();
      rest.part = record->part;
      if (record->chain && record->nodes.empty()) {
        rest.first = record->first + indices.front(); // consecutive
        rest.count = static_cast<uint32_t>(indices.size());
        continue;
      }
      for (uint32_t index : indices)
        rest.nodes.push_back(record->node(index));
      rest.successor = std::move(successor);
    }
    if (remaining.size() == before)
      return false; // nothing left to run that another worker could take
    for (SubgraphRecord *record : records) {
      (void)scheduler_.cancel(record->id); // none running: it leaves now
      forget(record);
    }
    return true;
  }

private:
  static std::vector<CellTypeConfig>
  configs(const std::vector<PartInfo> &parts) {
    std::vector<CellTypeConfig> configs;
    for (const PartInfo &part : parts)
      configs.push_back({part.name, part.priority, part.batchSizes});
    return configs;
  }

  /// `record` has left the scheduler; it is kept for reuse.
  void forget(SubgraphRecord *record) {
    std::vector<std::unique_ptr<SubgraphRecord>> *open =
        findOpen(record->request);
    if (!open || std::none_of(open->begin(), open->end(),
                              [&](auto &kept) { return kept.get() == record; }))
      open = &leaving_; // its request's slot went to another request
    auto mine = std::find_if(open->begin(), open->end(),
                             [&](auto &kept) { return kept.get() == record; });
    if (mine == open->end())
      return;
    std::unique_ptr<SubgraphRecord> spare = std::move(*mine);
    open->erase(mine);
    if (spare_.size() < 4096) {
      spare->nodes.clear();
      spare->first = spare->length = 0;
      spare_.push_back(std::move(spare));
    }
  }

  std::unique_ptr<SubgraphRecord> newRecord() {
    if (spare_.empty())
      return std::make_unique<SubgraphRecord>();
    std::unique_ptr<SubgraphRecord> record = std::move(spare_.back());
    spare_.pop_back();
    return record;
  }

  // Requests are the engine's slot keys (SlotTable: the slot in the low 32
  // bits), so their subgraphs are found by index, not by hashing.
  struct Open {
    uint64_t request = 0;
    std::vector<std::unique_ptr<SubgraphRecord>> records;
  };
  std::vector<std::unique_ptr<SubgraphRecord>> &openOf(uint64_t request) {
    size_t slot = request & 0xffffffffu;
    if (slot >= open_.size())
      open_.resize(std::max(slot + 1, open_.size() * 2));
    Open &open = open_[slot];
    if (open.request != request) {
      // Subgraphs of the request that had the slot, still running after
      // it ended: kept until the scheduler reports them finished.
      for (auto &stale : open.records)
        leaving_.push_back(std::move(stale));
      open.records.clear();
      open.request = request;
    }
    return open.records;
  }
  std::vector<std::unique_ptr<SubgraphRecord>> *findOpen(uint64_t request) {
    size_t slot = request & 0xffffffffu;
    if (slot >= open_.size() || open_[slot].request != request)
      return nullptr;
    return &open_[slot].records;
  }

  Scheduler scheduler_;
  /// Per request slot, its subgraphs in the scheduler.
  std::vector<Open> open_;
  std::vector<std::unique_ptr<SubgraphRecord>> spare_, leaving_;
};

} // namespace

std::unique_ptr<BatchingPolicy>
cellrun::makeCellularPolicy(const std::vector<PartInfo> &parts,
                            uint32_t maxTasksToSubmit) {
  return std::make_unique<CellularPolicy>(parts, maxTasksToSubmit);
}
