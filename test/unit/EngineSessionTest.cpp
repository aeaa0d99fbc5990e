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
                                   Policy policy = Policy::Cellular) {
  EngineOptions options;
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
    part.steps.assign(whole.steps.begin() + at,
                      whole.steps.begin() + at + lengths[k]);
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
        joined = have->floats; // the last chunk's final state
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
};

class SessionEquivalence : public ::testing::TestWithParam<SessionCase> {};

TEST_P(SessionEquivalence, ChunksEqualTheWholeSequence) {
  const SessionCase &param = GetParam();
  auto engine = makeEngine(param.model, 0, param.overlap, param.policy);
  ASSERT_TRUE(engine);
  uint32_t idleRows = engine->executor().rowsInUse();
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
  EXPECT_EQ(engine->executor().rowsInUse(), idleRows);
}

INSTANTIATE_TEST_SUITE_P(
    Models, SessionEquivalence,
    ::testing::Values(SessionCase{"lstm", false, Policy::Cellular},
                      SessionCase{"lstm", true, Policy::Cellular},
                      SessionCase{"gru", false, Policy::Cellular},
                      SessionCase{"lstm", false, Policy::Graph},
                      SessionCase{"gru", true, Policy::Padded}),
    [](const auto &info) {
      return std::string(info.param.model) + "_" +
             policyName(info.param.policy) +
             (info.param.overlap ? "_overlapped" : "");
    });

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

  auto seq2seq = makeEngine("seq2seq");
  ASSERT_TRUE(seq2seq);
  auto tokens = seq2seq->parser().parse("{\"tokens\": [3, 4]}", "t");
  ASSERT_TRUE(tokens.ok());
  tokens.value().session = {5, true, false};
  status = seq2seq->submit(tokens.value(), [](RequestResult) {});
  EXPECT_NE(status.message().find("need a chain model"), std::string::npos)
      << status.message();
}

TEST(EngineSessions, IdleSessionsTimeOutAndFreeTheirRows) {
  auto engine = makeEngine("lstm", /*timeout=*/0.05);
  ASSERT_TRUE(engine);
  uint32_t idleRows = engine->executor().rowsInUse();
  std::mt19937 random(5);
  Request whole = sequence(*engine, "lstm", 4, random, "t");
  auto parts = chunks(whole, {2, 2}, 77);
  auto first = engine->submit(parts[0]);
  engine->drain();
  ASSERT_TRUE(first.get().status.isOk());
  EXPECT_EQ(engine->stats().sessionsOpen, 1u);
  EXPECT_GT(engine->executor().rowsInUse(), idleRows); // the parked state
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  engine->runOnce();
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.sessionsOpen, 0u);
  EXPECT_EQ(stats.sessionsExpired, 1u);
  EXPECT_EQ(engine->executor().rowsInUse(), idleRows);
  EXPECT_EQ(stats.poolBytesReserved, 0u);
  Status status = engine->submit(parts[1], [](RequestResult) {});
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
}

} // namespace
