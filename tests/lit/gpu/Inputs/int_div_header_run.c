/* Runs the launch code of two generated headers (int_div.test) on the host,
 * with the three driver calls it makes stubbed: the grid each launch asks
 * for, and the launches a zero divisor refuses, against the interpreter's
 * integer division (truncating, INT_MIN / -1 wrapping to INT_MIN). */
#include <limits.h>
#include <stdio.h>
#include "launch_div.h"
#include "launch_scalar_div.h"

static unsigned grid_x;
static int launches;

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  (void)image;
  *module = (CUmodule)1;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  (void)module;
  (void)name;
  *function = (CUfunction)1;
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  (void)f;
  (void)params;
  (void)extra;
  grid_x = config->gridDimX;
  launches++;
  return CUDA_SUCCESS;
}

static int failures;

/* A launch that runs with a grid of `grid` CTAs (0: refused as invalid). */
static void expect(const char* what, CUresult r, unsigned grid) {
  static int seen;
  const int launched = launches > seen;
  seen = launches;
  const int ok = grid ? r == CUDA_SUCCESS && launched && grid_x == grid : r == CUDA_ERROR_INVALID_VALUE && !launched;
  printf("%s: %s (result %d, %s, grid %u)\n", what, ok ? "ok" : "WRONG", (int)r, launched ? "launched" : "not launched",
         grid_x);
  failures += !ok;
}

int main(void) {
  /* grid = (N / s) % 7 + N % t + 1 at N = 30 */
  expect("N / 0", fnk_launch_div_launch(0, 0, 30, 0, 30, 0, 3), 0);
  expect("N % 0", fnk_launch_div_launch(0, 0, 30, 0, 30, 2, 0), 0);
  expect("s = 2, t = -1", fnk_launch_div_launch(0, 0, 30, 0, 30, 2, -1), 15 % 7 + 0 + 1);
  expect("s = -1, t = 4", fnk_launch_div_launch(0, 0, 30, 0, 30, -1, 4), -30 % 7 + 30 % 4 + 1);
  /* grid = s / t - s + 1 + s % t */
  expect("INT_MIN / -1", fnk_launch_scalar_div_launch(0, 0, 1, 0, 1, INT_MIN, -1), 1);
  expect("-7 / 2", fnk_launch_scalar_div_launch(0, 0, 1, 0, 1, -7, 2), -3 + 7 + 1 - 1);
  expect("s / 0", fnk_launch_scalar_div_launch(0, 0, 1, 0, 1, 5, 0), 0);
  return failures != 0;
}
