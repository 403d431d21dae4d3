#include "support/Elements.h"

#include <cstdint>
#include <cstring>

#include "support/Float.h"

namespace fnk {


int elementBytes(ir::DType t) { return t == ir::DType::I1 ? 1 : ir::byteSize(t); }

double loadElement(const void* p, ir::DType t) {
  switch (t) {
    case ir::DType::I1: return loadLe<uint8_t>(p) != 0;
    case ir::DType::I8: return loadLe<int8_t>(p);
    case ir::DType::U8: return loadLe<uint8_t>(p);
    case ir::DType::I16: return loadLe<int16_t>(p);
    case ir::DType::I32: return loadLe<int32_t>(p);
    case ir::DType::U32: return loadLe<uint32_t>(p);
    case ir::DType::I64: return static_cast<double>(loadLe<int64_t>(p));
    case ir::DType::F16: return f16FromBits(loadLe<uint16_t>(p));
    case ir::DType::BF16: return bf16FromBits(loadLe<uint16_t>(p));
    case ir::DType::F32: return loadLe<float>(p);
    case ir::DType::F64: return loadLe<double>(p);
  }
  return 0;
}

void storeElement(void* p, ir::DType t, double v) {
  v = roundToDType(v, t);
  switch (t) {
    case ir::DType::I1: storeLe<uint8_t>(p, v != 0); break;
    case ir::DType::I8: storeLe(p, static_cast<int8_t>(v)); break;
    case ir::DType::U8: storeLe(p, static_cast<uint8_t>(v)); break;
    case ir::DType::I16: storeLe(p, static_cast<int16_t>(v)); break;
    case ir::DType::I32: storeLe(p, static_cast<int32_t>(v)); break;
    case ir::DType::U32: storeLe(p, static_cast<uint32_t>(v)); break;
    case ir::DType::I64: storeLe(p, static_cast<int64_t>(v)); break;
    case ir::DType::F16: storeLe(p, f16Bits(v)); break;
    case ir::DType::BF16: storeLe(p, bf16Bits(v)); break;
    case ir::DType::F32: storeLe(p, static_cast<float>(v)); break;
    case ir::DType::F64: storeLe(p, v); break;
  }
}

}  // namespace fnk
