// Ahead-of-time use without fnk: a program that includes the headers fnkc
// --emit=header wrote for rmsnorm_fwd (T=f32) and for tests/gpu/lang.fnk's
// lang_wait (CTAs that wait for each other) and launches them with nothing
// but the CUDA driver API, checked against float64 references on the host;
// lang_wait's launch must refuse a grid the GPU cannot hold at once.
// Built and run by tests/gpu/run.sh; FNK_HEADER and FNK_WAIT_HEADER name the
// headers.
#include FNK_HEADER
#include FNK_WAIT_HEADER

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

// lang_wait over 1000 elements (4 CTAs of 256 that pass suffix sums down a
// chain, then meet at a grid-wide barrier), against float64 sums; then the
// same launch with dims asking for 200000 CTAs, which the driver refuses
// before it starts (the cooperative launch: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE).
static int waitHeader() {  // 0: passed; 1: failed (CHECK returns 1 too)
  const int64_t N = 1000, G = (N + 255) / 256;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(2.0f, 1.0f);
  std::vector<float> x(N), suffix(G, NAN), y(N, NAN), z(N, NAN), total(1, 0.0f);
  std::vector<int32_t> flag(G, 0), arrived(1, 0);
  for (auto& v : x) v = nd(rng);
  CUdeviceptr dx, ds, df, dt, da, dy, dz;
  CHECK(cuMemAlloc(&dx, N * 4));
  CHECK(cuMemAlloc(&ds, G * 4));
  CHECK(cuMemAlloc(&df, G * 4));
  CHECK(cuMemAlloc(&dt, 4));
  CHECK(cuMemAlloc(&da, 4));
  CHECK(cuMemAlloc(&dy, N * 4));
  CHECK(cuMemAlloc(&dz, N * 4));
  CHECK(cuMemcpyHtoD(dx, x.data(), N * 4));
  CHECK(cuMemcpyHtoD(ds, suffix.data(), G * 4));
  CHECK(cuMemcpyHtoD(df, flag.data(), G * 4));  // the counters start at zero
  CHECK(cuMemcpyHtoD(dt, total.data(), 4));
  CHECK(cuMemcpyHtoD(da, arrived.data(), 4));
  CHECK(cuMemcpyHtoD(dy, y.data(), N * 4));
  CHECK(cuMemcpyHtoD(dz, z.data(), N * 4));
  CHECK(fnk_lang_wait_launch(nullptr, dx, N, ds, G, df, G, dt, 1, da, 1, dy, N, dz, N));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(suffix.data(), ds, G * 4));
  CHECK(cuMemcpyDtoH(y.data(), dy, N * 4));
  CHECK(cuMemcpyDtoH(z.data(), dz, N * 4));
  std::vector<double> block(G + 1, 0.0), after(G + 1, 0.0);
  double sum = 0;
  for (int64_t i = 0; i < N; ++i) block[i / 256] += x[i], sum += x[i];
  for (int64_t g = G - 1; g >= 0; --g) after[g] = after[g + 1] + block[g + 1];
  double err = 0;  // relative to the values' scale (the sums reach ~2000)
  auto track = [&](double d) { err = d > err || std::isnan(d) ? d : err; };
  for (int64_t g = 0; g < G; ++g) track(std::fabs(suffix[g] - (after[g] + block[g])) / sum);
  for (int64_t i = 0; i < N; ++i) {
    track(std::fabs(y[i] - (x[i] + after[i / 256])) / sum);
    track(std::fabs(z[i] - x[i] / sum) * N);
  }
  const int64_t huge = 200000 * int64_t{256};
  CUresult big = fnk_lang_wait_launch(nullptr, dx, huge, ds, 200000, df, 200000, dt, 1, da, 1, dy, huge, dz, huge);
  bool ok = err < 1e-5 && big == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  std::printf("%s aot header: lang_wait 1000 f32 (4 waiting CTAs) through the generated header, max relative error "
              "%.3g; 200000 CTAs -> %d\n", ok ? "PASS" : "FAIL", err, static_cast<int>(big));
  return ok ? 0 : 1;
}

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
  int waitRc = waitHeader();  // 0 when it passed, as main's own
  return ok && waitRc == 0 ? 0 : 1;
}
