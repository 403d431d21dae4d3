// fnk IR types. One value class covers what a tile program touches:
//   tile<T>[s0, s1]   a value held by a CTA, static shape; rank 0 is a scalar T
//   tensor<T>[M, N]   a view of global memory; dims are symbols bound at launch
//   shared<T>[s0..]   a CTA's shared-memory buffer, static shape
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fnk::ir {

enum class DType : uint8_t { I1, I8, I16, I32, I64, U8, U32, F16, BF16, F32, F64 };

std::string_view dtypeName(DType t);
std::optional<DType> parseDType(std::string_view name);  // accepts "bool" for i1
bool isFloat(DType t);
/// The memory dtypes tile.atomic adds to (what the GPU's atom.add takes).
bool atomicAddable(DType t);
bool isInt(DType t);  // includes i1
bool isSigned(DType t);
int bitWidth(DType t);
int byteSize(DType t);

struct Type {
  enum class Kind : uint8_t { Tile, Tensor, Shared };
  Kind kind = Kind::Tile;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;     // Tile, Shared
  std::vector<std::string> dims;  // Tensor: a symbol name or a decimal constant each
  bool isOut = false;             // Tensor parameters written by the kernel

  static Type scalar(DType t) { return Type{Kind::Tile, t, {}, {}, false}; }
  static Type tile(DType t, std::vector<int64_t> shape) { return Type{Kind::Tile, t, std::move(shape), {}, false}; }
  static Type tensor(DType t, std::vector<std::string> dims, bool out) {
    return Type{Kind::Tensor, t, {}, std::move(dims), out};
  }
  static Type shared(DType t, std::vector<int64_t> shape) { return Type{Kind::Shared, t, std::move(shape), {}, false}; }

  bool isTile() const { return kind == Kind::Tile; }
  bool isScalar() const { return kind == Kind::Tile && shape.empty(); }
  bool isTensor() const { return kind == Kind::Tensor; }
  bool isShared() const { return kind == Kind::Shared; }
  bool isMemory() const { return isTensor() || isShared(); }
  size_t rank() const { return isTensor() ? dims.size() : shape.size(); }
  int64_t numElements() const;  // tiles and shared buffers
  Type withDType(DType t) const { Type r = *this; r.dtype = t; return r; }
  Type withShape(std::vector<int64_t> s) const { Type r = *this; r.shape = std::move(s); return r; }

  bool operator==(const Type& o) const {
    return kind == o.kind && dtype == o.dtype && shape == o.shape && dims == o.dims && isOut == o.isOut;
  }
  bool operator!=(const Type& o) const { return !(*this == o); }
  std::string str() const;
};

/// NumPy broadcasting of two shapes; nullopt when incompatible.
std::optional<std::vector<int64_t>> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
std::string shapeStr(const std::vector<int64_t>& s);  // "128x64", "scalar" for rank 0

}  // namespace fnk::ir
