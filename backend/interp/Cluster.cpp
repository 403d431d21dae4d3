#include "backend/interp/Cluster.h"

#include <algorithm>
#include <cmath>

#include "support/Float.h"

namespace fnk::interp::detail {

Status ClusterBarrier::brokenError(int rank) {
  brokeRank_[rank] = true;
  return Status::error(brokenWhy_);
}

void ClusterBarrier::breakBecauseStopped(const char* opName) {
  broken_ = true;
  brokenWhy_ = std::string(opName) + ": cluster barrier reached by " + std::to_string(arrived_) + " of " +
               std::to_string(size_) + " CTAs; CTA rank " + std::to_string(stoppedRank_) + " of the cluster " +
               (stoppedFailed_ ? "failed" : "returned") + " without reaching it";
}

Status ClusterBarrier::arrive(int rank, const ir::Operation& op, const Tile* in, Tile* out, ir::DType dtype) {
  std::unique_lock<std::mutex> lock(m_);
  if (stoppedRank_ >= 0) {
    // A CTA has stopped, so this barrier can never complete. Count this CTA so
    // the message says how far the barrier got.
    ++arrived_;
    breakBecauseStopped(op.name());
    return brokenError(rank);
  }
  if (broken_) return brokenError(rank);
  if (arrived_ == 0) {
    pending_ = &op;
  } else if (pending_->kind() != op.kind() || pending_->attrs().getStr("kind") != op.attrs().getStr("kind")) {
    broken_ = true;
    brokenWhy_ = std::string(op.name()) + ": CTAs of a cluster reached different cluster barriers (" +
                 pending_->name() + " " + pending_->attrs().getStr("kind") + " and " + op.name() + " " +
                 op.attrs().getStr("kind") + ")";
    cv_.notify_all();
    return brokenError(rank);
  }
  if (in) {
    for (const Tile* c : contributions_)
      if (c && c->shape != in->shape) {
        broken_ = true;
        brokenWhy_ = std::string(op.name()) + ": CTAs of a cluster reduce tiles of different shapes (" +
                     ir::shapeStr(c->shape) + " and " + ir::shapeStr(in->shape) + ")";
        cv_.notify_all();
        return brokenError(rank);
      }
  }
  contributions_[rank] = in;
  ++arrived_;
  if (arrived_ == size_) {
    if (in) {
      // Reduce in rank order so the result does not depend on thread timing.
      std::string kind = op.attrs().getStr("kind");
      result_.shape = in->shape;
      result_.data = contributions_[0]->data;
      for (int r = 1; r < size_; ++r) {
        const auto& d = contributions_[r]->data;
        for (size_t i = 0; i < d.size(); ++i) {
          double& acc = result_.data[i];
          acc = kind == "sum" ? acc + d[i] : kind == "max" ? std::fmax(acc, d[i]) : std::fmin(acc, d[i]);
        }
      }
      roundInPlace(result_.data.data(), static_cast<int64_t>(result_.data.size()), dtype);
      *out = result_;
    }
    std::fill(contributions_.begin(), contributions_.end(), nullptr);
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return Status::ok();
  }
  uint64_t mine = generation_;
  cv_.wait(lock, [&] { return generation_ != mine || broken_; });
  if (generation_ == mine) return brokenError(rank);
  // The next generation cannot complete before this CTA arrives again, so
  // result_ still holds this generation's value.
  if (out) *out = result_;
  return Status::ok();
}

void ClusterBarrier::leave(int rank, bool failed) {
  std::lock_guard<std::mutex> lock(m_);
  if (stoppedRank_ >= 0) return;
  stoppedRank_ = rank;
  stoppedFailed_ = failed;
  // CTAs already waiting can never be released normally: wake them with the error.
  if (arrived_ > 0 && !broken_) {
    breakBecauseStopped(pending_->name());
    cv_.notify_all();
  }
}

}  // namespace fnk::interp::detail
