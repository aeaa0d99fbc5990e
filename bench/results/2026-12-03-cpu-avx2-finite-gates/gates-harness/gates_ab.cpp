// One-off harness (not built by CMake): the base's LSTM gates against a new
// version in one process, alternating calls on the same 512-row block (rows
// scattered over a 16384-row pool, results streamed into an arena as
// cellrun's are), and a check that both wrote the same bits. Built as:
//   F="-Iruntime -Iruntime/include -Iruntime/backend/cpu -O3 -DNDEBUG -ffp-contract=off"
//   g++ $F -c BASE/LstmGates.cpp -o base.o; g++ $F -c BASE/VectorMath.cpp -o vm.o
//   g++ $F -c runtime/backend/cpu/CpuIsa.cpp -o isa.o
//   g++ $F -Dcellrun=cellrunv1 -c runtime/backend/cpu/LstmGates.cpp -o new.o
//   g++ $F -Dcellrun=cellrunv1 -c runtime/backend/cpu/VectorMath.cpp -o vmnew.o
//   (and a stub of detail::lstmGateRowsWithGemm for each namespace)
//   g++ $F gates_ab.cpp base.o vm.o isa.o new.o vmnew.o stubs.o -o gates_ab
//   ./gates_ab HIDDEN
#include "backend/cpu/LstmGates.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <random>
#include <cstring>
namespace cellrunv1::cpu { struct LstmGateRows; enum class CpuIsa; void lstmGateRows(const LstmGateRows &, CpuIsa); }
using namespace cellrun::cpu;
int main(int argc, char **argv) {
  const int64_t rows = 512, poolRows = 16384; const int64_t hidden = argc > 1 ? atoi(argv[1]) : 16;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-3, 3);
  std::vector<float> pre(rows * 4 * hidden);
  for (auto &x : pre) x = u(rng);
  float *pool = (float *)aligned_alloc(64, poolRows * 2 * hidden * 4);
  for (int64_t i = 0; i < poolRows * 2 * hidden; ++i) pool[i] = u(rng);
  const int64_t arenaRows = 1 << 16;
  float *arena[2] = {(float *)aligned_alloc(64, arenaRows * 2 * hidden * 4), (float *)aligned_alloc(64, arenaRows * 2 * hidden * 4)};
  std::vector<int64_t> perm(poolRows);
  for (int64_t i = 0; i < poolRows; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<const float *> a(rows), c(rows);
  std::vector<float *> cOut(rows), hOut(rows), cCopy(rows), hCopy(rows);
  std::vector<double> t[2];
  int64_t arenaAt = 0;
  std::vector<float> pool0(pool, pool + poolRows * 2 * hidden);
  for (int rep = 0; rep < 80000 / hidden * 4; ++rep) {
    int which = (rep & 1) ^ ((rep >> 1) & 1);
    int64_t base = (rep / 2) * rows;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t slot = perm[r];
      a[r] = pre.data() + r * 4 * hidden;
      c[r] = pool0.data() + slot * 2 * hidden;
      cOut[r] = pool + ((slot + 7) % poolRows) * 2 * hidden;
      hOut[r] = cOut[r] + hidden;
      int64_t at = (base + r) % arenaRows;
      cCopy[r] = nullptr;
      hCopy[r] = arena[which] + at * 2 * hidden;
    }
    LstmGateRows block;
    block.a = a.data(); block.c = c.data();
    block.cOutRows = cOut.data(); block.hOutRows = hOut.data();
    block.cCopyRows = cCopy.data(); block.hCopyRows = hCopy.data();
    block.rows = rows; block.hidden = hidden;
    block.offsets[0] = 0; block.offsets[1] = hidden; block.offsets[2] = 2 * hidden; block.offsets[3] = 3 * hidden;
    auto t0 = std::chrono::steady_clock::now();
    if (which == 0) lstmGateRows(block, CpuIsa::Avx2);
    else cellrunv1::cpu::lstmGateRows(reinterpret_cast<const cellrunv1::cpu::LstmGateRows &>(block), (cellrunv1::cpu::CpuIsa)CpuIsa::Avx2);
    auto t1 = std::chrono::steady_clock::now();
    t[which].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / rows);
  }
  // bitwise check
  int bad = 0;
  for (int64_t i = 0; i < arenaRows * 2 * hidden; ++i) bad += memcmp(&arena[0][i], &arena[1][i], 4) != 0;
  std::vector<double> ratio;
  for (size_t i = 0; i < t[0].size(); ++i) ratio.push_back(t[1][i] / t[0][i]);
  for (auto &v : t) std::sort(v.begin(), v.end());
  std::sort(ratio.begin(), ratio.end());
  printf("base best %.1f median %.1f | v best %.1f median %.1f | median ratio v/base %.3f | differing floats %d\n", t[0][0], t[0][t[0].size()/2], t[1][0], t[1][t[1].size()/2], ratio[ratio.size()/2], bad);
}
