//===- EngineSessionTest.cpp - Streaming sessions of chain models ---------===//
//
// A session's chunks, submitted one after another or all at once, with
// other sessions and ordinary requests interleaved, give exactly the
// outputs of the whole sequence run as one request (the state stays in its
// pool rows between chunks, read in place); the rows all come back when
// sessions end or time out; misuse is refused precisely.
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "cellrun/Engine.h"
#include "engine/EngineTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

using namespace cellrun;

namespace {

std::shared_ptr<const LoadedArtifact> loadExample(const std::string &model) {
  return cellc::testing::loadExampleArtifact(model);
}

std::unique_ptr<Engine> makeEngine(const std::string &model, double timeout = 0,
                                   bool overlap = false,
                                   Policy policy = Policy::Cellular,
                                   uint32_t workers = 1, uint32_t poolRows = 0,
                                   uint32_t maxQueue = 0) {
  EngineOptions options;
  options.workers = workers;
  // Strict turns: sessions spread over every worker (asserted).
  options.admissionSlack = 0;
  if (maxQueue)
    options.maxQueue = maxQueue;
  if (poolRows)
    options.poolRows = poolRows;
  options.policy = policy;
  options.startWorker = false;
  options.sessionTimeoutSeconds = timeout;
  options.overlapRounds =
      overlap ? EngineOptions::Overlap::On : EngineOptions::Overlap::Off;
  auto engine = Engine::create(loadExample(model), options);
  EXPECT_TRUE(engine.ok()) << engine.status().toString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

/// A random sequence as a request (tokens for the LSTM, 64 features a step
/// for the GRU) and its chunks.
Request sequence(const Engine &engine, const std::string &model, int length,
                 std::mt19937 &random, const std::string &id) {
  std::string json = "{\"id\": \"" + id + "\", ";
  if (model == "lstm") {
    json += "\"tokens\": [";
    for (int s = 0; s < length; ++s)
      json += (s ? ", " : "") + std::to_string(random() % 1000);
  } else {
    json += "\"steps\": [";
    std::uniform_real_distribution<float> value(-1, 1);
    for (int s = 0; s < length; ++s) {
      json += std::string(s ? ", " : "") + "{\"x\": [";
      for (int i = 0; i < 64; ++i)
        json += (i ? ", " : "") + std::to_string(value(random));
      json += "]}";
    }
  }
  auto parsed = engine.parser().parse(json + "]}", id);
  EXPECT_TRUE(parsed.ok()) << parsed.status().toString();
  return std::move(parsed).value();
}

std::vector<Request> chunks(const Request &whole, std::vector<int> lengths,
                            uint64_t session) {
  std::vector<Request> parts;
  size_t at = 0;
  for (size_t k = 0; k < lengths.size(); ++k) {
    Request part;
    part.id = whole.id + "/" + std::to_string(k);
    part.steps = whole.steps.slice(at, at + lengths[k]);
    at += lengths[k];
    part.session = {session, k == 0, k + 1 == lengths.size()};
    parts.push_back(std::move(part));
  }
  EXPECT_EQ(at, whole.steps.size());
  return parts;
}

/// The chunks' per-step outputs concatenated, and the last chunk's final
/// states, equal the whole request's: bit for bit when every step ran at
/// the batch size the whole one ran with, else within 1e-6 relative + 1e-6
/// absolute (on the cpu backend a plan of another batch size may sum in
/// another order; the session itself adds no error).
void expectSameAsWhole(const std::vector<RequestResult> &parts,
                       const RequestResult &whole, const std::string &what) {
  ASSERT_TRUE(whole.status.isOk()) << whole.status.toString();
  for (const OutputTensor &want : whole.outputs) {
    std::vector<float> joined;
    for (const RequestResult &part : parts) {
      ASSERT_TRUE(part.status.isOk()) << what << ": " << part.status.toString();
      const OutputTensor *have = part.find(want.name);
      ASSERT_NE(have, nullptr) << what << ": " << want.name;
      if (want.name.rfind("final_", 0) == 0)
        joined.assign(have->floats.begin(),
                      have->floats.end()); // the last chunk's final state
      else
        joined.insert(joined.end(), have->floats.begin(), have->floats.end());
    }
    ASSERT_EQ(joined.size(), want.floats.size()) << what << ": " << want.name;
    for (size_t i = 0; i < joined.size(); ++i)
      ASSERT_LE(std::fabs(joined[i] - want.floats[i]),
                1e-6f * std::fabs(want.floats[i]) + 1e-6f)
          << what << ": " << want.name << "[" << i << "]";
  }
}

struct SessionCase {
  const char *model;
  bool overlap;
  Policy policy;
  uint32_t workers = 1;
};
std::string caseName(const SessionCase &c) {
  return std::string(c.model) + "_" + policyName(c.policy) +
         (c.overlap ? "_overlapped" : "") +
         (c.workers > 1 ? "_two_workers" : "");
}
/// What gtest (and ctest's test list) prints for the parameter.
void PrintTo(const SessionCase &c, std::ostream *os) { *os << caseName(c); }

class SessionEquivalence : public ::testing::TestWithParam<SessionCase> {};

TEST_P(SessionEquivalence, ChunksEqualTheWholeSequence) {
  const SessionCase &param = GetParam();
  auto engine =
      makeEngine(param.model, 0, param.overlap, param.policy, param.workers);
  ASSERT_TRUE(engine);
  uint64_t idleRows = engineRowsInUse(*engine);
  std::mt19937 random(7);
  constexpr int kSessions = 12;
  std::vector<Request> wholes;
  std::vector<std::vector<Request>> parts;
  for (int s = 0; s < kSessions; ++s) {
    int length = 2 + static_cast<int>(random() % 30);
    wholes.push_back(sequence(*engine, param.model, length, random,
                              "s" + std::to_string(s)));
    std::vector<int> lengths;
    for (int left = length; left > 0;) {
      int take = std::min(left, 1 + static_cast<int>(random() % 9));
      lengths.push_back(take);
      left -= take;
    }
    parts.push_back(chunks(wholes.back(), lengths, 100 + s));
  }
  // The whole sequences, each alone.
  std::vector<RequestResult> alone;
  for (const Request &whole : wholes) {
    auto future = engine->submit(whole);
    engine->drain();
    alone.push_back(future.get());
  }
  // Even sessions submit all their chunks at once (they wait for each
  // other); odd ones one chunk per round; ordinary requests in between.
  std::vector<std::vector<std::future<RequestResult>>> futures(kSessions);
  std::vector<size_t> next(kSessions, 0);
  std::vector<std::future<RequestResult>> others;
  for (int s = 0; s < kSessions; s += 2)
    for (const Request &part : parts[s])
      futures[s].push_back(engine->submit(part));
  for (int round = 0; round < 400; ++round) {
    for (int s = 1; s < kSessions; s += 2)
      if (next[s] < parts[s].size() &&
          (next[s] == 0 || futures[s].back().wait_for(std::chrono::seconds(
                               0)) == std::future_status::ready))
        futures[s].push_back(engine->submit(parts[s][next[s]++]));
    if (round % 3 == 0)
      others.push_back(engine->submit(wholes[random() % kSessions]));
    engine->runOnce();
  }
  engine->drain();
  for (int s = 0; s < kSessions; ++s) {
    ASSERT_EQ(futures[s].size(), parts[s].size()) << "session " << s;
    std::vector<RequestResult> results;
    for (auto &future : futures[s])
      results.push_back(future.get());
    expectSameAsWhole(results, alone[s], "session " + std::to_string(s));
  }
  for (auto &future : others)
    EXPECT_TRUE(future.get().status.isOk());
  EXPECT_EQ(engine->stats().sessionsOpen, 0u);
  EXPECT_EQ(engine->stats().sessionsStarted, uint64_t(kSessions));
  EXPECT_EQ(engineRowsInUse(*engine), idleRows);
  if (param.workers > 1) { // sessions were spread over the workers
    for (uint64_t tasks : engine->stats().workerTasks)
      EXPECT_GT(tasks, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, SessionEquivalence,
    ::testing::Values(SessionCase{"lstm", false, Policy::Cellular},
                      SessionCase{"lstm", true, Policy::Cellular},
                      SessionCase{"gru", false, Policy::Cellular},
                      SessionCase{"lstm", false, Policy::Graph},
                      SessionCase{"gru", true, Policy::Padded},
                      SessionCase{"lstm", false, Policy::Cellular, 2}),
    [](const auto &info) { return caseName(info.param); });

TEST(EngineSessions, MisuseIsRefusedPrecisely) {
  auto engine = makeEngine("lstm");
  ASSERT_TRUE(engine);
  std::mt19937 random(3);
  Request whole = sequence(*engine, "lstm", 6, random, "w");
  auto parts = chunks(whole, {2, 2, 2}, 9);

  Request stray = parts[1]; // not a start, no open session
  Status status = engine->submit(stray, [](RequestResult) {});
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find("sequence_id 9 is not an open session"),
            std::string::npos)
      << status.message();

  auto first = engine->submit(parts[0]);
  Request again = parts[0]; // a second start of the open session
  status = engine->submit(again, [](RequestResult) {});
  EXPECT_NE(status.message().find("already open"), std::string::npos)
      << status.message();
  auto second = engine->submit(parts[1]);
  auto last = engine->submit(parts[2]);
  Request afterEnd = parts[1]; // queued behind the chunk that ends it
  auto orphan = engine->submit(afterEnd);
  engine->drain();
  EXPECT_TRUE(first.get().status.isOk());
  EXPECT_TRUE(second.get().status.isOk());
  EXPECT_TRUE(last.get().status.isOk());
  RequestResult orphaned = orphan.get();
  EXPECT_NE(orphaned.status.message().find("was ended by an earlier chunk"),
            std::string::npos)
      << orphaned.status.message();
  EXPECT_EQ(engine->stats().sessionsOpen, 0u);

  // The id starts anew right after the chunk that ends it (pipelined, as
  // on a stream): the new session waits for the old one's end, and its
  // chunks give the whole sequence's result again.
  std::vector<std::future<RequestResult>> rounds[2];
  for (auto &round : rounds)
    for (const Request &part : parts)
      round.push_back(engine->submit(part));
  engine->drain();
  auto alone = engine->submit(whole);
  engine->drain();
  RequestResult wholeResult = alone.get();
  for (auto &round : rounds) {
    std::vector<RequestResult> results;
    for (auto &future : round)
      results.push_back(future.get());
    expectSameAsWhole(results, wholeResult, "reopened session");
  }
  EXPECT_EQ(engine->stats().sessionsOpen, 0u);

  auto seq2seq = makeEngine("seq2seq");
  ASSERT_TRUE(seq2seq);
  auto tokens = seq2seq->parser().parse("{\"tokens\": [3, 4]}", "t");
  ASSERT_TRUE(tokens.ok());
  tokens.value().session = {5, true, false};
  status = seq2seq->submit(tokens.value(), [](RequestResult) {});
  EXPECT_NE(status.message().find("need a chain model"), std::string::npos)
      << status.message();
}

// Parked state fills the pools: new sessions (and requests that do not fit
// beside it) are refused at once as out of memory, while every open session
// can still go on and end; then the rows are all back.
TEST(EngineSessions, ParkedStateNeverLocksSessionsOut) {
  auto engine = makeEngine("lstm", 0, false, Policy::Cellular, 1,
                           /*poolRows=*/24);
  ASSERT_TRUE(engine);
  uint32_t idleRows = engineExecutor(*engine).rowsInUse();
  std::mt19937 random(11);
  std::vector<std::vector<Request>> open;
  std::vector<Request> wholes;
  RequestResult refused;
  for (int s = 0; s < 20 && refused.status.isOk(); ++s) {
    wholes.push_back(
        sequence(*engine, "lstm", 6, random, "p" + std::to_string(s)));
    auto parts = chunks(wholes.back(), {3, 3}, 500 + s);
    auto first = engine->submit(parts[0]);
    engine->drain();
    RequestResult result = first.get();
    if (result.status.isOk())
      open.push_back(parts);
    else
      refused = result;
  }
  ASSERT_FALSE(refused.status.isOk()) << "the pools never filled up";
  EXPECT_EQ(refused.status.code(), StatusCode::ResourceExhausted);
  EXPECT_NE(refused.status.message().find("sessions are open"),
            std::string::npos)
      << refused.status.message();
  ASSERT_GE(open.size(), 2u);
  EXPECT_EQ(engine->stats().sessionsOpen, open.size());
  // Every open session's last chunk runs, all queued at once.
  std::vector<std::future<RequestResult>> lasts;
  for (const auto &parts : open)
    lasts.push_back(engine->submit(parts[1]));
  engine->drain();
  for (auto &last : lasts) {
    RequestResult result = last.get();
    EXPECT_TRUE(result.status.isOk()) << result.status.toString();
  }
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.sessionsOpen, 0u);
  EXPECT_EQ(stats.poolBytesReserved, 0u);
  EXPECT_EQ(engineExecutor(*engine).rowsInUse(), idleRows);
}

// Chunks waiting behind their session's running chunk count against the
// queue limit: a client cannot queue without bound through one session.
TEST(EngineSessions, WaitingChunksCountAgainstTheQueueLimit) {
  auto engine = makeEngine("lstm", 0, false, Policy::Cellular, 1, 0,
                           /*maxQueue=*/3);
  ASSERT_TRUE(engine);
  std::mt19937 random(13);
  Request whole = sequence(*engine, "lstm", 10, random, "q");
  auto parts = chunks(whole, {2, 2, 2, 2, 2}, 31);
  std::vector<std::future<RequestResult>> futures;
  for (const Request &part : parts)
    futures.push_back(engine->submit(part));
  // One queued for admission, two waiting behind it: the rest refused.
  EXPECT_EQ(engine->stats().waiting, 3u);
  for (size_t k = 3; k < parts.size(); ++k) {
    RequestResult refused = futures[k].get();
    EXPECT_EQ(refused.status.code(), StatusCode::ResourceExhausted);
    EXPECT_NE(refused.status.message().find("overloaded: 3 requests"),
              std::string::npos)
        << refused.status.message();
  }
  engine->drain();
  for (size_t k = 0; k < 3; ++k)
    EXPECT_TRUE(futures[k].get().status.isOk());
}

TEST(EngineSessions, IdleSessionsTimeOutAndFreeTheirRows) {
  auto engine = makeEngine("lstm", /*timeout=*/0.05);
  ASSERT_TRUE(engine);
  uint32_t idleRows = engineExecutor(*engine).rowsInUse();
  std::mt19937 random(5);
  Request whole = sequence(*engine, "lstm", 4, random, "t");
  auto parts = chunks(whole, {2, 2}, 77);
  auto first = engine->submit(parts[0]);
  engine->drain();
  ASSERT_TRUE(first.get().status.isOk());
  EXPECT_EQ(engine->stats().sessionsOpen, 1u);
  EXPECT_GT(engineExecutor(*engine).rowsInUse(), idleRows); // the parked state
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  engine->runOnce();
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.sessionsOpen, 0u);
  EXPECT_EQ(stats.sessionsExpired, 1u);
  EXPECT_EQ(engineExecutor(*engine).rowsInUse(), idleRows);
  EXPECT_EQ(stats.poolBytesReserved, 0u);
  Status status = engine->submit(parts[1], [](RequestResult) {});
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
}

} // namespace
