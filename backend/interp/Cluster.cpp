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
  const int64_t group = op.attrs().getInt("group", size_);
  if (group < 1 || size_ % group != 0) {  // the verifier refuses it; IR from elsewhere may not have been
    broken_ = true;
    brokenWhy_ = std::string(op.name()) + ": group " + std::to_string(group) + " does not divide the cluster's " +
                 std::to_string(size_) + " CTAs";
    cv_.notify_all();
    return brokenError(rank);
  }
  if (arrived_ == 0) {
    pending_ = &op;
  } else if (pending_->kind() != op.kind() || pending_->attrs().getStr("kind") != op.attrs().getStr("kind") ||
             pending_->attrs().getInt("group", size_) != op.attrs().getInt("group", size_)) {
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
      // Reduce each rank group (the whole cluster unless `group` says
      // otherwise) in rank order, so the result does not depend on timing.
      std::string kind = op.attrs().getStr("kind");
      const int g = static_cast<int>(op.attrs().getInt("group", size_));
      results_.assign(static_cast<size_t>(size_ / g), Tile{});
      for (int first = 0; first < size_; first += g) {
        Tile& res = results_[static_cast<size_t>(first / g)];
        res.shape = in->shape;
        res.data = contributions_[first]->data;
        for (int r = first + 1; r < first + g; ++r) {
          const auto& d = contributions_[r]->data;
          for (size_t i = 0; i < d.size(); ++i) {
            double& acc = res.data[i];
            acc = kind == "sum" ? acc + d[i] : kind == "max" ? std::fmax(acc, d[i]) : std::fmin(acc, d[i]);
          }
        }
        roundInPlace(res.data.data(), static_cast<int64_t>(res.data.size()), dtype);
      }
      groupSize_ = g;
      *out = results_[static_cast<size_t>(rank / g)];
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
  // results_ still holds this generation's values.
  if (out) *out = results_[static_cast<size_t>(rank / groupSize_)];
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
