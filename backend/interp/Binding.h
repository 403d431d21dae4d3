// Binding host arrays to a kernel's parameters: the checks every entry point
// (`fnk run`, libfnk, the Python package) makes before running a kernel.
// Symbolic dims are bound from the first tensor that names them and checked
// against every later one; errors name the parameter and both sizes.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "backend/interp/Interpreter.h"

namespace fnk::interp {

class ArgBinder {
public:
  explicit ArgBinder(const ir::Function& fn);

  /// Sets a dim only output tensors carry (e.g. a partial-sum count).
  Status setDim(const std::string& name, int64_t size);
  /// Binds an input or output tensor. Floating parameters accept float32 or
  /// float64 data, rounded to the parameter's dtype; others need their own
  /// dtype. `a` is converted in place.
  Status bindTensor(const std::string& param, HostArray& a);
  /// Binds a tensor whose data lives elsewhere (device memory): `a` holds its
  /// dtype, which must be the parameter's own, and its shape; no data.
  Status bindShape(const std::string& param, HostArray& a);
  Status bindScalar(const std::string& param, double value);
  /// Gives an unbound output tensor its shape from the bound dims, zeroed.
  Status allocateOutput(const std::string& param, HostArray& a);
  /// Every parameter must be bound; returns the args in parameter order.
  Status finish(std::vector<Arg>& args) const;
  /// The first parameter not bound yet, or -1.
  int firstUnbound() const;

  const ir::Function& function() const { return fn_; }
  int paramIndex(const std::string& name, Status& error) const;

private:
  Status bindDims(const ir::Param& p, const std::vector<int64_t>& shape);
  Status bind(const std::string& param, HostArray& a, bool withData);
  const ir::Function& fn_;
  std::vector<Arg> args_;
  std::vector<bool> bound_;
  std::map<std::string, std::pair<int64_t, std::string>> dims_;  // symbol -> (size, from)
};

}  // namespace fnk::interp
