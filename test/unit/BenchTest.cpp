//===- BenchTest.cpp - The pieces of `cellrun bench` ----------------------===//
//
// Traces are identical for a seed (request k at every rate, only the times
// scale); the latency bookkeeping on a simulated clock (window, nearest
// rank, queue and compute, drops); workloads read or refused by line;
// requests drawn from a shape are the same every time and pass the
// parser; the CSV and JSON carry the documented columns.
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "loadgen/BenchReport.h"
#include "loadgen/LatencyStats.h"
#include "loadgen/LoadTrace.h"
#include "loadgen/PeerRunner.h"
#include "loadgen/ServerLoad.h"
#include "loadgen/Workload.h"

#include "cellrun/RequestParser.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

using namespace cellrun;
using namespace cellrun::loadgen;

namespace {

TEST(BenchTrace, OneSeedGivesOneTraceAtEveryRate) {
  auto slow = poissonTrace(7, 100, 5), fast = poissonTrace(7, 400, 5);
  auto again = poissonTrace(7, 100, 5), other = poissonTrace(8, 100, 5);
  ASSERT_GT(slow.size(), 400u);
  ASSERT_GT(fast.size(), slow.size());
  ASSERT_EQ(slow.size(), again.size());
  for (size_t k = 0; k < slow.size(); ++k) {
    EXPECT_EQ(slow[k].arrival, again[k].arrival);
    EXPECT_EQ(slow[k].request, k);
    EXPECT_EQ(fast[k].request, k);
    // The same unit-rate arrivals, scaled by the rate.
    EXPECT_NEAR(fast[k].arrival * 4, slow[k].arrival, 1e-9);
    EXPECT_LT(slow[k].arrival, 5.0);
    if (k) {
      EXPECT_GT(slow[k].arrival, slow[k - 1].arrival);
    }
  }
  EXPECT_NE(slow[0].arrival, other[0].arrival);
  // 500 expected: a Poisson count within four standard deviations.
  EXPECT_NEAR(double(slow.size()), 500.0, 4 * std::sqrt(500.0));
  EXPECT_TRUE(poissonTrace(7, 0, 5).empty());
}

TEST(BenchLatency, SummaryOnASimulatedClock) {
  // Ten requests measured in [1, 11): arrival 1+k, latency (k+1) * 10 ms,
  // a third of it queueing; one before and one after the window; one
  // dropped and one failed inside it.
  std::vector<RequestTiming> timings;
  timings.push_back({0.5, 0.6, 0.7, true});  // warm-up: not counted
  timings.push_back({11.5, 11.6, 30, true}); // cool-down: not counted
  for (int k = 0; k < 10; ++k) {
    double arrival = 1 + k, latency = (k + 1) * 0.010;
    timings.push_back(
        {arrival, arrival + latency / 3, arrival + latency, true});
  }
  RequestTiming dropped;
  dropped.arrival = 3.5;
  dropped.dropped = true;
  RequestTiming failed;
  failed.arrival = 4.5;
  failed.finished = 4.6;
  timings.push_back(dropped);
  timings.push_back(failed);
  timings.back().missedDeadline = true; // a failed request's miss: ignored
  timings[5].missedDeadline = true;
  LatencySummary s = summarise(timings, 1, 11);
  EXPECT_EQ(s.measured, 12u);
  EXPECT_EQ(s.completed, 10u);
  EXPECT_EQ(s.dropped, 1u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_EQ(s.deadlineMisses, 1u);
  EXPECT_DOUBLE_EQ(s.offeredPerSecond, 1.2);
  // Results within [1, 11): the ten measured ones (the warm-up's came at
  // 0.7, the cool-down's at 30), over the window's 10 s.
  EXPECT_NEAR(s.achievedPerSecond, 1.0, 1e-12);
  // A late result does not lower the served rate unless it leaves the
  // window; offline, served is completed over first arrival to last result.
  timings[2].finished = 10.9;
  EXPECT_NEAR(summarise(timings, 1, 11).achievedPerSecond, 1.0, 1e-12);
  LatencySummary offline = summarise(timings, 0, kOfflineWindowEnd);
  EXPECT_EQ(offline.offeredPerSecond, 0.0);
  EXPECT_NEAR(offline.achievedPerSecond, 12 / 29.5, 1e-12); // 0.5 to 30
  EXPECT_NEAR(s.p50, 0.050, 1e-12); // rank ceil(5) = 5th of 10
  EXPECT_NEAR(s.p90, 0.090, 1e-12);
  EXPECT_NEAR(s.p99, 0.100, 1e-12);
  EXPECT_NEAR(s.max, 0.100, 1e-12);
  EXPECT_NEAR(s.meanQueue, 0.055 / 3, 1e-12);
  EXPECT_NEAR(s.meanCompute, 0.055 * 2 / 3, 1e-12);
  EXPECT_EQ(nearestRank({}, 0.5), 0.0);
  EXPECT_EQ(nearestRank({1, 2, 3, 4}, 0.0), 1.0);
}

std::string writeFile(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(BenchWorkload, ReadsShapesAndNamesTheBadLine) {
  auto lengths = loadWorkload(writeFile("w1.csv", "length\n3\n\n17\n"));
  ASSERT_TRUE(lengths.ok()) << lengths.status().toString();
  ASSERT_EQ(lengths.value().shapes.size(), 2u);
  EXPECT_EQ(lengths.value().shapes[1].size, 17u);
  auto pairs = loadWorkload(writeFile("w2.csv", "source,decode\n4,9\n"));
  ASSERT_TRUE(pairs.ok());
  EXPECT_EQ(pairs.value().shapes[0].decode, 9u);
  auto header = loadWorkload(writeFile("w3.csv", "size\n3\n"));
  EXPECT_NE(header.status().message().find("the header is 'size'"),
            std::string::npos);
  auto value = loadWorkload(writeFile("w4.csv", "length\n3\nx7\n"));
  EXPECT_NE(value.status().message().find("w4.csv:3: 'x7' is not a count"),
            std::string::npos)
      << value.status().message();
  auto columns = loadWorkload(writeFile("w5.csv", "source,decode\n4\n"));
  EXPECT_NE(columns.status().message().find("expected 2 column(s)"),
            std::string::npos);
  EXPECT_EQ(loadWorkload("/nonexistent.csv").status().code(),
            StatusCode::NotFound);
}

class BenchSynthesis : public ::testing::TestWithParam<const char *> {};

TEST_P(BenchSynthesis, RequestsAreDeterministicAndValid) {
  auto artifact = cellc::testing::loadExampleArtifact(GetParam());
  ASSERT_TRUE(artifact);
  auto parser = RequestParser::create(artifact);
  ASSERT_TRUE(parser.ok());
  auto synthesizer =
      RequestSynthesizer::create(*artifact, parser.value()->signature());
  ASSERT_TRUE(synthesizer.ok()) << synthesizer.status().toString();
  for (uint32_t k = 0; k < 20; ++k) {
    RequestShape shape{1 + k % 7 + (k % 3 == 0 ? 1 : 0), 2 + k % 5};
    std::string line = synthesizer.value().requestLine(k, shape, 99);
    EXPECT_EQ(line, synthesizer.value().requestLine(k, shape, 99));
    EXPECT_NE(line, synthesizer.value().requestLine(k, shape, 100));
    auto request = parser.value()->parse(line, "");
    ASSERT_TRUE(request.ok()) << line << ": " << request.status().toString();
    EXPECT_EQ(request.value().id, "r" + std::to_string(k));
    if (!request.value().tree.empty())
      EXPECT_EQ(request.value().tree.size(), 2 * shape.size - 1);
    else
      EXPECT_EQ(request.value().steps.size(), shape.size);
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, BenchSynthesis,
                         ::testing::Values("lstm", "gru", "seq2seq",
                                           "treelstm"));

TEST(BenchReport, CsvAndJsonCarryTheColumns) {
  RunRecord record;
  record.cellNames = {"encoder", "decoder"};
  record.timings = {{1, 1.1, 1.2, true}, {2, 2.5, 3, true}};
  record.tasks = {
      {1.15, 0, 4, 0}, {1.2, 1, 2, 1}, {2.9, 1, 6, 3}, {9, 0, 1, 0}};
  BenchRow row = makeRow("cellular", 12.5, record, 0, 5);
  EXPECT_EQ(row.meanBatch[0].second, 4.0); // the task at 9 s is outside
  EXPECT_EQ(row.meanBatch[1].second, 4.0);
  EXPECT_EQ(row.paddingRows, 4u);
  std::ostringstream csv;
  writeCsv(csv, {row, row});
  std::istringstream lines(csv.str());
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header, csvHeader());
  size_t columns = std::count(header.begin(), header.end(), ',');
  int rows = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), columns) << line;
    EXPECT_EQ(line.rfind("cellular,12.500,2,2,0,0,", 0), 0u) << line;
    EXPECT_NE(line.find("encoder 4.0;decoder 4.0"), std::string::npos);
    ++rows;
  }
  EXPECT_EQ(rows, 2);
  std::ostringstream json;
  BenchSetup setup;
  setup.model = "m.cellpack";
  setup.seed = 3;
  setup.peerSummaries["pytorch"] = R"({"peer": "pytorch"})";
  setup.peerSummaries["onnxruntime"] = R"({"peer": "onnxruntime"})";
  writeJson(json, setup, {row});
  auto parsed = nlohmann::json::parse(json.str());
  EXPECT_EQ(parsed["seed"], 3);
  EXPECT_EQ(parsed["peers"]["pytorch"]["peer"], "pytorch");
  EXPECT_EQ(parsed["peers"]["onnxruntime"]["peer"], "onnxruntime");
  ASSERT_EQ(parsed["rows"].size(), 1u);
  const auto &first = parsed["rows"][0];
  for (const char *key : {"system",
                          "rate_per_s",
                          "measured",
                          "completed",
                          "dropped",
                          "failed",
                          "offered_per_s",
                          "achieved_per_s",
                          "p50_ms",
                          "p90_ms",
                          "p99_ms",
                          "max_ms",
                          "mean_queue_ms",
                          "mean_compute_ms",
                          "mean_batch",
                          "padding_rows",
                          "deadline_misses",
                          "runs",
                          "achieved_min_per_s",
                          "achieved_max_per_s",
                          "p50_min_ms",
                          "p50_max_ms",
                          "p99_min_ms",
                          "p99_max_ms"})
    EXPECT_TRUE(first.contains(key)) << key;
  EXPECT_NEAR(first["p90_ms"].get<double>(), 1000, 1e-9); // 2 s -> 3 s
  EXPECT_EQ(first["mean_batch"]["decoder"], 4.0);
}

TEST(BenchReport, RepeatedRunsGiveTheMedianAndTheSpread) {
  std::vector<BenchRow> runs(3);
  double served[] = {10, 30, 20}, p50[] = {0.003, 0.001, 0.002};
  for (int r = 0; r < 3; ++r) {
    runs[r].system = "cellular";
    runs[r].rate = 50;
    runs[r].summary.achievedPerSecond = served[r];
    runs[r].summary.p50 = p50[r];
    runs[r].summary.p99 = 10 * p50[r];
    runs[r].summary.completed = 100 + r;
    runs[r].summary.failed = r == 2 ? 4 : 0; // one run failed some
    runs[r].summary.max = 0.1 * (r + 1);
    runs[r].meanBatch = {{"cell", 2.0 + r}};
    runs[r].achievedMin = runs[r].achievedMax = served[r];
    runs[r].p50Min = runs[r].p50Max = p50[r];
    runs[r].p99Min = runs[r].p99Max = 10 * p50[r];
  }
  BenchRow median = medianRow(runs);
  EXPECT_EQ(median.runs, 3u);
  EXPECT_EQ(median.summary.achievedPerSecond, 20);
  EXPECT_EQ(median.summary.p50, 0.002);
  EXPECT_EQ(median.summary.p99, 0.02);
  EXPECT_EQ(median.summary.completed, 101u);
  EXPECT_EQ(median.summary.failed, 4u) << "failures are never a median";
  EXPECT_DOUBLE_EQ(median.summary.max, 0.3);
  EXPECT_EQ(median.meanBatch[0].second, 3.0);
  EXPECT_EQ(median.achievedMin, 10);
  EXPECT_EQ(median.achievedMax, 30);
  EXPECT_EQ(median.p50Min, 0.001);
  EXPECT_EQ(median.p50Max, 0.003);
  EXPECT_EQ(median.p99Max, 0.03);
  // One run is its own median; an even count takes the lower middle.
  EXPECT_EQ(medianRow({runs[1]}).summary.achievedPerSecond, 30);
  EXPECT_EQ(medianRow({runs[0], runs[1]}).summary.achievedPerSecond, 10);
  std::ostringstream csv;
  writeCsv(csv, {median});
  std::string text = csv.str();
  std::string line = text.substr(text.find('\n') + 1);
  EXPECT_NE(line.find(",3,10.000,30.000,1.0000,3.0000,10.0000,30.0000"),
            std::string::npos)
      << line;
}

TEST(KServeBodyTest, TreesOfAnyArityWithInternalInputs) {
  // A ternary tree whose internal cell reads "x" too: children [N, 3] with
  // -1 rows for leaves, the leaves' x one row each, "internal_x" one row
  // per internal node, in node order.
  ModelSignature signature;
  TensorDescription children{"children", TensorType::Int64, {}, {-1, 3}};
  TensorDescription leafX{"x", TensorType::Fp32, {}, {-1, 2}};
  TensorDescription internalX{"internal_x", TensorType::Fp32, {}, {-1, 2}};
  signature.inputs = {children, leafX, internalX};
  auto line = nlohmann::json::parse(R"({"id": "t", "nodes": [
      {"x": [1, 2]}, {"x": [3, 4]}, {"x": [5, 6]},
      {"children": [0, 1, 2], "x": [7, 8]}]})");
  auto body = kserveBody(line, signature);
  ASSERT_TRUE(body.ok()) << body.status().toString();
  const nlohmann::json &inputs = (*body)["inputs"];
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[0]["shape"], nlohmann::json({4, 3}));
  EXPECT_EQ(inputs[0]["data"],
            nlohmann::json({-1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 2}));
  EXPECT_EQ(inputs[1]["name"], "x");
  EXPECT_EQ(inputs[1]["shape"], nlohmann::json({3, 2}));
  EXPECT_EQ(inputs[2]["name"], "internal_x");
  EXPECT_EQ(inputs[2]["shape"], nlohmann::json({1, 2}));
  EXPECT_EQ(inputs[2]["data"], nlohmann::json({7, 8}));
}

/// A stand-in for a peer script: reads the trace, answers every request in
/// reverse order with start = arrival + 1 ms, end = start + 2 ms, batch 3;
/// FAKE_PEER_MODE=unknown|repeat|short|fail makes it misbehave.
constexpr const char *kFakePeer = R"(import json, os, sys
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
mode = os.environ.get("FAKE_PEER_MODE", "")
if mode == "fail":
    print("fake peer: told to fail")
    sys.exit(3)
lines = [json.loads(l) for l in open(args["--trace"])]
results = []
for line in reversed(lines):
    start = line["arrival_s"] + 0.001
    results.append({"id": line["id"], "start_s": start, "end_s": start + 0.002,
                    "batch": 3})
if mode == "unknown":
    results[0]["id"] = "nobody"
if mode == "repeat":
    results[1]["id"] = results[0]["id"]
if mode == "short":
    results.pop()
with open(args["--out"], "w") as f:
    for r in results:
        f.write(json.dumps(r) + "\n")
print(json.dumps({"peer": "fake", "requests": len(results)}))
)";

TEST(PeerRunnerTest, ResultsMapToTheirTraceEntriesById) {
  std::string directory = ::testing::TempDir();
  std::string script = directory + "/fake_peer.py";
  std::ofstream(script) << kFakePeer;
  // Requests 7, 2 and 5 of a bank arrive in that order (the trace refers to
  // request numbers, the peer answers by id "r<number>").
  std::vector<std::string> lines(8);
  for (size_t k = 0; k < lines.size(); ++k)
    lines[k] = "{\"id\": \"r" + std::to_string(k) + "\", \"tokens\": [1]}";
  std::vector<TraceEntry> trace = {{0.5, 7}, {1.25, 2}, {2.0, 5}};
  PeerOptions options;
  options.script = script;
  options.weights = directory;
  std::string summary;
  ::unsetenv("FAKE_PEER_MODE");
  auto record = runPeer(options, lines, trace, directory, "fake", summary);
  ASSERT_TRUE(record.ok()) << record.status().toString();
  ASSERT_EQ(record->timings.size(), 3u);
  for (size_t k = 0; k < trace.size(); ++k) {
    const RequestTiming &timing = record->timings[k];
    EXPECT_TRUE(timing.ok);
    EXPECT_DOUBLE_EQ(timing.arrival, trace[k].arrival);
    EXPECT_NEAR(timing.started, trace[k].arrival + 0.001, 1e-9);
    EXPECT_NEAR(timing.finished, trace[k].arrival + 0.003, 1e-9);
  }
  EXPECT_NEAR(record->seconds, 2.003 - 0.5, 1e-9);
  ASSERT_EQ(record->tasks.size(), 3u);
  EXPECT_EQ(record->tasks[0].nodes, 3u);
  EXPECT_EQ(summary, R"({"peer": "fake", "requests": 3})");

  const std::pair<const char *, const char *> failures[] = {
      {"unknown", "an unknown or repeated id"},
      {"repeat", "an unknown or repeated id"},
      {"short", "2 results for 3 requests"},
      {"fail", "the peer failed (exit status 3)"}};
  for (const auto &[mode, message] : failures) {
    ::setenv("FAKE_PEER_MODE", mode, 1);
    auto bad = runPeer(options, lines, trace, directory, "fake", summary);
    ASSERT_FALSE(bad.ok()) << mode;
    EXPECT_NE(bad.status().message().find(message), std::string::npos)
        << mode << ": " << bad.status().message();
  }
  ::unsetenv("FAKE_PEER_MODE");
}

} // namespace
