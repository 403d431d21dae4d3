// Ahead-of-time use without fnk: a program that includes the header fnkc
// --emit=header wrote for rmsnorm_fwd (T=f32) and launches it with nothing but
// the CUDA driver API, checked against a float64 reference on the host.
// Built and run by tests/gpu/run.sh; FNK_HEADER names the header.
#include FNK_HEADER

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#define CHECK(x)                                                             \
  do {                                                                       \
    CUresult r_ = (x);                                                       \
    if (r_ != CUDA_SUCCESS) {                                                \
      std::printf("FAIL aot header: %s returned %d\n", #x, static_cast<int>(r_)); \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main() {
  CHECK(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  const int64_t M = 37, N = 1000;
  std::mt19937 rng(42);
  std::normal_distribution<float> nd;
  std::vector<float> x(M * N), w(N), y(M * N, NAN), rstd(M, NAN);
  for (auto& v : x) v = nd(rng);
  for (auto& v : w) v = nd(rng);
  CUdeviceptr dx, dw, dy, dr;
  CHECK(cuMemAlloc(&dx, x.size() * 4));
  CHECK(cuMemAlloc(&dw, w.size() * 4));
  CHECK(cuMemAlloc(&dy, y.size() * 4));
  CHECK(cuMemAlloc(&dr, rstd.size() * 4));
  CHECK(cuMemcpyHtoD(dx, x.data(), x.size() * 4));
  CHECK(cuMemcpyHtoD(dw, w.data(), w.size() * 4));
  CHECK(cuMemcpyHtoD(dy, y.data(), y.size() * 4));  // the outputs start as NaN on the device too
  CHECK(cuMemcpyHtoD(dr, rstd.data(), rstd.size() * 4));
  CHECK(fnk_rmsnorm_fwd_launch(nullptr, dx, M, N, dw, N, dy, M, N, dr, M, 1e-6f));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(y.data(), dy, y.size() * 4));
  CHECK(cuMemcpyDtoH(rstd.data(), dr, rstd.size() * 4));
  // The largest error; a NaN (an element never written: y and rstd start as
  // NaN) makes it NaN, which the check below refuses (fmax would drop it).
  double err = 0;
  auto track = [&](double d) { err = d > err || std::isnan(d) ? d : err; };
  for (int64_t i = 0; i < M; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < N; ++j) ss += double(x[i * N + j]) * x[i * N + j];
    double r = 1 / std::sqrt(ss / N + 1e-6);
    track(std::fabs(rstd[i] - r));
    for (int64_t j = 0; j < N; ++j) track(std::fabs(y[i * N + j] - x[i * N + j] * r * w[j]));
  }
  // A w of the wrong length is refused before any launch.
  CUresult bad = fnk_rmsnorm_fwd_launch(nullptr, dx, M, N, dw, N - 1, dy, M, N, dr, M, 1e-6f);
  bool ok = err < 1e-4 && bad == CUDA_ERROR_INVALID_VALUE;
  std::printf("%s aot header: rmsnorm_fwd 37x1000 f32 through the generated header, max error %.3g, bad dims -> %d\n",
              ok ? "PASS" : "FAIL", err, static_cast<int>(bad));
  return ok ? 0 : 1;
}
