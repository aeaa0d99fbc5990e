//===- SkinnyGemmKernel.h - The small-batch GEMM in every cell's code -*- C++
//-*-===//
//
// Part of the contract between cellc and cellrun, like RowCopyKernel.h:
// cellc appends this source to every cell's CUDA program and lists its
// kernels among its support kernels; the CUDA backend times them against
// cuBLASLt's proposals for each GEMM step of few rows and keeps the fastest.
// Artifacts without them run every GEMM on cuBLASLt.
//
// Each variant computes D[m,n] = alpha * A[m,k] B[k,n] + beta * bias (a
// vector of n, or null) + beta * C (a full [m,n], or null) for m up to its
// row count (kSkinnyGemmVariants), row-major, fp32, B not transposed. At
// such sizes a GEMM is bound by reading B once, so the kernel spreads that
// read over the whole device: block b takes column tile b % tiles (128
// columns, four per thread, loaded 16 bytes at a time, streamed past L1)
// and slice b / tiles of k (kPerSplit rows), whose rows of A it stages in
// shared memory 512 values of k at a time; its four warps take every fourth
// group of four rows of the slice, each thread keeping the m x 4 sums of
// its columns in registers. The variants differ in how many groups a thread
// loads before it multiplies (the bytes in flight, which set the speed at
// these sizes) against the registers that take. The warps' sums meet in
// shared memory; with one slice the block writes D, else it writes its
// slice's partial sums and the last block of the tile to arrive (an atomic
// count per tile, reset by that block) adds the slices in order (so
// results do not depend on timing) and writes D. Every variant adds in the
// same order: for the same m and slices they give the same bits.
// cellc also writes, for a kernel step after such a GEMM that reads its D
// column-aligned (GemmEpilogueWriter.h), a kernel that runs the same body
// with its tiles cut into segments and then the step for each finished
// tile's columns (its arguments: the variants' that gather A, then the
// step's).
// Needs n and k multiples of 4, A, B, C and D 16-byte aligned, kPerSplit a
// multiple of 16, partial of splits * m * n floats when splits > 1, and
// counters of `tiles` zeroed unsigned ints. Grid: tiles * splits blocks of
// 128 threads. Compiled as C++ for the tests (CELL_CUDA_EMULATION), it also
// defines a launcher for each variant (NAME__emulate) that runs it on the
// CPU.
//
//===----------------------------------------------------------------------===//
#ifndef CELLPACK_SKINNYGEMMKERNEL_H
#define CELLPACK_SKINNYGEMMKERNEL_H

namespace cellpack {

/// The kernels (all take the same arguments) and the rows each computes at
/// most. The first is the one artifacts have carried since the skinny
/// kernel came; the others came later (a runtime uses those it finds).
/// Those that gather A take its row indices (`aRows`, null for dense rows)
/// right after A.
struct SkinnyGemmVariant {
  const char *name;
  int maxRows;
  bool gathersA;
};
constexpr SkinnyGemmVariant kSkinnyGemmVariants[] = {
    {"cellrun_skinny_gemm", 16, false},
    {"cellrun_skinny_gemm_gather4", 4, true},
    {"cellrun_skinny_gemm_gather8", 8, true},
    {"cellrun_skinny_gemm_gather16", 16, true}};
/// Rows the kernels compute at most, and the threads of their blocks.
constexpr int kSkinnyGemmMaxRows = 16;
constexpr int kSkinnyGemmBlockSize = 128;
/// Columns a block covers, and the granularity of its k slices.
constexpr int kSkinnyGemmTileColumns = 128;
constexpr int kSkinnyGemmSliceRows = 16;

/// True when the kernel computes an [m, k] x [k, n] product (alignment is
/// the caller's to check).
inline bool skinnyGemmFits(long long m, long long n, long long k) {
  return m >= 1 && m <= kSkinnyGemmMaxRows && n >= 4 && n % 4 == 0 && k >= 4 &&
         k % 4 == 0 && n <= (1ll << 30) && k <= (1ll << 30);
}

/// Columns of each segment a tile covers when D's columns are cut into
/// segments (at most kSkinnyGemmMaxSegments of them).
constexpr int kSkinnyGemmSegmentColumns = 32;
constexpr int kSkinnyGemmMaxSegments = 4;

/// True when n columns cut into `segments` equal segments each a whole
/// number of tiles' 32 columns.
inline bool skinnyGemmSegmentsFit(long long n, long long segments) {
  return segments >= 1 && segments <= kSkinnyGemmMaxSegments &&
         n % segments == 0 && (n / segments) % kSkinnyGemmSegmentColumns == 0;
}

/// The launch of the kernel for an n-by-k B cut into about `splits` slices
/// of k: slices are whole multiples of kSkinnyGemmSliceRows, so `splits`
/// may come back smaller than asked.
struct SkinnyGemmLaunch {
  int splits = 1;
  int kPerSplit = 0;
  int tiles = 0;
  unsigned grid() const { return static_cast<unsigned>(tiles * splits); }
};
/// With `segments` > 0, for a kernel whose tiles cut D's columns into that
/// many segments (cellrun_skinny_gemm_body's kSegments, which needs
/// skinnyGemmSegmentsFit).
inline SkinnyGemmLaunch skinnyGemmLaunch(long long n, long long k,
                                         long long splits, int segments = 0) {
  SkinnyGemmLaunch launch;
  launch.tiles =
      segments > 0 ? static_cast<int>(n / segments / kSkinnyGemmSegmentColumns)
                   : static_cast<int>((n + kSkinnyGemmTileColumns - 1) /
                                      kSkinnyGemmTileColumns);
  long long slices = (k + kSkinnyGemmSliceRows - 1) / kSkinnyGemmSliceRows;
  if (splits < 1)
    splits = 1;
  if (splits > slices)
    splits = slices;
  long long perSplit = (slices + splits - 1) / splits; // in slices
  launch.kPerSplit = static_cast<int>(perSplit * kSkinnyGemmSliceRows);
  launch.splits = static_cast<int>((slices + perSplit - 1) / perSplit);
  return launch;
}

constexpr const char *kSkinnyGemmKernelSource = R"cuda(
// Support kernel (cellrun's GEMMs of few rows): reads B once over the device.
#ifndef CELLRUN_SKINNY_GEMM_DEFINED
#define CELLRUN_SKINNY_GEMM_DEFINED
// Four columns of D at (row, col) from their sum: alpha * sum + beta *
// (bias + C), either of which may be null.
static __device__ __forceinline__ float4
cellrun_skinny_finish(float4 s, float alpha, float beta, const float *bias,
                      const float *c, int n, int row, int col) {
  float4 add = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (bias)
    add = *reinterpret_cast<const float4 *>(bias + col);
  if (c) {
    const float4 v = *reinterpret_cast<const float4 *>(c + (size_t)row * n + col);
    add = make_float4(add.x + v.x, add.y + v.y, add.z + v.z, add.w + v.w);
  }
  return make_float4(alpha * s.x + beta * add.x, alpha * s.y + beta * add.y,
                     alpha * s.z + beta * add.z, alpha * s.w + beta * add.w);
}
// The body of every variant: at most kMaxRows rows; each thread loads
// kGroups groups of four rows of B (its four columns) before it multiplies
// any, so kGroups * 4 16-byte loads a thread are in flight at once, and
// with kEarlyLoads a chunk's first loads go out before A's rows are staged
// (their registers then stay live across the staging).
// Warp w takes the groups at k = 16 g + 4 w of each pass of 16 kGroups
// rows: every variant adds a column's products in the same order (k
// ascending within a warp, then the warps, then the slices), so all give
// the same bits for the same rows and splits.
// With aRows, row r of A is row aRows[r] of `a` (rows of k floats: a state
// pool), so a gather before the GEMM need not run.
// With kSegments > 0 a block's 128 columns are kSegments segments of 32
// (eight lanes each, so loads stay 128-byte runs) at a stride of n /
// kSegments: tile t covers columns s * (n / kSegments) + 32 t .. + 31 of
// every segment s (a GEMM epilogue computing the cell's gates of 32 units
// finds all it reads in one tile). Returns the tile whose D this block
// wrote in full (every block with one slice, the last block of the tile
// with several), else -1; D's stores are then visible to the block after a
// __syncthreads.
template <int kMaxRows, int kGroups, bool kEarlyLoads, int kSegments = 0>
static __device__ __forceinline__ int cellrun_skinny_gemm_body(
    const float *__restrict__ a, const int *__restrict__ aRows,
    const float *__restrict__ b,
    const float *__restrict__ bias, const float *__restrict__ c,
    float *__restrict__ d, float *__restrict__ partial,
    unsigned *__restrict__ counters, int m, int n, int k, int splits,
    int kPerSplit, float alpha, float beta) {
  cellrun_grid_dependency(); // GridDependency.h, earlier in the program
  if (m > kMaxRows)
    return -1; // not this variant's (the same for the whole block)
  const int tiles = kSegments > 0 ? n / kSegments / 32 : (n + 127) / 128;
  const int tile = blockIdx.x % tiles, split = blockIdx.x / tiles;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // The column of D a lane's four start at (n: none).
  auto columnOf = [&](int l) {
    if (kSegments == 0)
      return tile * 128 + l * 4;
    if (l / 8 >= kSegments)
      return n;
    return (l / 8) * (n / kSegments) + tile * 32 + (l % 8) * 4;
  };
  const int col = columnOf(lane);
  const bool inside = col < n;
  const int kBegin = split * kPerSplit;
  const int kEnd = min(k, kBegin + kPerSplit);
  float sum[kMaxRows][4];
#pragma unroll
  for (int r = 0; r < kMaxRows; ++r)
    sum[r][0] = sum[r][1] = sum[r][2] = sum[r][3] = 0.0f;
  // A's rows for a chunk of the slice (512 values of k, row r at float4
  // r * 128), then the warps' sums [4][kMaxRows][32], then the slices'
  // runs (at most 128 float4 or m * 32): 8 KB a row.
  __shared__ float4 shared[kMaxRows * 128];
  constexpr int kPass = 16 * kGroups; // rows of B one pass of the block takes
  float4 w[kGroups][4];
  // This thread's loads of the pass at `pass` of the chunk at `chunk`
  // (`rows` long, a multiple of 4).
  auto load = [&](int chunk, int rows, int pass) {
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      const int kk = pass + 16 * g + 4 * warp;
      if (inside && kk < rows) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          // Streamed (evict-first): B is read once; L1 is A's and the sums'.
          w[g][i] = __ldcs(reinterpret_cast<const float4 *>(
              b + (size_t)(chunk + kk + i) * n + col));
      }
    }
  };
  for (int chunk = kBegin; chunk < kEnd; chunk += 512) {
    const int rows = min(512, kEnd - chunk); // a multiple of 4
    // The first pass's loads go out before A's rows are staged, so the
    // two reads are in flight together.
    if (kEarlyLoads)
      load(chunk, rows, 0);
    __syncthreads(); // the previous chunk is used up
    for (int i = threadIdx.x; i < m * (rows / 4); i += 128) {
      const int r = i / (rows / 4), q = i % (rows / 4);
      shared[r * 128 + q] =
          *reinterpret_cast<const float4 *>(a + (size_t)(aRows ? aRows[r] : r) * k +
                                            chunk + q * 4);
    }
    __syncthreads();
    if (!inside)
      continue;
    // This thread's products of the group of four rows of B at kk.
    auto multiply = [&](const float4(&group)[4], int kk) {
#pragma unroll
      for (int r = 0; r < kMaxRows; ++r) {
        if (r < m) {
          const float4 x = shared[r * 128 + kk / 4];
          const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            sum[r][0] += xs[i] * group[i].x;
            sum[r][1] += xs[i] * group[i].y;
            sum[r][2] += xs[i] * group[i].z;
            sum[r][3] += xs[i] * group[i].w;
          }
        }
      }
    };
    if constexpr (kGroups == 1 && !kEarlyLoads) {
      // One group at a time (the registers of 16 rows of sums leave no
      // room for more).
      for (int kk = 4 * warp; kk < rows; kk += 16) {
        load(chunk, rows, kk - 4 * warp);
        multiply(w[0], kk);
      }
    } else {
      for (int pass = 0; pass < rows; pass += kPass) {
        if (pass > 0 || !kEarlyLoads)
          load(chunk, rows, pass);
#pragma unroll
        for (int g = 0; g < kGroups; ++g) {
          const int kk = pass + 16 * g + 4 * warp;
          if (kk < rows)
            multiply(w[g], kk);
        }
      }
    }
  }
  // The four warps' sums of each row, added in warp order.
  __syncthreads();
  float4(*warpSums)[kMaxRows][32] =
      reinterpret_cast<float4(*)[kMaxRows][32]>(shared);
#pragma unroll
  for (int r = 0; r < kMaxRows; ++r)
    if (r < m)
      warpSums[warp][r][lane] =
          make_float4(sum[r][0], sum[r][1], sum[r][2], sum[r][3]);
  __syncthreads();
  // Thread t finishes rows t / 32, t / 32 + 4, ... of column group t % 32.
  const int myCol = columnOf(threadIdx.x % 32);
  float *target = splits > 1 ? partial + (size_t)split * m * n : d;
  for (int r = threadIdx.x / 32; r < m && myCol < n; r += 4) {
    float4 s = warpSums[0][r][threadIdx.x % 32];
    for (int other = 1; other < 4; ++other) {
      const float4 t = warpSums[other][r][threadIdx.x % 32];
      s.x += t.x;
      s.y += t.y;
      s.z += t.z;
      s.w += t.w;
    }
    if (splits == 1)
      s = cellrun_skinny_finish(s, alpha, beta, bias, c, n, r, myCol);
    *reinterpret_cast<float4 *>(target + (size_t)r * n + myCol) = s;
  }
  if (splits == 1)
    return tile;
  // The last block of the tile to finish adds the slices.
  __threadfence();
  __syncthreads();
  __shared__ unsigned arrived;
  if (threadIdx.x == 0)
    arrived = atomicAdd(counters + tile, 1u);
  __syncthreads();
  if (arrived != (unsigned)splits - 1u)
    return -1;
  __threadfence();
  // Each output (m rows x 32 column groups) adds its slices' partial sums
  // in order, up to 8 loads in flight; with fewer outputs than threads,
  // `groups` threads share an output, each adding a contiguous run of the
  // slices, and the runs meet in shared memory (reusing warpSums).
  const int outputs = m * 32;
  const int groups = outputs >= 128 ? 1 : (outputs >= 64 ? 2 : 4);
  const int perGroup = (splits + groups - 1) / groups;
  float4 *runs = shared; // [groups][outputs]
  for (int o = threadIdx.x % (128 / groups); o < outputs;
       o += 128 / groups) {
    const int group = threadIdx.x / (128 / groups);
    const int r = o / 32, oc = columnOf(o % 32);
    float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const int first = group * perGroup, last = min(splits, first + perGroup);
    if (oc < n) {
      for (int p = first; p < last; p += 8) {
        float4 t[8];
#pragma unroll
        for (int i = 0; i < 8; ++i)
          if (p + i < last)
            // __ldcg: from L2, where the other blocks' stores are (L1 is
            // not coherent across blocks).
            t[i] = __ldcg(reinterpret_cast<const float4 *>(
                partial + ((size_t)(p + i) * m + r) * n + oc));
#pragma unroll
        for (int i = 0; i < 8; ++i)
          if (p + i < last) {
            s.x += t[i].x;
            s.y += t[i].y;
            s.z += t[i].z;
            s.w += t[i].w;
          }
      }
    }
    runs[group * outputs + o] = s;
  }
  __syncthreads();
  for (int o = threadIdx.x; o < outputs; o += 128) {
    const int r = o / 32, oc = columnOf(o % 32);
    if (oc >= n)
      continue;
    float4 s = runs[o];
    for (int g = 1; g < groups; ++g) {
      const float4 t = runs[g * outputs + o];
      s.x += t.x;
      s.y += t.y;
      s.z += t.z;
      s.w += t.w;
    }
    *reinterpret_cast<float4 *>(d + (size_t)r * n + oc) =
        cellrun_skinny_finish(s, alpha, beta, bias, c, n, r, oc);
  }
  if (threadIdx.x == 0)
    counters[tile] = 0u; // ready for the next launch on the stream
  return tile;
}
#define CELLRUN_SKINNY_GEMM_PARAMETERS                                         \
  const float *__restrict__ b, const float *__restrict__ bias,                 \
      const float *__restrict__ c, float *__restrict__ d,                      \
      float *__restrict__ partial, unsigned *__restrict__ counters, int m,     \
      int n, int k, int splits, int kPerSplit, float alpha, float beta
#define CELLRUN_SKINNY_GEMM_ARGUMENTS                                          \
  b, bias, c, d, partial, counters, m, n, k, splits, kPerSplit, alpha, beta
// Up to 16 rows, one group of four rows of B in flight a thread (the
// kernel as it was before the variants: 96 registers, five blocks an SM).
extern "C" __global__ void __launch_bounds__(128, 5)
    cellrun_skinny_gemm(const float *__restrict__ a,
                        CELLRUN_SKINNY_GEMM_PARAMETERS) {
  cellrun_skinny_gemm_body<16, 1, false>(a, nullptr,
                                         CELLRUN_SKINNY_GEMM_ARGUMENTS);
}
// Up to 4, 8 and 16 rows with four, four and two groups in flight, the
// first before A is staged: more of B's bytes requested before the first
// multiply (a block's slice is often a single pass), four blocks an SM for
// the registers they take (up to 128). A's rows may be gathered (aRows
// not null).
extern "C" __global__ void __launch_bounds__(128, 4)
    cellrun_skinny_gemm_gather4(const float *__restrict__ a,
                              const int *__restrict__ aRows,
                              CELLRUN_SKINNY_GEMM_PARAMETERS) {
  cellrun_skinny_gemm_body<4, 4, true>(a, aRows, CELLRUN_SKINNY_GEMM_ARGUMENTS);
}
extern "C" __global__ void __launch_bounds__(128, 4)
    cellrun_skinny_gemm_gather8(const float *__restrict__ a,
                              const int *__restrict__ aRows,
                              CELLRUN_SKINNY_GEMM_PARAMETERS) {
  cellrun_skinny_gemm_body<8, 4, true>(a, aRows, CELLRUN_SKINNY_GEMM_ARGUMENTS);
}
extern "C" __global__ void __launch_bounds__(128, 4)
    cellrun_skinny_gemm_gather16(const float *__restrict__ a,
                               const int *__restrict__ aRows,
                               CELLRUN_SKINNY_GEMM_PARAMETERS) {
  cellrun_skinny_gemm_body<16, 2, true>(a, aRows,
                                        CELLRUN_SKINNY_GEMM_ARGUMENTS);
}
#ifdef CELL_CUDA_EMULATION
// Launchers on the CPU: args as for the kernel, the gathering variants'
// aRows second.
template <typename Call>
void cellrun_skinny_gemm_emulate(Call call, void **args, unsigned grid,
                                 unsigned block) {
  cellEmulateLaunch(grid, block, true, [&] { call(args); });
}
#define CELLRUN_SKINNY_GEMM_EMULATED_ARGUMENTS(first)                           \
  *static_cast<const float *const *>(args[first]),                             \
      *static_cast<const float *const *>(args[first + 1]),                     \
      *static_cast<const float *const *>(args[first + 2]),                     \
      *static_cast<float *const *>(args[first + 3]),                           \
      *static_cast<float *const *>(args[first + 4]),                           \
      *static_cast<unsigned *const *>(args[first + 5]),                        \
      *static_cast<const int *>(args[first + 6]),                              \
      *static_cast<const int *>(args[first + 7]),                              \
      *static_cast<const int *>(args[first + 8]),                              \
      *static_cast<const int *>(args[first + 9]),                              \
      *static_cast<const int *>(args[first + 10]),                             \
      *static_cast<const float *>(args[first + 11]),                           \
      *static_cast<const float *>(args[first + 12])
extern "C" void cellrun_skinny_gemm__emulate(void **args, unsigned grid,
                                             unsigned block) {
  cellrun_skinny_gemm_emulate(
      [](void **args) {
        cellrun_skinny_gemm(*static_cast<const float *const *>(args[0]),
                            CELLRUN_SKINNY_GEMM_EMULATED_ARGUMENTS(1));
      },
      args, grid, block);
}
#define CELLRUN_SKINNY_GEMM_EMULATED_VARIANT(name)                              \
  extern "C" void name##__emulate(void **args, unsigned grid,                 \
                                  unsigned block) {                            \
    cellrun_skinny_gemm_emulate(                                               \
        [](void **args) {                                                      \
          name(*static_cast<const float *const *>(args[0]),                    \
               *static_cast<const int *const *>(args[1]),                      \
               CELLRUN_SKINNY_GEMM_EMULATED_ARGUMENTS(2));                     \
        },                                                                     \
        args, grid, block);                                                    \
  }
CELLRUN_SKINNY_GEMM_EMULATED_VARIANT(cellrun_skinny_gemm_gather4)
CELLRUN_SKINNY_GEMM_EMULATED_VARIANT(cellrun_skinny_gemm_gather8)
CELLRUN_SKINNY_GEMM_EMULATED_VARIANT(cellrun_skinny_gemm_gather16)
#endif
#endif
)cuda";

} // namespace cellpack

#endif // CELLPACK_SKINNYGEMMKERNEL_H
