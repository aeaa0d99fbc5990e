//===- RandomRequests.h - Requests for the examples ----------*- C++ -*-===//
//
// Test requests in JSON for the example models: sequences of random tokens
// (lstm, seq2seq, with a random decode limit) or random feature rows (gru,
// mingru, mamba, rwkv, slstm), random binary trees (treelstm). Deterministic
// for a given generator.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_RANDOMREQUESTS_H
#define CELL_TEST_RANDOMREQUESTS_H

#include <random>
#include <string>
#include <vector>

namespace cellc::testing {

/// A random request in JSON: sequences of 1..maxLength tokens, or random
/// binary trees of 1..maxLeaves leaves.
inline std::string randomRequest(const std::string &model, int id,
                                 std::mt19937 &random, int maxLength = 24) {
  std::string json = "{\"id\": \"r" + std::to_string(id) + "\", ";
  bool seq2seq = model.rfind("seq2seq", 0) == 0 ||
                 model.rfind("attention", 0) == 0 || model == "bahdanau";
  int vocab = seq2seq ? 500 : 1000;
  if (model == "treelstm") {
    int leaves = std::uniform_int_distribution<int>(1, 12)(random);
    std::vector<int> open;
    json += "\"nodes\": [";
    int count = 0;
    for (int l = 0; l < leaves; ++l) {
      json += (count ? ", " : "") + std::string("{\"token\": ") +
              std::to_string(random() % vocab) + "}";
      open.push_back(count++);
    }
    while (open.size() > 1) { // join two random subtrees
      size_t a = random() % open.size();
      int left = open[a];
      open.erase(open.begin() + a);
      size_t b = random() % open.size();
      int right = open[b];
      open.erase(open.begin() + b);
      json += ", {\"children\": [" + std::to_string(left) + ", " +
              std::to_string(right) + "]}";
      open.push_back(count++);
    }
    return json + "]}";
  }
  int length = std::uniform_int_distribution<int>(1, maxLength)(random);
  // 64 features a step (lnlstm: and its update flag, mostly 1).
  if (model == "gru" || model == "gru_step" || model == "mingru" ||
      model == "mamba" || model == "rwkv" || model == "slstm" ||
      model == "stacked" || model == "lnlstm") {
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    json += "\"steps\": [";
    for (int t = 0; t < length; ++t) {
      json += (t ? ", {\"x\": [" : "{\"x\": [");
      for (int f = 0; f < 64; ++f)
        json += (f ? ", " : "") + std::to_string(value(random));
      json += "]";
      if (model == "lnlstm")
        json += random() % 4 ? ", \"update\": [1]" : ", \"update\": [0]";
      json += "}";
    }
    return json + "]}";
  }
  json += "\"tokens\": [";
  for (int t = 0; t < length; ++t)
    json += (t ? ", " : "") + std::to_string(1 + random() % (vocab - 1));
  if (seq2seq)
    json += "], \"max_decode_length\": " +
            std::to_string(std::uniform_int_distribution<int>(1, 20)(random)) +
            "}";
  else
    json += "]}";
  return json;
}

} // namespace cellc::testing

#endif // CELL_TEST_RANDOMREQUESTS_H
