#include "backend/interp/Binding.h"

#include <cctype>

#include "support/Float.h"

namespace fnk::interp {

static bool isLiteralDim(const std::string& d) { return !d.empty() && std::isdigit(static_cast<unsigned char>(d[0])); }

ArgBinder::ArgBinder(const ir::Function& fn) : fn_(fn), args_(fn.params.size()), bound_(fn.params.size()) {}

int ArgBinder::paramIndex(const std::string& name, Status& error) const {
  int i = fn_.paramIndex(name);
  if (i < 0) {
    std::string names;
    for (const auto& p : fn_.params) names += (names.empty() ? "" : ", ") + p.name;
    error = Status::error("kernel '" + fn_.name + "' has no parameter '" + name + "' (parameters: " + names + ")");
  }
  return i;
}

Status ArgBinder::setDim(const std::string& name, int64_t size) {
  if (size < 0) return Status::error("dim " + name + " must not be negative, got " + std::to_string(size));
  auto [it, fresh] = dims_.emplace(name, std::make_pair(size, std::string("--dim")));
  if (!fresh && it->second.first != size)
    return Status::error("dim " + name + " is given twice with different sizes");
  return Status::ok();
}

Status ArgBinder::bindDims(const ir::Param& p, const std::vector<int64_t>& shape) {
  const auto& dims = p.type.dims;
  if (shape.size() != dims.size())
    return Status::error("'" + p.name + "' has " + std::to_string(shape.size()) + " dimensions but the parameter is " +
                         p.type.str());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (isLiteralDim(dims[d])) {
      if (std::to_string(shape[d]) != dims[d])
        return Status::error("'" + p.name + "': dim " + std::to_string(d) + " is " + std::to_string(shape[d]) +
                             " but the parameter fixes it at " + dims[d]);
      continue;
    }
    auto [it, fresh] = dims_.emplace(dims[d], std::make_pair(shape[d], p.name));
    if (!fresh && it->second.first != shape[d])
      return Status::error("'" + p.name + "': dim " + dims[d] + " is " + std::to_string(shape[d]) + " here but " +
                           std::to_string(it->second.first) + " from '" + it->second.second + "'");
  }
  return Status::ok();
}

Status ArgBinder::bindTensor(const std::string& param, HostArray& a) { return bind(param, a, true); }
Status ArgBinder::bindShape(const std::string& param, HostArray& a) { return bind(param, a, false); }

Status ArgBinder::bind(const std::string& param, HostArray& a, bool withData) {
  Status err;
  int i = paramIndex(param, err);
  if (i < 0) return err;
  const ir::Param& p = fn_.params[i];
  if (!p.type.isTensor()) return Status::error("'" + param + "' is a scalar (" + p.type.str() + "), not a tensor");
  if (bound_[i]) return Status::error("'" + param + "' is given twice");
  ir::DType want = p.type.dtype;
  bool ok = a.dtype == want ||
            (withData && ir::isFloat(want) && (a.dtype == ir::DType::F32 || a.dtype == ir::DType::F64));
  if (!ok)
    return Status::error("'" + param + "' is " + std::string(ir::dtypeName(a.dtype)) + " data but the parameter is " +
                         p.type.str() + (withData && ir::isFloat(want) ? "; pass float32 data" : ""));
  if (Status s = bindDims(p, a.shape); !s) return s;
  if (withData && static_cast<int64_t>(a.data.size()) != a.numElements())
    return Status::error("'" + param + "' holds " + std::to_string(a.data.size()) + " values for shape of " +
                         std::to_string(a.numElements()));
  if (a.dtype != want) {
    roundInPlace(a.data.data(), static_cast<int64_t>(a.data.size()), want);
    a.dtype = want;
  }
  args_[i] = &a;
  bound_[i] = true;
  return Status::ok();
}

Status ArgBinder::bindScalar(const std::string& param, double value) {
  Status err;
  int i = paramIndex(param, err);
  if (i < 0) return err;
  if (!fn_.params[i].type.isScalar())
    return Status::error("'" + param + "' is a tensor (" + fn_.params[i].type.str() + "), not a scalar");
  if (bound_[i]) return Status::error("'" + param + "' is given twice");
  args_[i] = value;
  bound_[i] = true;
  return Status::ok();
}

Status ArgBinder::allocateOutput(const std::string& param, HostArray& a) {
  Status err;
  int i = paramIndex(param, err);
  if (i < 0) return err;
  const ir::Param& p = fn_.params[i];
  a = HostArray{};
  a.dtype = p.type.dtype;
  int64_t n = 1;
  for (const std::string& sym : p.type.dims) {
    int64_t size;
    if (isLiteralDim(sym)) size = std::stoll(sym);
    else if (auto it = dims_.find(sym); it != dims_.end()) size = it->second.first;
    else return Status::error("output '" + param + "': dim " + sym + " is not set by any input tensor; give it with --dim " + sym + "=SIZE");
    if (__builtin_mul_overflow(n, size, &n) || n > (int64_t(1) << 34))
      return Status::error("output '" + param + "' would be too large");
    a.shape.push_back(size);
  }
  a.data.assign(static_cast<size_t>(n), 0.0);
  return bindTensor(param, a);
}

int ArgBinder::firstUnbound() const {
  for (size_t i = 0; i < bound_.size(); ++i)
    if (!bound_[i]) return static_cast<int>(i);
  return -1;
}

Status ArgBinder::finish(std::vector<Arg>& args) const {
  if (int i = firstUnbound(); i >= 0) {
    const ir::Param& p = fn_.params[static_cast<size_t>(i)];
    return Status::error("missing " + std::string(p.type.isOut ? "output" : p.type.isTensor() ? "input" : "scalar") +
                         " '" + p.name + "' (" + p.type.str() + ")");
  }
  args = args_;
  return Status::ok();
}

}  // namespace fnk::interp
