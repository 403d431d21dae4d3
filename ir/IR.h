// The fnk IR core: SSA values, ops with attribute dictionaries and nested
// regions, functions and modules. Ops are listed once in Ops.def.
//
// Ownership: a Module owns Functions; a Function owns its launch and body
// Regions; a Region owns Blocks; a Block owns its arguments and Operations; an
// Operation owns its results and Regions. Values know their users, so a pass can
// replace all uses of a value in place.
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/Types.h"
#include "support/Source.h"

namespace fnk::ir {

enum class OpKind : uint16_t {
#define FNK_OP(name, mnemonic, minOps, maxOps, results, regions) name,
#include "ir/Ops.def"
};
constexpr int kNumOpKinds = 0
#define FNK_OP(name, mnemonic, minOps, maxOps, results, regions) +1
#include "ir/Ops.def"
    ;

struct OpInfo {
  const char* mnemonic;
  int minOperands, maxOperands, numResults, numRegions;  // -1: variadic
};
const OpInfo& opInfo(OpKind k);
const char* mnemonic(OpKind k);
bool lookupOpKind(std::string_view mnemonic, OpKind& out);

/// An attribute value: integer, float, bool, string (symbols such as "sum"),
/// dtype, or a list of integers.
using Attr = std::variant<int64_t, double, bool, std::string, DType, std::vector<int64_t>>;
std::string attrStr(const Attr& a);

class AttrDict {
public:
  void set(const std::string& key, Attr value);
  const Attr* get(const std::string& key) const;
  int64_t getInt(const std::string& key, int64_t dflt = 0) const;
  std::string getStr(const std::string& key) const;
  bool getBool(const std::string& key) const;
  const std::vector<std::pair<std::string, Attr>>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  bool operator==(const AttrDict& o) const { return entries_ == o.entries_; }

private:
  std::vector<std::pair<std::string, Attr>> entries_;  // sorted by key
};

class Operation;
class Block;
class Region;

class Value {
public:
  Value(Type type, Operation* def, Block* owner, unsigned index)
      : type_(std::move(type)), def_(def), owner_(owner), index_(index) {}
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  const Type& type() const { return type_; }
  void setType(Type t) { type_ = std::move(t); }
  Operation* definingOp() const { return def_; }  // null for block arguments
  Block* ownerBlock() const { return owner_; }    // for block arguments
  unsigned index() const { return index_; }
  const std::vector<Operation*>& users() const { return users_; }
  bool hasUses() const { return !users_.empty(); }
  void replaceAllUsesWith(Value* other);

  /// A name to print for this value when it has one (parameters, loop vars).
  std::string nameHint;

private:
  friend class Operation;
  Type type_;
  Operation* def_;
  Block* owner_;
  unsigned index_;
  std::vector<Operation*> users_;  // one entry per use
};

class Operation {
public:
  Operation(OpKind kind, SourceRange loc) : kind_(kind), loc_(loc) {}
  ~Operation();
  Operation(const Operation&) = delete;

  OpKind kind() const { return kind_; }
  const char* name() const { return mnemonic(kind_); }
  SourceRange loc() const { return loc_; }

  unsigned numOperands() const { return static_cast<unsigned>(operands_.size()); }
  Value* operand(unsigned i) const { return operands_[i]; }
  const std::vector<Value*>& operands() const { return operands_; }
  void addOperand(Value* v);
  void setOperand(unsigned i, Value* v);
  void dropOperands();

  unsigned numResults() const { return static_cast<unsigned>(results_.size()); }
  Value* result(unsigned i = 0) const { return results_[i].get(); }
  Value* addResult(Type t);

  AttrDict& attrs() { return attrs_; }
  const AttrDict& attrs() const { return attrs_; }

  unsigned numRegions() const { return static_cast<unsigned>(regions_.size()); }
  Region& region(unsigned i) const { return *regions_[i]; }
  Region& addRegion();

  Block* parentBlock() const { return parent_; }

private:
  friend class Block;
  OpKind kind_;
  SourceRange loc_;
  std::vector<Value*> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  std::vector<std::unique_ptr<Region>> regions_;
  AttrDict attrs_;
  Block* parent_ = nullptr;
};

class Block {
public:
  explicit Block(Region* parent) : parent_(parent) {}
  /// Destroys ops last to first: a later op uses earlier results, and an op's
  /// destructor unregisters its uses, so the used values must still exist.
  ~Block();
  Block(const Block&) = delete;
  Value* addArgument(Type t, std::string nameHint = {});
  unsigned numArguments() const { return static_cast<unsigned>(args_.size()); }
  Value* argument(unsigned i) const { return args_[i].get(); }

  using OpList = std::list<std::unique_ptr<Operation>>;
  OpList& ops() { return ops_; }
  const OpList& ops() const { return ops_; }
  Operation* append(std::unique_ptr<Operation> op);
  Operation* terminator() const { return ops_.empty() ? nullptr : ops_.back().get(); }
  /// Removes an op that has no remaining uses of its results.
  OpList::iterator erase(OpList::iterator it);
  Region* parentRegion() const { return parent_; }

private:
  Region* parent_;
  std::vector<std::unique_ptr<Value>> args_;
  OpList ops_;
};

class Region {
public:
  explicit Region(Operation* parentOp = nullptr) : parentOp_(parentOp) {}
  Block& addBlock();
  bool empty() const { return blocks_.empty(); }
  Block& front() const { return *blocks_.front(); }
  const std::vector<std::unique_ptr<Block>>& blocks() const { return blocks_; }
  Operation* parentOp() const { return parentOp_; }

private:
  Operation* parentOp_;
  std::vector<std::unique_ptr<Block>> blocks_;
};

struct Param {
  std::string name;
  Type type;  // tensor, or scalar
};

/// A kernel (or, later, a graph) specialized for concrete const-generic
/// values. `launch` computes the grid from the parameters and ends in
/// func.launch_grid; `body` ends in func.return. Both regions' entry blocks
/// take one argument per parameter.
class Function {
public:
  enum class Kind { Kernel };
  std::string name;
  Kind kind = Kind::Kernel;
  std::vector<std::pair<std::string, Attr>> consts;  // the instantiation, in declaration order
  std::vector<Param> params;
  AttrDict attrs;  // warps, cluster = [x, y, z], prefetch, ctas_per_sm and aligned_code (when the kernel sets them)
  Region launch;
  Region body;
  SourceRange loc;

  int64_t warps() const { return attrs.getInt("warps", 4); }
  /// The kernel's `launch(prefetch = D)`: how many iterations ahead a loop's
  /// leading loads are issued on the GPU; -1 when the kernel leaves it to the
  /// lowering. The interpreter ignores it (it changes no result).
  int64_t prefetch() const { return attrs.getInt("prefetch", -1); }
  /// The kernel's `launch(ctas_per_sm = K)`: the CTAs per SM it asks the GPU
  /// backend to keep resident, which caps its registers at 65536 / (K x
  /// threads); 0 when the kernel leaves it to the lowering. The interpreter
  /// ignores it (it changes no result).
  int64_t ctasPerSm() const { return attrs.getInt("ctas_per_sm", 0); }
  /// The kernel's `launch(aligned_code = true)`: the GPU backend compiles only
  /// the code for tensors on 16-byte alignment, even for a launch whose
  /// tensors sit off it, where a vector access that turns out misaligned goes
  /// element by element. For kernels that walk their rows onto 16-byte
  /// boundaries themselves (std.norm.common's shift_start), whose misaligned
  /// accesses are a row's two ends. The interpreter ignores it.
  bool alignedCode() const {
    const Attr* a = attrs.get("aligned_code");
    return a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
  }
  std::vector<int64_t> cluster() const;
  /// CTAs per cluster: the product of cluster()'s dims (1 without clusters).
  int64_t clusterCtas() const;
  /// Whether the body adds to tensor parameter `param` with tile.atomic: its
  /// contents on entry count, so no front end poisons it as an output.
  bool addsAtomically(size_t param) const;
  /// Whether the body waits for memory other CTAs change (gpu.wait_ge): the
  /// whole grid must then run at once (the interpreter runs its CTAs as
  /// threads; the GPU launch needs every CTA resident).
  bool waitsOnOtherCtas() const;
  Block& launchBlock() { return launch.front(); }
  Block& bodyBlock() { return body.front(); }
  int paramIndex(const std::string& n) const;
};

/// The most iterations ahead `launch(prefetch = D)` may ask for: each one
/// holds a copy of the loop's leading loads in registers.
constexpr int64_t kMaxPrefetch = 8;

/// Threads an SM holds (Hopper), and the most CTAs `launch(ctas_per_sm = K)`
/// may ask for (the SM's CTA limit).
constexpr int64_t kThreadsPerSm = 2048;
constexpr int64_t kMaxCtasPerSm = 32;

class Module {
public:
  std::string name;
  std::vector<std::unique_ptr<Function>> functions;
  Function* lookup(const std::string& name) const;
};

/// Builds ops at the end of a block.
/// Calls `fn` on every op of `blk` and of the regions nested in it, each op
/// before the ops of its regions.
void forEachOp(const Block& blk, const std::function<void(const Operation&)>& fn);
/// Whether `pred` holds for some op of `blk` or of the regions nested in it.
bool anyOp(const Block& blk, const std::function<bool(const Operation&)>& pred);
/// Whether `pred` holds for `op` or for some op of its regions.
bool anyOp(const Operation& op, const std::function<bool(const Operation&)>& pred);

class Builder {
public:
  explicit Builder(Block* block = nullptr) : block_(block) {}
  void setInsertionBlock(Block* b) { block_ = b; }
  Block* block() const { return block_; }
  /// Creates `kind` with the given operands and result types and appends it.
  Operation* create(OpKind kind, SourceRange loc, const std::vector<Value*>& operands,
                    const std::vector<Type>& resultTypes, AttrDict attrs = {});
  Value* constant(SourceRange loc, Type t, Attr value);

private:
  Block* block_;
};

}  // namespace fnk::ir
