#include "backend/interp/Grid.h"

#include <algorithm>

namespace fnk::interp::detail {

int GridTurns::next(int rank) const {
  const int n = static_cast<int>(done_.size());
  for (int k = 1; k <= n; ++k) {
    int r = (rank + k) % n;
    if (!done_[r]) return r;
  }
  return -1;
}

void GridTurns::give(int rank) {
  turn_ = rank;
  if (rank >= 0) wake_[static_cast<size_t>(rank)].notify_one();
}

void GridTurns::breakAll(const std::string& why) {
  deadlock_ = true;
  why_ = why;
  for (auto& cv : wake_) cv.notify_one();
}

void GridTurns::begin(int rank) {
  std::unique_lock<std::mutex> lock(m_);
  wake_[static_cast<size_t>(rank)].wait(lock, [&] { return turn_ == rank || deadlock_; });
}

Status GridTurns::pass(int rank, bool fruitless, const std::function<std::string()>& waitingFor) {
  std::unique_lock<std::mutex> lock(m_);
  const int running = static_cast<int>(std::count(done_.begin(), done_.end(), false));
  fruitless_ = fruitless ? fruitless_ + 1 : 0;
  if (!deadlock_ && fruitless_ >= running)
    breakAll("deadlock: every CTA still running waits for memory no CTA will change; " + waitingFor());
  if (!deadlock_) {
    give(next(rank));
    wake_[static_cast<size_t>(rank)].wait(lock, [&] { return turn_ == rank || deadlock_; });
  }
  if (!deadlock_) return Status::ok();
  releasedByDeadlock_.push_back(rank);
  return Status::error(why_);
}

void GridTurns::end(int rank) {
  std::lock_guard<std::mutex> lock(m_);
  done_[rank] = true;
  fruitless_ = 0;  // a CTA that ran to its end changed what the others may be waiting for
  if (turn_ == rank) give(next(rank));
}

bool GridTurns::deadlocked(int rank) const {
  std::lock_guard<std::mutex> lock(m_);
  return std::find(releasedByDeadlock_.begin(), releasedByDeadlock_.end(), rank) != releasedByDeadlock_.end();
}

std::string GridTurns::why() const {
  std::lock_guard<std::mutex> lock(m_);
  return why_;
}

}  // namespace fnk::interp::detail
