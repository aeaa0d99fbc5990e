//===- CellularPolicy.cpp - Cellular batching through Algorithm 1 ---------===//
#include "BatchingPolicy.h"

#include <unordered_map>

using namespace cellrun;

namespace {

class CellularPolicy final : public BatchingPolicy {
public:
  CellularPolicy(const std::vector<PartInfo> &parts, uint32_t maxTasks)
      : scheduler_(configs(parts), maxTasks) {}

  void admitted(uint64_t, uint32_t) override {}

  void addChain(uint64_t request, const ReadyChain &chain,
                uint64_t deadline) override {
    SubgraphId id = scheduler_.addSubgraph(
        chain.part, static_cast<uint32_t>(chain.nodes.size()), request,
        deadline);
    subgraphs_[id] = chain.nodes;
  }

  std::vector<PlannedTask> next() override {
    std::vector<PlannedTask> planned;
    for (Task &task : scheduler_.schedule(0)) {
      PlannedTask out;
      out.part = task.cellType;
      out.nodes.reserve(task.nodes.size());
      for (const TaskNode &node : task.nodes)
        out.nodes.push_back(
            {scheduler_.tagOf(node), subgraphs_.at(node.subgraph)[node.index]});
      out.schedulerTask = std::move(task);
      planned.push_back(std::move(out));
    }
    return planned;
  }

  void finished(const PlannedTask &task) override {
    for (const Scheduler::Completed &done :
         scheduler_.finish(task.schedulerTask))
      subgraphs_.erase(done.subgraph);
  }

  std::vector<uint64_t> requestDone(uint64_t request) override {
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

  Scheduler scheduler_;
  std::unordered_map<SubgraphId, std::vector<uint32_t>> subgraphs_;
};

} // namespace

std::unique_ptr<BatchingPolicy>
cellrun::makeCellularPolicy(const std::vector<PartInfo> &parts,
                            uint32_t maxTasksToSubmit) {
  return std::make_unique<CellularPolicy>(parts, maxTasksToSubmit);
}
