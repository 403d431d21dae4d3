// fnk and fnkc as executables: libfnk (found beside this file, $ORIGIN) holds
// the tools' code; this only names which tool to run (FNK_TOOL).
#include "api/fnk.h"

int main(int argc, char** argv) { return fnk_tool_main(FNK_TOOL, argc, argv); }
