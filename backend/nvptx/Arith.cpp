// Elementwise ops and casts, one held register at a time. f16/bf16 compute in
// f32 and round once to the result dtype (as the interpreter rounds its double
// result once). Transcendentals use the SFU approximations (ex2/lg2/rsqrt/
// tanh.approx, relative error ~2^-22, fine against bf16/f32 tolerances); sqrt
// is sqrt.rn, division div.rn. erf uses Abramowitz & Stegun 7.1.26 (|err| <
// 1.5e-7), sigmoid 1 / (1 + 2^(-x log2 e)).
#include <cmath>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <cstdlib>

#include "backend/nvptx/Lowerer.h"

namespace fnk::nvptx::detail {

namespace {
constexpr double kLog2E = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;
}  // namespace

llvm::Value* Lowerer::toAcc(llvm::Value* v, ir::DType t) {
  if (t == ir::DType::BF16) return bf16ToF32(v);
  if (t == ir::DType::F16) return b.CreateFPExt(v, b.getFloatTy());
  return v;
}

// bf16 is the upper half of an f32, so widening is a 16-bit shift of its
// bits. As integer ops LLVM folds them into the packed word a vector load
// produced: `x << 16` for the low element of a pair and `x & 0xffff0000`
// for the high one, one instruction each, where cvt.f32.bf16 of the high
// half costs a byte permute and a shift.
llvm::Value* Lowerer::bf16ToF32(llvm::Value* v) {
  llvm::Value* bits = nullptr;
  // An element of a bf16 vector (a load's 16-byte piece, a packed pair):
  // work on its 32-bit word, so that no 16-bit register is split out.
  if (auto* ex = llvm::dyn_cast<llvm::ExtractElementInst>(v)) {
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(ex->getVectorOperand()->getType());
    auto* idx = llvm::dyn_cast<llvm::ConstantInt>(ex->getIndexOperand());
    if (vt && idx && vt->getNumElements() % 2 == 0) {
      const unsigned i = static_cast<unsigned>(idx->getZExtValue());
      llvm::Value* words = b.CreateBitCast(ex->getVectorOperand(),
                                           llvm::FixedVectorType::get(b.getInt32Ty(), vt->getNumElements() / 2));
      llvm::Value* w = b.CreateExtractElement(words, b.getInt32(i / 2));
      bits = i % 2 == 0 ? b.CreateShl(w, 16) : b.CreateAnd(w, b.getInt32(0xffff0000u));
    }
  }
  if (!bits) bits = b.CreateShl(b.CreateZExt(b.CreateBitCast(v, b.getInt16Ty()), b.getInt32Ty()), 16);
  return b.CreateBitCast(bits, b.getFloatTy());
}

llvm::Value* Lowerer::fromAcc(llvm::Value* v, ir::DType t) {
  if (t == ir::DType::F16 || t == ir::DType::BF16) return b.CreateFPTrunc(v, regType(t));
  return v;
}

llvm::Value* Lowerer::cast(llvm::Value* v, ir::DType from, ir::DType to) {
  if (from == to) return v;
  llvm::Type* dst = regType(to);
  if (to == ir::DType::I1) {
    if (ir::isFloat(from)) return b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (ir::isFloat(from) && ir::isFloat(to)) {
    if (from == ir::DType::BF16) {
      v = bf16ToF32(v);
      if (to == ir::DType::F32) return v;
    } else if (from == ir::DType::F16 && to == ir::DType::BF16) {
      v = b.CreateFPExt(v, b.getFloatTy());
    }
    if (v->getType()->getPrimitiveSizeInBits() < dst->getPrimitiveSizeInBits()) return b.CreateFPExt(v, dst);
    return b.CreateFPTrunc(v, dst);
  }
  if (ir::isFloat(from)) {  // saturating, NaN -> 0
    llvm::Value* f = toAcc(v, from);
    unsigned id = ir::isSigned(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
    return intrinsic(id, {dst, f->getType()}, {f});
  }
  bool sgn = ir::isSigned(from) && from != ir::DType::I1;
  if (ir::isFloat(to)) {
    llvm::Type* mid = (to == ir::DType::F16 || to == ir::DType::BF16) ? b.getFloatTy() : dst;
    llvm::Value* f = sgn ? b.CreateSIToFP(v, mid) : b.CreateUIToFP(v, mid);
    return mid == dst ? f : b.CreateFPTrunc(f, dst);
  }
  return sgn ? b.CreateSExtOrTrunc(v, dst) : b.CreateZExtOrTrunc(v, dst);
}

// Integer division and remainder as the interpreter defines them. A zero
// divisor traps: the interpreter stops with "integer division by zero", and
// the runtime reports the trap as a fault of this kernel, where PTX's div
// would give garbage and go on. INT_MIN / -1 wraps to INT_MIN with remainder
// 0, where LLVM leaves the overflow undefined. A constant divisor other than
// 0 and -1 needs neither check, so index arithmetic by const generics is
// unchanged.
llvm::Value* Lowerer::intDivRem(bool div, bool sgn, llvm::Value* x, llvm::Value* d) {
  auto* c = llvm::dyn_cast<llvm::ConstantInt>(d);
  llvm::Type* t = d->getType();
  if (!c || c->isZero())
    emitIf(b.CreateICmpEQ(d, llvm::ConstantInt::get(t, 0)), [&] { intrinsic(llvm::Intrinsic::trap, {}, {}); });
  if (!sgn) return div ? b.CreateUDiv(x, d) : b.CreateURem(x, d);
  if (c && !c->isMinusOne()) return div ? b.CreateSDiv(x, d) : b.CreateSRem(x, d);
  llvm::Value* minusOne = b.CreateICmpEQ(d, llvm::ConstantInt::getSigned(t, -1));
  llvm::Value* safe = b.CreateSelect(minusOne, llvm::ConstantInt::get(t, 1), d);
  llvm::Value* q = div ? b.CreateSDiv(x, safe) : b.CreateSRem(x, safe);
  return b.CreateSelect(minusOne, div ? b.CreateNeg(x) : llvm::ConstantInt::get(t, 0), q);
}

llvm::Value* Lowerer::arith(const ir::Operation& op, const std::vector<llvm::Value*>& in) {
  using K = ir::OpKind;
  const ir::DType inT = op.operand(op.kind() == K::Select ? 1 : 0)->type().dtype;
  const ir::DType outT = op.result()->type().dtype;
  if (op.kind() == K::Cast) return cast(in[0], inT, outT);
  if (op.kind() == K::Select) return b.CreateSelect(in[0], in[1], in[2]);
  const bool isF = ir::isFloat(inT);
  const bool sgn = ir::isSigned(inT) && inT != ir::DType::I1;
  llvm::Type* fty = accType(inT);
  auto F = [&](double d) { return llvm::ConstantFP::get(fty, d); };
  std::vector<llvm::Value*> a(in.size());
  for (size_t i = 0; i < in.size(); ++i) a[i] = isF ? toAcc(in[i], inT) : in[i];
  auto ex2 = [&](llvm::Value* x) -> llvm::Value* {
    if (fty->isDoubleTy()) return intrinsic(llvm::Intrinsic::exp2, {fty}, {x});
    return intrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz, {fty}, {x});
  };
  auto lg2 = [&](llvm::Value* x) -> llvm::Value* {
    if (fty->isDoubleTy()) return intrinsic(llvm::Intrinsic::log2, {fty}, {x});
    return intrinsic(llvm::Intrinsic::nvvm_lg2_approx_f, {}, {x});
  };
  llvm::Value* r = nullptr;
  if (op.kind() == K::Cmp) {
    std::string p = op.attrs().getStr("pred");
    if (isF) {
      auto pr = p == "lt" ? llvm::CmpInst::FCMP_OLT : p == "le" ? llvm::CmpInst::FCMP_OLE
              : p == "gt" ? llvm::CmpInst::FCMP_OGT : p == "ge" ? llvm::CmpInst::FCMP_OGE
              : p == "eq" ? llvm::CmpInst::FCMP_OEQ : llvm::CmpInst::FCMP_UNE;
      r = b.CreateFCmp(pr, a[0], a[1]);
    } else {
      auto pr = p == "lt" ? (sgn ? llvm::CmpInst::ICMP_SLT : llvm::CmpInst::ICMP_ULT)
              : p == "le" ? (sgn ? llvm::CmpInst::ICMP_SLE : llvm::CmpInst::ICMP_ULE)
              : p == "gt" ? (sgn ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_UGT)
              : p == "ge" ? (sgn ? llvm::CmpInst::ICMP_SGE : llvm::CmpInst::ICMP_UGE)
              : p == "eq" ? llvm::CmpInst::ICMP_EQ : llvm::CmpInst::ICMP_NE;
      r = b.CreateICmp(pr, a[0], a[1]);
    }
    return outT == ir::DType::I1 ? r : cast(r, ir::DType::I1, outT);
  }
  switch (op.kind()) {
    case K::Add: r = isF ? b.CreateFAdd(a[0], a[1]) : b.CreateAdd(a[0], a[1]); break;
    case K::Sub: r = isF ? b.CreateFSub(a[0], a[1]) : b.CreateSub(a[0], a[1]); break;
    case K::Mul: r = isF ? b.CreateFMul(a[0], a[1]) : b.CreateMul(a[0], a[1]); break;
    case K::Div: r = isF ? b.CreateFDiv(a[0], a[1]) : intDivRem(true, sgn, a[0], a[1]); break;
    case K::Rem: r = isF ? b.CreateFRem(a[0], a[1]) : intDivRem(false, sgn, a[0], a[1]); break;
    case K::Min:
      r = isF ? intrinsic(llvm::Intrinsic::minnum, {fty}, {a[0], a[1]})
              : intrinsic(sgn ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, {a[0]->getType()}, {a[0], a[1]});
      break;
    case K::Max:
      r = isF ? intrinsic(llvm::Intrinsic::maxnum, {fty}, {a[0], a[1]})
              : intrinsic(sgn ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, {a[0]->getType()}, {a[0], a[1]});
      break;
    case K::Pow: {
      if (!isF) {
        unsupported_ = "integer pow is not supported on the GPU yet";
        return llvm::PoisonValue::get(regType(outT));
      }
      // x^y = 2^(y log2|x|), negated for x < 0 and odd integer y; x^0 = 1.
      llvm::Value* mag = ex2(b.CreateFMul(a[1], lg2(intrinsic(llvm::Intrinsic::fabs, {fty}, {a[0]}))));
      llvm::Value* yInt = b.CreateFCmpOEQ(intrinsic(llvm::Intrinsic::trunc, {fty}, {a[1]}), a[1]);
      llvm::Value* half = b.CreateFMul(a[1], F(0.5));
      llvm::Value* odd = b.CreateAnd(yInt, b.CreateFCmpUNE(intrinsic(llvm::Intrinsic::trunc, {fty}, {half}), half));
      llvm::Value* neg = b.CreateFCmpOLT(a[0], F(0.0));
      r = b.CreateSelect(b.CreateAnd(neg, odd), b.CreateFNeg(mag), mag);
      r = b.CreateSelect(b.CreateAnd(neg, b.CreateNot(yInt)), F(NAN), r);
      r = b.CreateSelect(b.CreateFCmpOEQ(a[1], F(0.0)), F(1.0), r);
      break;
    }
    case K::And: r = b.CreateAnd(a[0], a[1]); break;
    case K::Or: r = b.CreateOr(a[0], a[1]); break;
    case K::Xor: r = b.CreateXor(a[0], a[1]); break;
    case K::Shl:
    case K::Shr: {
      unsigned w = a[0]->getType()->getIntegerBitWidth();
      llvm::Value* out = b.CreateICmpUGE(a[1], llvm::ConstantInt::get(a[1]->getType(), w));  // also s < 0
      llvm::Value* z = llvm::ConstantInt::get(a[0]->getType(), 0);
      if (op.kind() == K::Shl) {
        r = b.CreateSelect(out, z, b.CreateShl(a[0], a[1]));
      } else {
        llvm::Value* fill = sgn ? b.CreateSelect(b.CreateICmpSLT(a[0], z), llvm::ConstantInt::getAllOnesValue(a[0]->getType()), z) : z;
        r = b.CreateSelect(out, fill, sgn ? b.CreateAShr(a[0], a[1]) : b.CreateLShr(a[0], a[1]));
      }
      break;
    }
    case K::Neg: r = isF ? b.CreateFNeg(a[0]) : b.CreateNeg(a[0]); break;
    case K::Not: r = b.CreateNot(a[0]); break;
    case K::Abs:
      r = isF ? intrinsic(llvm::Intrinsic::fabs, {fty}, {a[0]})
              : intrinsic(llvm::Intrinsic::abs, {a[0]->getType()}, {a[0], b.getFalse()});
      break;
    case K::Exp: r = ex2(b.CreateFMul(a[0], F(kLog2E))); break;
    case K::Exp2: r = ex2(a[0]); break;
    case K::Log: r = b.CreateFMul(lg2(a[0]), F(kLn2)); break;
    case K::Log2: r = lg2(a[0]); break;
    case K::Sqrt:
      r = fty->isDoubleTy() ? intrinsic(llvm::Intrinsic::sqrt, {fty}, {a[0]})
                            : intrinsic(llvm::Intrinsic::nvvm_sqrt_rn_f, {}, {a[0]});
      break;
    case K::Rsqrt:
      r = fty->isDoubleTy() ? b.CreateFDiv(F(1.0), intrinsic(llvm::Intrinsic::sqrt, {fty}, {a[0]}))
                            : intrinsic(llvm::Intrinsic::nvvm_rsqrt_approx_f, {}, {a[0]});
      break;
    case K::Tanh: {
      llvm::Value* x = fty->isDoubleTy() ? b.CreateFPTrunc(a[0], b.getFloatTy()) : a[0];
      r = ptx("tanh.approx.f32 $0, $1;", "=f,f", b.getFloatTy(), {x}, /*sideEffects=*/false);
      if (fty->isDoubleTy()) r = b.CreateFPExt(r, fty);
      break;
    }
    case K::Erf: {
      // erf(x) = sign(x) (1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^{-x^2}), t = 1 / (1 + p|x|)
      llvm::Value* ax = intrinsic(llvm::Intrinsic::fabs, {fty}, {a[0]});
      llvm::Value* t = b.CreateFDiv(F(1.0), b.CreateFAdd(F(1.0), b.CreateFMul(F(0.3275911), ax)));
      llvm::Value* poly = F(1.061405429);
      for (double c : {-1.453152027, 1.421413741, -0.284496736, 0.254829592}) poly = b.CreateFAdd(F(c), b.CreateFMul(t, poly));
      poly = b.CreateFMul(t, poly);
      llvm::Value* e = ex2(b.CreateFMul(b.CreateFNeg(b.CreateFMul(ax, ax)), F(kLog2E)));
      llvm::Value* m = b.CreateFSub(F(1.0), b.CreateFMul(poly, e));
      r = intrinsic(llvm::Intrinsic::copysign, {fty}, {m, a[0]});
      break;
    }
    case K::Sigmoid: {
      llvm::Value* e = ex2(b.CreateFMul(a[0], F(-kLog2E)));
      r = b.CreateFDiv(F(1.0), b.CreateFAdd(F(1.0), e));
      break;
    }
    case K::Fma:
      r = isF ? intrinsic(llvm::Intrinsic::fma, {fty}, {a[0], a[1], a[2]}) : b.CreateAdd(b.CreateMul(a[0], a[1]), a[2]);
      break;
    default:
      unsupported_ = std::string(op.name()) + " is not an elementwise op";
      return llvm::PoisonValue::get(regType(outT));
  }
  if (isF) return fromAcc(r, outT);
  return r;
}

Status Lowerer::lowerElementwise(const ir::Operation& op) {
  TV out = makeTV(op.result()->type());
  std::vector<const TV*> ins;
  for (ir::Value* v : op.operands()) {
    const TV& t = tile(v);
    if (!(t.layout == out.layout)) return fail(op, "operands and result have different layouts (shapes differ)");
    ins.push_back(&t);
  }
  // One value per register, paired conversions included: ptxas already packs
  // two neighbouring f32 -> bf16 conversions into one F2FP (backend v19's
  // SASS), so a cvt.rn.bf16x2.f32 by hand measured no gain (lowering v1.8).
  std::vector<llvm::Value*> in(ins.size());
  for (size_t r = 0; r < out.regs.size(); ++r) {
    for (size_t i = 0; i < ins.size(); ++i) in[i] = ins[i]->regs[r];
    out.regs[r] = arith(op, in);
  }
  if (!unsupported_.empty()) return fail(op, unsupported_);
  tiles[op.result()] = out;
  return Status::ok();
}

}  // namespace fnk::nvptx::detail
