// Runs work on a thread with a large stack. The front end and the IR walkers
// recurse over nesting that the parsers bound (frontend/Parse.h,
// ir/Parser.h); this keeps that bound far below any stack limit, whatever
// thread the caller (a CLI, a Python interpreter) happens to be on.
#pragma once
#include <functional>

namespace fnk {

void runWithLargeStack(const std::function<void()>& work);

}  // namespace fnk
