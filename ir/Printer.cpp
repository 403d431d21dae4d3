#include "ir/Printer.h"

#include <ostream>
#include <sstream>
#include <unordered_map>

namespace fnk::ir {

namespace {

class FunctionPrinter {
public:
  explicit FunctionPrinter(std::ostream& os) : os_(os) {}

  void print(const Function& f) {
    os_ << "kernel @" << f.name;
    if (!f.consts.empty()) {
      os_ << "<";
      for (size_t i = 0; i < f.consts.size(); ++i)
        os_ << (i ? ", " : "") << f.consts[i].first << " = " << attrValue(f.consts[i].second);
      os_ << ">";
    }
    os_ << "(";
    for (size_t i = 0; i < f.params.size(); ++i)
      os_ << (i ? ", " : "") << "%" << f.params[i].name << ": " << f.params[i].type.str();
    os_ << ")";
    printAttrs(f.attrs);
    os_ << "\n";
    printFunctionRegion("launch", f.launch, f);
    printFunctionRegion("body", f.body, f);
  }

private:
  void printFunctionRegion(const char* label, const Region& r, const Function& f) {
    os_ << label << " {\n";
    if (!r.empty()) {
      const Block& b = r.front();
      for (unsigned i = 0; i < b.numArguments(); ++i) names_[b.argument(i)] = "%" + f.params[i].name;
      printOps(b, 1);
    }
    os_ << "}\n";
  }

  static std::string attrValue(const Attr& a) {
    if (auto* s = std::get_if<std::string>(&a)) return "\"" + *s + "\"";
    return attrStr(a);
  }

  void printAttrs(const AttrDict& d) {
    if (d.empty()) return;
    os_ << " {";
    bool first = true;
    for (const auto& [k, v] : d.entries()) {
      os_ << (first ? "" : ", ") << k << " = " << attrValue(v);
      first = false;
    }
    os_ << "}";
  }

  const std::string& name(const Value* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    return names_[v] = "%" + std::to_string(next_++);
  }

  void indent(int depth) {
    for (int i = 0; i < depth; ++i) os_ << "  ";
  }

  void printOps(const Block& b, int depth) {
    for (const auto& op : b.ops()) printOp(*op, depth);
  }

  void printOp(const Operation& op, int depth) {
    indent(depth);
    for (unsigned i = 0; i < op.numResults(); ++i) os_ << (i ? ", " : "") << name(op.result(i));
    if (op.numResults()) os_ << " = ";
    os_ << op.name();
    for (unsigned i = 0; i < op.numOperands(); ++i) os_ << (i ? ", " : " ") << name(op.operand(i));
    printAttrs(op.attrs());
    if (op.numResults()) {
      os_ << " : ";
      for (unsigned i = 0; i < op.numResults(); ++i) os_ << (i ? ", " : "") << op.result(i)->type().str();
    }
    for (unsigned r = 0; r < op.numRegions(); ++r) {
      const Region& region = op.region(r);
      os_ << " {\n";
      if (!region.empty()) {
        const Block& blk = region.front();
        if (blk.numArguments()) {
          indent(depth + 1);
          os_ << "^bb(";
          for (unsigned i = 0; i < blk.numArguments(); ++i)
            os_ << (i ? ", " : "") << name(blk.argument(i)) << ": " << blk.argument(i)->type().str();
          os_ << "):\n";
        }
        printOps(blk, depth + 1);
      }
      indent(depth);
      os_ << "}";
    }
    os_ << "\n";
  }

  std::ostream& os_;
  std::unordered_map<const Value*, std::string> names_;
  unsigned next_ = 0;
};

}  // namespace

void print(std::ostream& os, const Function& f) { FunctionPrinter(os).print(f); }

void print(std::ostream& os, const Module& m) {
  os << "module @" << m.name << "\n";
  for (const auto& f : m.functions) {
    os << "\n";
    print(os, *f);
  }
}

std::string toString(const Module& m) {
  std::ostringstream ss;
  print(ss, m);
  return ss.str();
}

}  // namespace fnk::ir
