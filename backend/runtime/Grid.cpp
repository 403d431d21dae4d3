#include "backend/runtime/Grid.h"

#include "backend/interp/Eval.h"

namespace fnk::rt {

Status evalGrid(const ir::Function& fn, const std::vector<interp::Arg>& args, int64_t grid[3]) {
  using namespace interp::detail;
  if (fn.launch.empty() || args.size() != fn.params.size())
    return Status::error("kernel '" + fn.name + "': no launch region, or wrong argument count");
  SlotMap slots(fn);
  Evaluator ev(slots, nullptr);
  const ir::Block& blk = fn.launch.front();
  std::vector<Memory> mems(fn.params.size());
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (fn.params[i].type.isTensor()) {
      HostArray* const* t = std::get_if<HostArray*>(&args[i]);
      if (!t || !*t) return Status::error("kernel '" + fn.name + "': argument '" + fn.params[i].name + "' is not a tensor");
      mems[i] = Memory{"tensor '" + fn.params[i].name + "'", (*t)->dtype, (*t)->shape, (*t)->data.data()};
      if (Status s = ev.bindMemory(blk.argument(static_cast<unsigned>(i)), &mems[i]); !s) return s;
    } else {
      const double* v = std::get_if<double>(&args[i]);
      if (Status s = ev.bindTile(blk.argument(static_cast<unsigned>(i)), Tile{{}, {v ? *v : 0.0}}); !s) return s;
    }
  }
  std::vector<Tile> g;
  if (Status s = ev.runBlock(blk, &g); !s) {
    std::string dims = interp::describeDims(fn, args);
    return Status::error("kernel '" + fn.name + "', launch region: " + s.message() + (dims.empty() ? "" : " (" + dims + ")"));
  }
  if (g.size() != 3) return Status::error("kernel '" + fn.name + "': the launch region does not end in func.launch_grid");
  for (int i = 0; i < 3; ++i) {
    double v = g[i].data.empty() ? -1 : g[i].data[0];
    if (!(v >= 0 && v < 2147483648.0))
      return Status::error("kernel '" + fn.name + "': grid dim " + std::to_string(i) + " is " + std::to_string(v));
    grid[i] = static_cast<int64_t>(v);
  }
  return Status::ok();
}

}  // namespace fnk::rt
