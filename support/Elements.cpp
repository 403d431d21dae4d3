#include "support/Elements.h"

#include <cstdint>
#include <cstring>

#include "support/Float.h"

namespace fnk {

namespace {
template <class T>
T get(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void put(void* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
}  // namespace

int elementBytes(ir::DType t) { return t == ir::DType::I1 ? 1 : ir::byteSize(t); }

double loadElement(const void* p, ir::DType t) {
  switch (t) {
    case ir::DType::I1: return get<uint8_t>(p) != 0;
    case ir::DType::I8: return get<int8_t>(p);
    case ir::DType::U8: return get<uint8_t>(p);
    case ir::DType::I16: return get<int16_t>(p);
    case ir::DType::I32: return get<int32_t>(p);
    case ir::DType::U32: return get<uint32_t>(p);
    case ir::DType::I64: return static_cast<double>(get<int64_t>(p));
    case ir::DType::F16: return f16FromBits(get<uint16_t>(p));
    case ir::DType::BF16: return bf16FromBits(get<uint16_t>(p));
    case ir::DType::F32: return get<float>(p);
    case ir::DType::F64: return get<double>(p);
  }
  return 0;
}

void storeElement(void* p, ir::DType t, double v) {
  v = roundToDType(v, t);
  switch (t) {
    case ir::DType::I1: put<uint8_t>(p, v != 0); break;
    case ir::DType::I8: put(p, static_cast<int8_t>(v)); break;
    case ir::DType::U8: put(p, static_cast<uint8_t>(v)); break;
    case ir::DType::I16: put(p, static_cast<int16_t>(v)); break;
    case ir::DType::I32: put(p, static_cast<int32_t>(v)); break;
    case ir::DType::U32: put(p, static_cast<uint32_t>(v)); break;
    case ir::DType::I64: put(p, static_cast<int64_t>(v)); break;
    case ir::DType::F16: put(p, f16Bits(v)); break;
    case ir::DType::BF16: put(p, bf16Bits(v)); break;
    case ir::DType::F32: put(p, static_cast<float>(v)); break;
    case ir::DType::F64: put(p, v); break;
  }
}

}  // namespace fnk
