// Internal to the verifier: the seam between the driver (Verifier.cpp: value
// names, dominance, arity, terminators, kernel structure) and the per-op rules
// (VerifyOps.cpp). Not for use outside those two files.
#pragma once
#include <string>

#include "ir/IR.h"

namespace fnk::ir::detail {

// Tiles live in one CTA; past this the element count says the shape is garbage
// (and products of dims would overflow soon after).
constexpr int64_t kMaxTileElements = int64_t(1) << 31;

/// What the per-op rules need from the driver.
class OpVerifier {
public:
  /// Reports "<mnemonic> <msg>" at the op; returns false so a rule can
  /// `return fail(...)`.
  virtual bool fail(const Operation& op, const std::string& msg) = 0;
  virtual void error(SourceRange at, std::string msg) = 0;
  /// The value's name as ir::print will show it.
  virtual const std::string& name(const Value* v) = 0;
  /// True for a block argument that stands for a kernel parameter.
  virtual bool isParam(const Value* v) const = 0;

protected:
  ~OpVerifier() = default;
};

/// Checks `op` against its own rule. Arity and dominance are checked already.
void checkOpRule(const Operation& op, OpVerifier& v);

}  // namespace fnk::ir::detail
