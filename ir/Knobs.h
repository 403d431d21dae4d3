// Experiment knobs of the IR passes: environment variables, each read once.
// They change the IR a kernel lowers from, so the GPU backend's kernel cache
// key includes their values (knobKey), beside its own (backend/nvptx
// Codegen.h: Knob).
#pragma once
#include <string>

namespace fnk::ir {

enum class Knob {
  NoWarpRows,  // FNK_NO_WARP_ROWS: the blocked layout for every tile (passes/Layout.cpp)
  Schedule,    // FNK_SCHEDULE: the schedule pass in the default pipeline (Pass.cpp); on unless "0"
  FullTiles,   // FNK_FULL_TILES: the version pass (full tiles) in the default pipeline (Pass.cpp); on unless "0"
};

/// Whether the knob is on: its variable set to something other than "0";
/// unset or empty, `dflt`.
bool knob(Knob k, bool dflt = false);

/// "|value" per knob, in order: their part of a cache key.
std::string knobKey();

}  // namespace fnk::ir
