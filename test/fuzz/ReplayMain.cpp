//===- ReplayMain.cpp - A fuzz target's corpus, replayed without libFuzzer =//
//
// Runs LLVMFuzzerTestOneInput once on every file of the directories (or
// files) given, so the corpus and the regression inputs of each target are
// checked by ordinary builds and ctest; prints how many inputs ran.
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  namespace fs = std::filesystem;
  size_t count = 0;
  auto run = [&](const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    ++count;
  };
  for (int i = 1; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      for (const auto &entry : fs::recursive_directory_iterator(argv[i]))
        if (entry.is_regular_file())
          run(entry.path());
    } else if (fs::exists(argv[i])) {
      run(argv[i]);
    } else {
      std::fprintf(stderr, "replay: no such input: %s\n", argv[i]);
      return 2;
    }
  }
  std::printf("replay: %zu inputs ran without a crash\n", count);
  return count > 0 ? 0 : 1;
}
