// The command-line tools' entry points. Their code lives in libfnk (with
// LLVM, ANTLR's parser and the runtime), so that fnk, fnkc and the Python
// package share one copy of it; the fnk and fnkc executables are launchers
// (tools/Launch.cpp) that call these through libfnk's fnk_tool_main.
#pragma once

namespace fnk::tools {

int fnkcMain(int argc, char** argv);  // tools/fnkc.cpp
int fnkMain(int argc, char** argv);   // tools/fnk.cpp

}  // namespace fnk::tools
