// The turns of a grid whose CTAs wait for each other (gpu.wait_ge). Its CTAs
// run as threads, one at a time: a CTA runs until it finishes or waits for
// memory that holds too little, then passes the turn to the next CTA still
// running, in launch order. So every run takes the same turns and gives the
// same results, and a wait that no CTA can end is found rather than hung on:
// when every CTA still running has had a turn in which nothing changed (it
// woke, looked and waited again), none ever will, and each waiting CTA fails
// with the reason.
#pragma once
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "support/Status.h"

namespace fnk::interp::detail {

class GridTurns {
public:
  explicit GridTurns(int ctas) : done_(ctas, false), wake_(static_cast<size_t>(ctas)) {}

  /// Blocks until CTA `rank` may start (rank 0 starts at once).
  void begin(int rank);
  /// CTA `rank` waits for memory another CTA must change: passes the turn on
  /// and returns when it comes back. `fruitless` says the CTA woke from the
  /// previous pass() and found its wait still unmet, having done nothing
  /// since; `waitingFor` describes the wait for a deadlock's message (called
  /// only then).
  Status pass(int rank, bool fruitless, const std::function<std::string()>& waitingFor);
  /// CTA `rank` stopped (finished or failed): passes the turn on for good.
  void end(int rank);
  /// Whether `rank`'s error came from the deadlock (and so is not the cause).
  bool deadlocked(int rank) const;
  /// The deadlock's description (empty if there was none).
  std::string why() const;

private:
  // The next running CTA after `rank`, or -1 if none; called with m_ held.
  int next(int rank) const;
  // Gives the turn to `rank` (-1: nobody) and wakes that CTA alone.
  void give(int rank);
  // Breaks every wait (a deadlock) and wakes every CTA.
  void breakAll(const std::string& why);

  mutable std::mutex m_;
  int turn_ = 0;
  std::vector<bool> done_;
  std::vector<std::condition_variable> wake_;  // one per CTA: a turn wakes one thread, not all
  int fruitless_ = 0;  // turns in a row in which a CTA woke, looked and waited again
  bool deadlock_ = false;
  std::string why_;
  std::vector<int> releasedByDeadlock_;
};

}  // namespace fnk::interp::detail
