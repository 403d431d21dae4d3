#include "ir/Verifier.h"

// The verifier's driver: value names, dominance, arity from Ops.def,
// terminator placement and kernel structure. The rule of each op lives in
// VerifyOps.cpp.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/ClusterUniform.h"
#include "ir/VerifierImpl.h"

namespace fnk::ir {

namespace {

using detail::kMaxTileElements;

std::string str(const Type& t) { return t.str(); }

class Verifier final : public detail::OpVerifier {
public:
  explicit Verifier(DiagEngine& diags) : diags_(diags) {}

  bool run(const Module& m) {
    for (const auto& f : m.functions) checkFunction(*f);
    return ok_;
  }

private:
  // --- reporting ----------------------------------------------------------
  void error(SourceRange at, std::string msg) override {
    diags_.error(at, std::move(msg));
    ok_ = false;
  }
  bool fail(const Operation& op, const std::string& msg) override {
    error(op.loc(), std::string(op.name()) + " " + msg);
    return false;
  }
  const std::string& name(const Value* v) override {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    return names_[v] = "%" + std::to_string(next_++);
  }

  /// Names values exactly as the printer will, so messages match `print`.
  void nameValues(const Function& f) {
    names_.clear();
    next_ = 0;
    for (const Region* r : {&f.launch, &f.body}) {
      if (r->empty()) continue;
      const Block& b = r->front();
      for (unsigned i = 0; i < b.numArguments() && i < f.params.size(); ++i) names_[b.argument(i)] = "%" + f.params[i].name;
      nameBlock(b);
    }
  }
  void nameBlock(const Block& b) {
    for (const auto& op : b.ops()) {
      for (unsigned i = 0; i < op->numResults(); ++i) name(op->result(i));
      for (Value* v : op->operands()) name(v);
      for (unsigned r = 0; r < op->numRegions(); ++r) {
        if (op->region(r).empty()) continue;
        const Block& nb = op->region(r).front();
        for (unsigned i = 0; i < nb.numArguments(); ++i) name(nb.argument(i));
        nameBlock(nb);
      }
    }
  }

  // --- structure ----------------------------------------------------------
  static std::string checkType(const Type& t) {
    if (t.isTensor()) {
      for (const auto& d : t.dims)
        if (d.empty()) return "has an empty dimension";
      return {};
    }
    int64_t n = 1;
    for (int64_t d : t.shape) {
      if (d <= 0) return "has a non-positive dimension";
      if (n > kMaxTileElements / d) return "has more than 2^31 elements";
      n *= d;
    }
    return {};
  }

  void checkFunction(const Function& f) {
    fn_ = &f;
    nameValues(f);
    for (const Param& p : f.params) {
      if (!p.type.isTensor() && !p.type.isScalar())
        error(f.loc, "parameter '%" + p.name + "' must be a tensor or a scalar, got " + str(p.type));
      else if (std::string e = checkType(p.type); !e.empty())
        error(f.loc, "parameter '%" + p.name + "' type " + str(p.type) + " " + e);
    }
    if (const Attr* w = f.attrs.get("warps"))
      if (!std::holds_alternative<int64_t>(*w) || std::get<int64_t>(*w) <= 0)
        error(f.loc, "kernel attribute 'warps' must be a positive integer, got " + attrStr(*w));
    if (const Attr* d = f.attrs.get("prefetch"))
      if (!std::holds_alternative<int64_t>(*d) || std::get<int64_t>(*d) < 0 || std::get<int64_t>(*d) > kMaxPrefetch)
        error(f.loc, "kernel attribute 'prefetch' must be an integer from 0 to " + std::to_string(kMaxPrefetch) +
                         ", got " + attrStr(*d));
    if (const Attr* n = f.attrs.get("ctas_per_sm")) {
      const auto* k = std::get_if<int64_t>(n);
      if (!k || *k < 1 || *k > kMaxCtasPerSm || *k * f.warps() * 32 > kThreadsPerSm)
        error(f.loc, "kernel attribute 'ctas_per_sm' must be an integer from 1 to " + std::to_string(kMaxCtasPerSm) +
                         " whose CTAs fit the SM's " + std::to_string(kThreadsPerSm) + " threads, got " + attrStr(*n));
    }
    if (const Attr* a = f.attrs.get("aligned_code"); a && !std::holds_alternative<bool>(*a))
      error(f.loc, "kernel attribute 'aligned_code' must be a bool, got " + attrStr(*a));
    if (const Attr* c = f.attrs.get("cluster")) {
      auto* v = std::get_if<std::vector<int64_t>>(c);
      if (!v || v->size() != 3 || std::any_of(v->begin(), v->end(), [](int64_t x) { return x <= 0; }))
        error(f.loc, "kernel attribute 'cluster' must be three positive integers, got " + attrStr(*c));
    }
    const unsigned before = diags_.errorCount();
    checkFunctionRegion(f, f.launch, "launch", OpKind::LaunchGrid);
    checkFunctionRegion(f, f.body, "body", OpKind::Return);
    checkWaitsOutsideClusters(f);
    checkClusterGroups(f);
    // Cluster barriers every CTA reaches alike (ClusterUniform.h), once the
    // structure it walks is known to be sound.
    if (diags_.errorCount() == before && !checkClusterUniform(f, diags_)) ok_ = false;
  }

  // CTAs that wait for each other (gpu.wait_ge) run as a whole grid at once,
  // launched cooperatively, which clusters are not: cluster.* synchronizes a
  // cluster's CTAs instead. Reported at the first wait.
  void checkWaitsOutsideClusters(const Function& f) {
    const int64_t ctas = f.clusterCtas();
    if (ctas <= 1 || f.body.empty()) return;
    const Operation* wait = nullptr;
    anyOp(f.body.front(), [&](const Operation& op) {
      if (op.kind() == OpKind::WaitGe) wait = &op;
      return wait != nullptr;
    });
    if (wait)
      error(wait->loc(), "gpu.wait_ge in a kernel launched in clusters of " + std::to_string(ctas) +
                             " CTAs: CTAs that wait for each other run as one grid, not in clusters "
                             "(cluster.sync and cluster.reduce synchronize a cluster's CTAs)");
  }

  // cluster.reduce over rank groups: G consecutive ranks each, so G (a power
  // of two, clusterReduce checks) must divide the kernel's cluster.
  void checkClusterGroups(const Function& f) {
    if (f.body.empty()) return;
    const int64_t n = f.clusterCtas();
    anyOp(f.body.front(), [&](const Operation& op) {
      if (op.kind() != OpKind::ClusterReduce) return false;
      const int64_t g = op.attrs().getInt("group", n);
      if (g < 1 || n % g != 0)
        error(op.loc(), "cluster.reduce group " + std::to_string(g) + " does not divide the cluster's " +
                            std::to_string(n) + " CTAs");
      return false;
    });
  }

  void checkFunctionRegion(const Function& f, const Region& r, const char* label, OpKind terminator) {
    if (r.blocks().size() != 1) {
      error(f.loc, std::string(label) + " region of kernel '@" + f.name + "' must have exactly one block");
      return;
    }
    const Block& b = r.front();
    if (b.numArguments() != f.params.size()) {
      error(f.loc, std::string(label) + " block of kernel '@" + f.name + "' has " + std::to_string(b.numArguments()) +
                       " arguments but the kernel has " + std::to_string(f.params.size()) + " parameters");
      return;
    }
    for (unsigned i = 0; i < b.numArguments(); ++i)
      if (b.argument(i)->type() != f.params[i].type)
        error(f.loc, std::string(label) + " block argument " + std::to_string(i) + " has type " +
                         str(b.argument(i)->type()) + " but parameter '%" + f.params[i].name + "' is " +
                         str(f.params[i].type));
    scopes_.clear();
    checkBlock(b);
    const Operation* t = b.terminator();
    if (!t || t->kind() != terminator)
      error(t ? t->loc() : f.loc, std::string(label) + " region of kernel '@" + f.name + "' must end in " +
                                      mnemonic(terminator));
  }

  void checkBlock(const Block& b) {
    scopes_.emplace_back();
    for (unsigned i = 0; i < b.numArguments(); ++i) {
      scopes_.back().insert(b.argument(i));
      if (std::string e = checkType(b.argument(i)->type()); !e.empty())
        error(b.parentRegion() && b.parentRegion()->parentOp() ? b.parentRegion()->parentOp()->loc() : fn_->loc,
              "block argument " + name(b.argument(i)) + " type " + str(b.argument(i)->type()) + " " + e);
    }
    for (const auto& op : b.ops()) {
      bool operandsOk = true;
      for (unsigned i = 0; i < op->numOperands(); ++i) {
        const Value* v = op->operand(i);
        if (!v) {
          operandsOk = fail(*op, "operand " + std::to_string(i) + " is null");
        } else if (!visible(v)) {
          operandsOk = fail(*op, "uses " + name(v) + ", which is not defined before it in an enclosing block");
        }
      }
      if (operandsOk && checkArity(*op) && checkPlacement(*op) && checkResultTypes(*op)) detail::checkOpRule(*op, *this);
      for (unsigned r = 0; r < op->numRegions(); ++r)
        if (!op->region(r).empty()) checkBlock(op->region(r).front());
      for (unsigned i = 0; i < op->numResults(); ++i) scopes_.back().insert(op->result(i));
    }
    scopes_.pop_back();
  }

  bool visible(const Value* v) const {
    return std::any_of(scopes_.begin(), scopes_.end(), [&](const auto& s) { return s.count(v) > 0; });
  }

  bool checkArity(const Operation& op) {
    const OpInfo& info = opInfo(op.kind());
    auto count = [](int n, const char* what) {
      return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
    };
    int n = static_cast<int>(op.numOperands());
    if (info.minOperands == info.maxOperands && n != info.minOperands)
      return fail(op, "expects " + count(info.minOperands, "operand") + ", got " + std::to_string(n));
    if (n < info.minOperands)
      return fail(op, "expects at least " + count(info.minOperands, "operand") + ", got " + std::to_string(n));
    if (info.maxOperands >= 0 && n > info.maxOperands)
      return fail(op, "expects at most " + count(info.maxOperands, "operand") + ", got " + std::to_string(n));
    if (info.numResults >= 0 && static_cast<int>(op.numResults()) != info.numResults)
      return fail(op, "expects " + count(info.numResults, "result") + ", got " + std::to_string(op.numResults()));
    if (static_cast<int>(op.numRegions()) != info.numRegions)
      return fail(op, "expects " + count(info.numRegions, "region") + ", got " + std::to_string(op.numRegions()));
    for (unsigned r = 0; r < op.numRegions(); ++r)
      if (op.region(r).blocks().size() != 1) return fail(op, "region " + std::to_string(r) + " must have exactly one block");
    return true;
  }

  /// Terminators end their block, and only in the region that expects them.
  bool checkPlacement(const Operation& op) {
    OpKind k = op.kind();
    if (k == OpKind::LaunchCheck) {
      const Block* b = op.parentBlock();
      if (!b || b->parentRegion() != &fn_->launch) return fail(op, "must be in a kernel's launch region");
      return true;
    }
    if (k != OpKind::Yield && k != OpKind::LaunchGrid && k != OpKind::Return) return true;
    const Block* b = op.parentBlock();
    if (!b || b->terminator() != &op) return fail(op, "must be the last op of its block");
    const Region* r = b->parentRegion();
    const Operation* parent = r ? r->parentOp() : nullptr;
    if (k == OpKind::Yield && !(parent && (parent->kind() == OpKind::For || parent->kind() == OpKind::If)))
      return fail(op, "must be inside scf.for or scf.if");
    if (k == OpKind::LaunchGrid && r != &fn_->launch) return fail(op, "must end a kernel's launch region");
    if (k == OpKind::Return && r != &fn_->body) return fail(op, "must end a kernel's body region");
    return true;
  }

  bool checkResultTypes(const Operation& op) {
    for (unsigned i = 0; i < op.numResults(); ++i)
      if (std::string e = checkType(op.result(i)->type()); !e.empty())
        return fail(op, "result type " + str(op.result(i)->type()) + " " + e);
    return true;
  }

  bool isParam(const Value* v) const override {
    if (v->definingOp() || !v->ownerBlock()) return false;
    const Region* r = v->ownerBlock()->parentRegion();
    return r == &fn_->launch || r == &fn_->body;
  }

  DiagEngine& diags_;
  const Function* fn_ = nullptr;
  std::unordered_map<const Value*, std::string> names_;
  unsigned next_ = 0;
  std::vector<std::unordered_set<const Value*>> scopes_;
  bool ok_ = true;
};

}  // namespace

bool verify(const Module& m, DiagEngine& diags) { return Verifier(diags).run(m); }

}  // namespace fnk::ir
