#include "backend/cubin/Cubin.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace fnk::cubin {

namespace {

std::string findPtxas() {
  if (const char* e = std::getenv("FNK_PTXAS"); e && *e) return e;
  if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0) return "/usr/local/cuda/bin/ptxas";
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty() && access((dir + "/ptxas").c_str(), X_OK) == 0) return dir + "/ptxas";
  }
  return {};
}

bool readFile(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

Status viaPtxas(const std::string& ptxas, const std::string& ptx, const std::string& arch, const std::string& name,
                std::string& cubin, std::string* log) {
  char dir[] = "/tmp/fnk-ptxas-XXXXXX";
  if (!mkdtemp(dir)) return Status::error("kernel '" + name + "': cannot create a temporary directory for ptxas");
  std::string in = std::string(dir) + "/k.ptx", out = std::string(dir) + "/k.cubin", err = std::string(dir) + "/log";
  {
    std::ofstream f(in, std::ios::binary);
    f << ptx;
  }
  std::vector<std::string> argv = {ptxas, "-arch=" + arch, "-O3", in, "-o", out};
  if (log) argv.insert(argv.begin() + 1, "-v");  // registers, shared memory, spills
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawn(&pid, ptxas.c_str(), &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  pid_t waited = -1;
  if (rc == 0)
    do waited = waitpid(pid, &status, 0);
    while (waited < 0 && errno == EINTR);
  std::string msg;
  readFile(err, msg);
  if (log) *log = msg;
  bool ok = rc == 0 && waited == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 && readFile(out, cubin);
  if (!ok && msg.empty())  // say what happened when ptxas said nothing
    msg = rc != 0 ? "cannot start " + ptxas + ": " + std::strerror(rc)
          : waited != pid ? std::string("waitpid: ") + std::strerror(errno)
          : WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
          : "exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ", no cubin written";
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(err.c_str());
  rmdir(dir);
  if (!ok) return Status::error("kernel '" + name + "': ptxas failed" + (msg.empty() ? std::string() : ":\n" + msg));
  return Status::ok();
}

// nvJitLink through dlopen; the header's inline wrappers call these versioned names.
using Handle = void*;
using CreateFn = int (*)(Handle*, uint32_t, const char**);
using AddDataFn = int (*)(Handle, int, const void*, size_t, const char*);
using CompleteFn = int (*)(Handle);
using SizeFn = int (*)(Handle, size_t*);
using GetFn = int (*)(Handle, void*);
using DestroyFn = int (*)(Handle*);

Status viaNvJitLink(const std::string& ptx, const std::string& arch, const std::string& name, std::string& cubin,
                    std::string* log) {
  void* lib = dlopen("libnvJitLink.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libnvJitLink.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return Status::error("kernel '" + name + "': no ptxas and no libnvJitLink found to assemble PTX");
  auto sym = [&](const char* n) { return dlsym(lib, n); };
  auto create = reinterpret_cast<CreateFn>(sym("__nvJitLinkCreate_13_0"));
  auto add = reinterpret_cast<AddDataFn>(sym("__nvJitLinkAddData_13_0"));
  auto complete = reinterpret_cast<CompleteFn>(sym("__nvJitLinkComplete_13_0"));
  auto size = reinterpret_cast<SizeFn>(sym("__nvJitLinkGetLinkedCubinSize_13_0"));
  auto get = reinterpret_cast<GetFn>(sym("__nvJitLinkGetLinkedCubin_13_0"));
  auto destroy = reinterpret_cast<DestroyFn>(sym("__nvJitLinkDestroy_13_0"));
  auto esize = reinterpret_cast<SizeFn>(sym("__nvJitLinkGetErrorLogSize_13_0"));
  auto eget = reinterpret_cast<GetFn>(sym("__nvJitLinkGetErrorLog_13_0"));
  if (!create || !add || !complete || !size || !get || !destroy)
    return Status::error("kernel '" + name + "': libnvJitLink lacks the CUDA 13.0 entry points");
  std::string archOpt = "-arch=" + arch;
  const char* opts[] = {archOpt.c_str(), "-O3"};
  Handle h = nullptr;
  if (create(&h, 2, opts) != 0) return Status::error("kernel '" + name + "': nvJitLinkCreate failed");
  int rc = add(h, 1 /* NVJITLINK_INPUT_PTX */, ptx.data(), ptx.size(), name.c_str());
  if (rc == 0) rc = complete(h);
  size_t n = 0;
  if (rc == 0) rc = size(h, &n);
  if (rc == 0) {
    cubin.resize(n);
    rc = get(h, cubin.data());
  }
  if (rc != 0) {
    std::string msg;
    size_t en = 0;
    if (esize && eget && esize(h, &en) == 0 && en > 1) {
      msg.resize(en);
      eget(h, msg.data());
    }
    if (log) *log = msg;
    destroy(&h);
    return Status::error("kernel '" + name + "': nvJitLink failed (" + std::to_string(rc) + ")" + (msg.empty() ? "" : ":\n" + msg));
  }
  destroy(&h);
  return Status::ok();
}

}  // namespace

bool haveAssembler() { return !findPtxas().empty(); }

Status assemble(const std::string& ptx, const std::string& arch, const std::string& name, std::string& cubin,
                std::string* log) {
  std::string ptxas = findPtxas();
  if (!ptxas.empty()) return viaPtxas(ptxas, ptx, arch, name, cubin, log);
  return viaNvJitLink(ptx, arch, name, cubin, log);
}

}  // namespace fnk::cubin
