//===- scheduler_bench.cpp - The scheduler's own host cost ----------------===//
//
// Algorithm 1 with a zero-cost executor: requests of random lengths (chains
// of 1..maxLength nodes) keep arriving so that about three batches of them
// are always in flight; every task "finishes" the moment it is scheduled.
// Prints the host time the scheduler spends per task and per request at
// batch sizes 64 and 512 (goal: at most 5 us per task, so the scheduler is
// never the bottleneck of a GPU step of tens of microseconds), and writes a
// CSV when asked.
//
//   scheduler_bench [--requests N] [--max-length L] [--csv FILE]
//
//===----------------------------------------------------------------------===//
#include "sched/Scheduler.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

using namespace cellrun;

namespace {

struct Measurement {
  uint64_t tasks = 0, nodes = 0, requests = 0;
  double seconds = 0;
};

Measurement measure(uint32_t batchSize, uint64_t requests, uint32_t maxLength,
                    uint32_t cellTypes) {
  std::vector<CellTypeConfig> configs;
  std::vector<uint32_t> sizes;
  for (uint32_t b = 1; b <= batchSize; b *= 2)
    sizes.push_back(b);
  for (uint32_t c = 0; c < cellTypes; ++c)
    configs.push_back({"cell" + std::to_string(c), static_cast<int>(c), sizes});
  Scheduler scheduler(configs);
  std::mt19937 random(7);
  std::uniform_int_distribution<uint32_t> length(1, maxLength);
  Measurement result;
  uint64_t submitted = 0, inFlight = 0;
  auto start = std::chrono::steady_clock::now();
  auto top = [&] {
    while (inFlight < 3ull * batchSize && submitted < requests) {
      scheduler.addSubgraph(static_cast<uint32_t>(submitted % cellTypes),
                            length(random), submitted);
      ++submitted;
      ++inFlight;
    }
  };
  top();
  while (!scheduler.idle()) {
    std::vector<Task> tasks = scheduler.schedule(0);
    for (const Task &task : tasks) {
      ++result.tasks;
      result.nodes += task.nodes.size();
      uint64_t done = scheduler.finish(task).size();
      inFlight -= done;
      result.requests += done;
    }
    top();
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app("The scheduler's own cost per task and per request, with a "
               "zero-cost executor.",
               "scheduler_bench");
  uint64_t requests = 200000;
  uint32_t maxLength = 50;
  std::string csvPath;
  app.add_option("--requests", requests, "requests")->capture_default_str();
  app.add_option("--max-length", maxLength, "longest request (nodes)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--csv", csvPath, "write the rows here");
  CLI11_PARSE(app, argc, argv);
  std::printf("Scheduler (Algorithm 1) with a zero-cost executor: %llu "
              "requests of 1..%u nodes, ~3 batches in flight\n",
              (unsigned long long)requests, maxLength);
  std::printf("%6s %6s %10s %12s %10s %14s %16s\n", "batch", "cells", "tasks",
              "nodes/task", "seconds", "us per task", "us per request");
  std::ofstream csv;
  if (!csvPath.empty()) {
    csv.open(csvPath);
    csv << "batch,cell_types,tasks,nodes_per_task,seconds,us_per_task,"
           "us_per_request\n";
  }
  for (uint32_t batch : {64u, 512u})
    for (uint32_t cells : {1u, 2u}) {
      Measurement m = measure(batch, requests, maxLength, cells);
      double perTask = m.seconds * 1e6 / m.tasks;
      double perRequest = m.seconds * 1e6 / m.requests;
      std::printf("%6u %6u %10llu %12.1f %10.3f %14.3f %16.3f\n", batch, cells,
                  (unsigned long long)m.tasks, double(m.nodes) / m.tasks,
                  m.seconds, perTask, perRequest);
      if (csv)
        csv << batch << "," << cells << "," << m.tasks << ","
            << double(m.nodes) / m.tasks << "," << m.seconds << "," << perTask
            << "," << perRequest << "\n";
    }
  return 0;
}
