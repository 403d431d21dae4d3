// libfnk links ANTLR's runtime from Debian's static archive, which is built
// for executables (PIE): its code reads glibc's __libc_single_threaded
// PC-relatively, an access only an executable's copy of the variable can
// serve. This definition, private to libfnk (hidden), serves it. 0 says that
// threads may exist, so the shared_ptr counts in that code always use atomic
// operations: right whatever the process does (glibc's own flag is only a
// shortcut for processes that never start a thread).
extern "C" __attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
