// Layout assignment: which thread of a CTA holds which element of a tile.
//
// One scheme for now ("blocked"): a tile of E elements, numbered row-major, is
// spread over the T = 32 * warps threads of the CTA; each thread holds V
// consecutive elements per chunk, in C chunks:
//
//     element e = (chunk * T + tid) * V + v        0 <= v < V, 0 <= chunk < C
//
// V is the largest power of two <= 8 that divides the innermost dim and keeps
// every thread busy (V * T <= E), so a row-contiguous 16-byte load of bf16
// (V = 8) or f32 (V = 4) is one vector access per thread; C = cdiv(E, T * V).
// Elements past E on the last chunk are padding: held, never stored or
// reduced. A tile of one element (scalars included) is "uniform": every thread
// holds the value.
//
// Rows in warps ("lanes = 32"): a tile of R rows of N elements (N the
// innermost dim, R the product of the others), with N a multiple of 32 * V
// and at least one row per warp (R >= W = T / 32, more than one warp), gives
// each row to one warp instead of spreading it over the CTA: warp g holds rows
// g, g + W, g + 2W, ..., each in cpr = N / (32 * V) chunks of V elements per
// lane,
//
//     e = (rr * W + tid / 32) * N + (k * 32 + tid % 32) * V + v     chunk = rr * cpr + k
//
// (C = cdiv(R, W) * cpr; rows past R are padding). A sum along the rows then
// folds in registers and shuffles alone, and its result is in every lane of
// the row's warp: broadcast back over the row or stored, it needs no shared
// memory and no bar.sync (backend/nvptx/Reduce.cpp). Each warp still reads
// 32 * V consecutive elements per chunk. FNK_NO_WARP_ROWS=1 keeps the blocked
// layout everywhere (experiment).
//
// The layout is a function of (shape, T) alone, so elementwise ops, casts,
// expand_dims and reshapes between tiles with equal layouts move no data; the
// backend changes layouts (broadcast, transpose, differing reshapes) through
// shared memory. The pass writes the layout onto every op with tile results
// (`layout = "blocked"`, `vec`, `chunks`; or `layout = "uniform"`) so that
// `fnkc --emit=ir` after it shows what the backend will do; backend/nvptx
// computes the same function for block arguments, which carry no attributes.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::ir {

struct TileLayout {
  bool uniform = true;
  int64_t elems = 1;    // E
  int64_t threads = 1;  // T
  int64_t vec = 1;      // V
  int64_t chunks = 1;   // C
  int64_t lanes = 0;    // rows in warps: the threads that share a row (32), else 0
  int64_t rowLen = 0;   // rows in warps: N, the elements of a row
  /// Rows in warps: chunks per row per thread, rows per pass of the CTA (W).
  int64_t chunksPerRow() const { return rowLen / (lanes * vec); }
  int64_t rowGroups() const { return threads / lanes; }
  /// Registers (held elements) per thread: 1 for uniform tiles.
  int64_t perThread() const { return uniform ? 1 : chunks * vec; }
  /// Whether some held slots lie past the end of the tile.
  bool padded() const { return !uniform && chunks * vec * threads != elems; }
  bool operator==(const TileLayout& o) const {
    return uniform == o.uniform && elems == o.elems && threads == o.threads && vec == o.vec && chunks == o.chunks &&
           lanes == o.lanes && rowLen == o.rowLen;
  }
};

/// The layout of a tile of `shape` over `threads` threads (see above).
TileLayout tileLayout(const std::vector<int64_t>& shape, int64_t threads);

/// The `layout` pass: annotates every op with tile results. Idempotent.
bool runLayout(Module& m, DiagEngine& diags);

}  // namespace fnk::ir
