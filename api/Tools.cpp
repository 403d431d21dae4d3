// fnk_tool_main: the command-line tools inside libfnk (tools/Main.h).
#include <cstring>
#include <iostream>

#include "api/fnk.h"
#include "tools/Main.h"

extern "C" int fnk_tool_main(const char* tool, int argc, char** argv) {
  if (tool && std::strcmp(tool, "fnkc") == 0) return fnk::tools::fnkcMain(argc, argv);
  if (tool && std::strcmp(tool, "fnk") == 0) return fnk::tools::fnkMain(argc, argv);
  std::cerr << "libfnk: no tool '" << (tool ? tool : "(null)") << "' (expected fnk or fnkc)\n";
  return 2;
}
