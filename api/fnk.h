/* libfnk: the C ABI of the fnk compiler and runtime, for programs and for the
 * Python package (python/fnk, through ctypes).
 *
 * Every call that can fail takes `char** error`: on failure it returns NULL or
 * a non-zero code and stores a malloc'ed message (with the full located
 * diagnostic for source errors) that the caller frees with fnk_string_free.
 * No call aborts the process on bad input. Several threads may call into one
 * module at once (fnk_module_free aside): the module guards its caches, and
 * kernels run concurrently. */
#ifndef FNK_H
#define FNK_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FNK_ABI_VERSION 3

typedef struct fnk_module fnk_module;

/* A view of caller-owned memory. */
typedef struct fnk_tensor {
  void* data;             /* host memory for FNK_DEVICE_CPU, device memory for FNK_DEVICE_GPU */
  const char* dtype;      /* element type of that memory: f32 f64 f16 bf16 i8 i16 i32 i64 u8 u32 bool */
  int32_t rank;
  const int64_t* shape;
  const int64_t* strides; /* in elements; NULL means row-major contiguous */
} fnk_tensor;

typedef struct fnk_arg {
  const char* name;       /* the kernel parameter this binds */
  int32_t is_tensor;
  fnk_tensor tensor;
  double scalar;
} fnk_arg;

enum { FNK_DEVICE_CPU = 0, FNK_DEVICE_GPU = 1 };

int32_t fnk_abi_version(void);
const char* fnk_version(void);
void fnk_string_free(char* s);

/* Parses and checks a .fnk file (imports resolved from its directory, the
 * include dirs and the stdlib). */
fnk_module* fnk_module_load(const char* path, const char* const* include_dirs, int32_t n_include, char** error);
/* The same for source text; `name` is used in diagnostics. */
fnk_module* fnk_module_compile(const char* name, const char* source, const char* const* include_dirs,
                               int32_t n_include, char** error);
void fnk_module_free(fnk_module* m);

/* The module's kernels and their signatures, as JSON:
 * {"kernels":[{"name":..,"consts":[{"name":..,"kind":..,"default":..|null}],
 *   "params":[{"name":..,"kind":"tensor"|"scalar","out":bool,"dtype":..,"dims":[..]}]}]} */
char* fnk_module_signature(const fnk_module* m, char** error);

/* Instantiates `kernel` with the given const-generic values (text, as -D
 * takes them) and returns its tile IR after the pass pipeline. */
char* fnk_kernel_ir(fnk_module* m, const char* kernel, const char* const* const_names,
                    const char* const* const_values, int32_t n_consts, char** error);

/* The same instance's PTX for sm_90a, as `fnkc --emit=ptx` writes it (one
 * .entry named after the kernel). A build without the GPU backend returns
 * null with an error saying so. */
char* fnk_kernel_ptx(fnk_module* m, const char* kernel, const char* const* const_names,
                     const char* const* const_values, int32_t n_consts, char** error);

/* What the driver says of the same instance on the GPU (compiling and loading
 * it if needed), as JSON: {"registers":..,"local_bytes":..,"ctas_per_sm":..,
 * "clusters":..,"sms":..}, per-thread registers and local bytes, the CTAs one
 * SM holds at once, and for a cluster kernel the clusters resident on the
 * device at once (0 otherwise; a 16-CTA cluster needs 16 free SMs of one GPC).
 * Schedules size persistent grids by it. Null with an error without a GPU. */
char* fnk_kernel_occupancy(fnk_module* m, const char* kernel, const char* const* const_names,
                           const char* const* const_values, int32_t n_consts, char** error);

/* Runs `kernel` once. On FNK_DEVICE_CPU it runs in the interpreter on host
 * memory: floating parameters accept f32/f64 memory (bf16/f16 values are
 * rounded to nearest even on the way in), outputs are written back in their
 * memory's dtype. Every argument is checked (names, shapes, dims, dtypes)
 * before anything runs. Returns 0 on success. */
int32_t fnk_run(fnk_module* m, const char* kernel, const char* const* const_names, const char* const* const_values,
                int32_t n_consts, const fnk_arg* args, int32_t n_args, int32_t device, void* stream, char** error);

/* A kernel instance: `kernel` at the given const-generic values,
 * instantiated once and kept by the module (freed with it; the same handle
 * for the same instance). For callers that launch it many times:
 * fnk_instance_run skips the instantiation lookup and takes its arguments as
 * one array of words, which a caller builds faster than fnk_arg structs
 * (the Python package: 28 us of a 50 us call went on those). */
typedef struct fnk_instance fnk_instance;
fnk_instance* fnk_instance_get(fnk_module* m, const char* kernel, const char* const* const_names,
                               const char* const* const_values, int32_t n_consts, char** error);

/* Element types in fnk_instance_run's words. */
enum {
  FNK_DTYPE_F32 = 0, FNK_DTYPE_F64, FNK_DTYPE_F16, FNK_DTYPE_BF16, FNK_DTYPE_I8, FNK_DTYPE_I16,
  FNK_DTYPE_I32, FNK_DTYPE_I64, FNK_DTYPE_U8, FNK_DTYPE_U32, FNK_DTYPE_BOOL
};

/* Runs an instance once, as fnk_run. `words` holds one group per kernel
 * parameter, in the signature's order:
 *   a tensor: its data pointer, its FNK_DTYPE_* code, its rank r, then r
 *             dims and r strides (in elements);
 *   a scalar: the bits of its value as an IEEE double.
 * n_words must be exactly what the groups take. */
int32_t fnk_instance_run(fnk_instance* inst, const int64_t* words, int32_t n_words, int32_t device, void* stream,
                         char** error);

/* The command-line tools, run as their executables would be: `tool` is
 * "fnk" or "fnkc", argv[0] the program's name. Returns the exit status (2 for
 * an unknown tool). The fnk and fnkc executables are only this call, so that
 * they and the Python package share libfnk's one copy of the compiler. */
int fnk_tool_main(const char* tool, int argc, char** argv);

#ifdef __cplusplus
}
#endif
#endif
