#include "frontend/Program.h"

#include <cstdlib>
#include <filesystem>
#include <set>

#include "frontend/Parse.h"

namespace fnk {

namespace fs = std::filesystem;

std::string defaultStdlibDir() {
  if (const char* env = std::getenv("FNK_STDLIB")) return env;
  std::error_code ec;
#ifdef FNK_STDLIB_DIR
  if (fs::is_directory(FNK_STDLIB_DIR, ec)) return FNK_STDLIB_DIR;
#endif
  // A build that travelled (to a GPU machine, into a package) finds the stdlib
  // beside or above its executable.
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path d = exe.parent_path(); !ec && !d.empty() && d != d.root_path(); d = d.parent_path())
    if (fs::is_regular_file(d / "stdlib" / "norm" / "rmsnorm.fnk", ec)) return (d / "stdlib").string();
  return "stdlib";
}

static std::string moduleNameFromPath(const std::string& path) {
  std::string stem = fs::path(path).stem().string();
  return stem.empty() ? "main" : stem;
}

bool Program::loadFile(const std::string& path) {
  std::string err;
  int id = sm_.addFile(path, err);
  if (id < 0) {
    diags_.error({}, err);
    return false;
  }
  auto m = parseSource(sm_, id, diags_);
  if (!m) return false;
  if (m->name.empty()) m->name = moduleNameFromPath(path);
  modules_.push_back(std::move(m));
  return loadImports(0);
}

bool Program::loadBuffer(const std::string& name, const std::string& text) {
  int id = sm_.addBuffer(name, text);
  auto m = parseSource(sm_, id, diags_);
  if (!m) return false;
  if (m->name.empty()) m->name = moduleNameFromPath(name);
  modules_.push_back(std::move(m));
  return loadImports(0);
}

std::string Program::resolveImport(const std::string& module, const std::string& fromFile) const {
  std::string rel = module;
  for (char& c : rel)
    if (c == '.') c = '/';
  rel += ".fnk";
  std::vector<std::string> dirs;
  if (module.rfind("std.", 0) == 0) {
    std::string dir = opts_.stdlibDir.empty() ? defaultStdlibDir() : opts_.stdlibDir;
    std::string sub = rel.substr(4);
    std::error_code ec;
    if (fs::is_regular_file(fs::path(dir) / sub, ec)) return (fs::path(dir) / sub).string();
  }
  dirs.push_back(fs::path(fromFile).parent_path().string());
  for (const auto& d : opts_.includeDirs) dirs.push_back(d);
  for (const auto& d : dirs) {
    std::error_code ec;
    fs::path p = fs::path(d.empty() ? "." : d) / rel;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

bool Program::loadImports(size_t index) {
  // Breadth-first over modules_, which grows as imports are found. A module is
  // loaded once however often it is imported, so cycles terminate.
  std::set<std::string> loaded;
  for (const auto& m : modules_) loaded.insert(m->name);
  bool ok = true;
  for (size_t i = index; i < modules_.size(); ++i) {
    std::vector<ast::Import> imports = modules_[i]->imports;  // modules_ may reallocate below
    for (const auto& imp : imports) {
      if (loaded.count(imp.module)) continue;
      std::string path = resolveImport(imp.module, sm_.name(modules_[i]->fileId));
      if (path.empty()) {
        auto& d = diags_.error(imp.range, "cannot find module '" + imp.module + "'");
        DiagEngine::note(d, imp.range, "searched the importing file's directory, -I directories and the stdlib (" +
                                           (opts_.stdlibDir.empty() ? defaultStdlibDir() : opts_.stdlibDir) + ")");
        ok = false;
        continue;
      }
      if (modules_.size() >= 256) {
        diags_.error(imp.range, "more than 256 modules imported");
        return false;
      }
      std::string err;
      int id = sm_.addFile(path, err);
      if (id < 0) {
        diags_.error(imp.range, err);
        ok = false;
        continue;
      }
      auto m = parseSource(sm_, id, diags_);
      if (!m) {
        ok = false;
        continue;
      }
      if (m->name.empty()) m->name = imp.module;
      loaded.insert(imp.module);
      loaded.insert(m->name);
      modules_.push_back(std::move(m));
    }
  }
  return ok;
}

const ast::FuncDecl* Program::lookup(const std::string& name) const {
  for (const auto& m : modules_)
    for (const auto& d : m->decls)
      if (d->name == name) return d.get();
  return nullptr;
}

}  // namespace fnk
