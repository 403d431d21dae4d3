// The barrier shared by the CTAs of one cluster while they run as threads.
// gpu.cluster_sync and gpu.cluster_reduce both arrive at it (on the GPU both
// are barrier.cluster arrive+wait). A barrier some CTA can no longer reach —
// because it returned or failed — breaks, and every CTA waiting at it, or
// arriving later, gets an error instead of waiting forever.
#pragma once
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "backend/interp/Eval.h"

namespace fnk::interp::detail {

class ClusterBarrier {
public:
  explicit ClusterBarrier(int size) : size_(size), contributions_(size, nullptr), brokeRank_(size, false) {}

  /// Waits until every CTA of the cluster has arrived. For gpu.cluster_reduce,
  /// `in` is this CTA's tile and `out` receives the reduction over the CTAs
  /// of its rank group (the op's `group` consecutive ranks; by default all),
  /// in rank order, in double, rounded to `dtype`; both null for a sync.
  Status arrive(int rank, const ir::Operation& op, const Tile* in, Tile* out, ir::DType dtype);
  /// Called once by every CTA when it stops, whether it finished or failed.
  void leave(int rank, bool failed);
  /// Whether `rank`'s error came from a broken barrier (and so is not the cause).
  bool brokeAtBarrier(int rank) const { return brokeRank_[rank]; }

private:
  Status brokenError(int rank);
  void breakBecauseStopped(const char* opName);

  std::mutex m_;
  std::condition_variable cv_;
  const int size_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  const ir::Operation* pending_ = nullptr;  // the first arrival's op in this generation
  std::vector<const Tile*> contributions_;
  std::vector<Tile> results_;  // one per rank group of the last reduction
  int groupSize_ = 1;
  bool broken_ = false;  // no barrier can complete any more; brokenWhy_ says why
  std::string brokenWhy_;
  int stoppedRank_ = -1;  // the first CTA that stopped, and whether it failed
  bool stoppedFailed_ = false;
  std::vector<bool> brokeRank_;
};

}  // namespace fnk::interp::detail
