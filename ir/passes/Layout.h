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
  /// Registers (held elements) per thread: 1 for uniform tiles.
  int64_t perThread() const { return uniform ? 1 : chunks * vec; }
  /// Whether some held slots lie past the end of the tile.
  bool padded() const { return !uniform && chunks * vec * threads != elems; }
  bool operator==(const TileLayout& o) const {
    return uniform == o.uniform && elems == o.elems && threads == o.threads && vec == o.vec && chunks == o.chunks;
  }
};

/// The layout of a tile of `shape` over `threads` threads (see above).
TileLayout tileLayout(const std::vector<int64_t>& shape, int64_t threads);

/// The `layout` pass: annotates every op with tile results. Idempotent.
bool runLayout(Module& m, DiagEngine& diags);

}  // namespace fnk::ir
