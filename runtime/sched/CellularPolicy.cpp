//===- CellularPolicy.cpp - Cellular batching through Algorithm 1 ---------===//
//
// Every ready subgraph of a request becomes a scheduler subgraph whose tag
// points at the policy's record of it (the request and its cell-graph
// nodes), so turning a scheduled task into cell-graph nodes needs no
// lookup. A request that ends drops its subgraphs: those with nodes still
// running leave the scheduler when the nodes finish.
//
//===----------------------------------------------------------------------===//
#include "BatchingPolicy.h"

#include <algorithm>
#include <unordered_map>

using namespace cellrun;

namespace {

struct SubgraphRecord {
  uint64_t request = 0;
  uint32_t part = 0;
  bool chain = true;
  SubgraphId id = 0;
  std::vector<uint32_t> nodes; // cell-graph nodes, by scheduler index
};

class CellularPolicy final : public BatchingPolicy {
public:
  CellularPolicy(const std::vector<PartInfo> &parts, uint32_t maxTasks)
      : scheduler_(configs(parts), maxTasks) {}

  void admitted(uint64_t, uint32_t) override {}

  Status add(uint64_t request, ReadySubgraph subgraph,
             uint64_t deadline) override {
    std::vector<std::unique_ptr<SubgraphRecord>> &open = open_[request];
    if (subgraph.continuesChain) {
      // The request's open chain of this part grows (a decoder).
      for (auto &record : open)
        if (record->chain && record->part == subgraph.part &&
            scheduler_
                .extend(record->id,
                        static_cast<uint32_t>(subgraph.nodes.size()))
                .isOk()) {
          record->nodes.insert(record->nodes.end(), subgraph.nodes.begin(),
                               subgraph.nodes.end());
          return Status::ok();
        }
      // It has left (every node ran): the new nodes start a chain.
    }
    auto record = std::make_unique<SubgraphRecord>();
    record->request = request;
    record->part = subgraph.part;
    record->chain = subgraph.successor.empty();
    uint64_t tag = reinterpret_cast<uintptr_t>(record.get());
    if (record->chain) {
      record->id = scheduler_.addSubgraph(
          subgraph.part, static_cast<uint32_t>(subgraph.nodes.size()), tag,
          deadline);
    } else {
      auto id =
          scheduler_.addTree(subgraph.part, subgraph.successor, tag, deadline);
      if (!id.ok())
        return id.status();
      record->id = id.value();
    }
    record->nodes = std::move(subgraph.nodes);
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
        out.nodes[n] = {record->request, record->nodes[task.nodes[n].index]};
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

  std::vector<uint64_t> requestDone(uint64_t request) override {
    auto found = open_.find(request);
    if (found == open_.end())
      return {request};
    std::vector<SubgraphRecord *> records;
    for (auto &record : found->second)
      records.push_back(record.get());
    for (SubgraphRecord *record : records)
      if (scheduler_.cancel(record->id))
        forget(record);
    return {request};
  }

private:
  static std::vector<CellTypeConfig>
  configs(const std::vector<PartInfo> &parts) {
    std::vector<CellTypeConfig> configs;
    for (const PartInfo &part : parts)
      configs.push_back({part.name, part.priority, part.batchSizes});
    return configs;
  }

  /// `record` has left the scheduler.
  void forget(SubgraphRecord *record) {
    auto found = open_.find(record->request);
    if (found == open_.end())
      return;
    auto &open = found->second;
    auto mine = std::find_if(open.begin(), open.end(),
                             [&](auto &kept) { return kept.get() == record; });
    if (mine != open.end())
      open.erase(mine);
    if (open.empty())
      open_.erase(found);
  }

  Scheduler scheduler_;
  /// Per request, its subgraphs in the scheduler.
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<SubgraphRecord>>>
      open_;
};

} // namespace

std::unique_ptr<BatchingPolicy>
cellrun::makeCellularPolicy(const std::vector<PartInfo> &parts,
                            uint32_t maxTasksToSubmit) {
  return std::make_unique<CellularPolicy>(parts, maxTasksToSubmit);
}
