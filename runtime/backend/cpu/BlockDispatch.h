//===- BlockDispatch.h - From (rows, panels) to a kernel instance -*- C++ -*-//
//
// The AVX-512 kernels (fp32 and bf16) are templates over the rows (1..6) and
// panels (1..8) of D they hold in registers; a call names both at run time.
// dispatchBlock picks the instance for the panel counts the kernels hand out
// (8 for 1-2 rows, 6 for 3, 4 for any) and runs any other count one panel
// at a time (the same bits either way: every element is computed alone).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_BLOCKDISPATCH_H
#define CELLRUN_BACKEND_CPU_BLOCKDISPATCH_H

#include "PackedGemm.h"

namespace cellrun::cpu::detail {

/// Block<Rows, Panels>::run(depth, a, b, panelStride, c, ldc, first).
template <template <int, int> class Block, int Rows, typename A, typename B>
void dispatchPanels(int panels, int64_t depth, const A *a, const B *b,
                    int64_t panelStride, float *c, int64_t ldc, bool first) {
  if (panels == 8 && Rows <= 2)
    return Block<Rows, (Rows <= 2 ? 8 : 1)>::run(depth, a, b, panelStride, c,
                                                 ldc, first);
  if (panels == 6 && Rows <= 3)
    return Block<Rows, (Rows <= 3 ? 6 : 1)>::run(depth, a, b, panelStride, c,
                                                 ldc, first);
  if (panels == 4)
    return Block<Rows, 4>::run(depth, a, b, panelStride, c, ldc, first);
  for (int q = 0; q < panels; ++q)
    Block<Rows, 1>::run(depth, a, b + q * panelStride, panelStride,
                        c + q * kPanelColumns, ldc, first);
}

template <template <int, int> class Block, typename A, typename B>
void dispatchBlock(int rows, int panels, int64_t depth, const A *a, const B *b,
                   int64_t panelStride, float *c, int64_t ldc, bool first) {
  switch (rows) {
  case 1:
    return dispatchPanels<Block, 1>(panels, depth, a, b, panelStride, c, ldc,
                                    first);
  case 2:
    return dispatchPanels<Block, 2>(panels, depth, a, b, panelStride, c, ldc,
                                    first);
  case 3:
    return dispatchPanels<Block, 3>(panels, depth, a, b, panelStride, c, ldc,
                                    first);
  case 4:
    return dispatchPanels<Block, 4>(panels, depth, a, b, panelStride, c, ldc,
                                    first);
  case 5:
    return dispatchPanels<Block, 5>(panels, depth, a, b, panelStride, c, ldc,
                                    first);
  default:
    return dispatchPanels<Block, 6>(panels, depth, a, b, panelStride, c, ldc,
                                    first);
  }
}

} // namespace cellrun::cpu::detail

#endif // CELLRUN_BACKEND_CPU_BLOCKDISPATCH_H
