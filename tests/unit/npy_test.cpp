// .npy reading and writing, and the float rounding helpers the interpreter
// and the .npy code share.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "support/Float.h"
#include "support/Npy.h"

namespace fnk {
namespace {

using ir::DType;

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("fnk_npy_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A .npy image with the given header dict text, version and data bytes.
std::string npyImage(const std::string& dict, const std::string& data, int version = 1) {
  std::string h = dict;
  size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(version) + '\0';
  uint32_t len = static_cast<uint32_t>(h.size());
  out.append(reinterpret_cast<const char*>(&len), version == 1 ? 2 : 4);
  return out + h + data;
}

std::string floatBytes(std::vector<float> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

TEST(Npy, RoundTripsEveryDType) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    DType t;
    std::vector<double> values;
  };
  const Case cases[] = {
      {DType::F64, {0, -0.0, 1.0 / 3, -1e300, inf, 5e-324}},
      {DType::F32, {0, 1.5, -3.25, static_cast<float>(1e30), -inf, static_cast<float>(0.1)}},
      {DType::F16, {0, 1, -2, 65504, 0.0009765625, std::ldexp(1.0, -24)}},
      {DType::BF16, {0, 1, -2, std::ldexp(1.5, 127), 0.0078125, -inf}},
      {DType::I64, {0, -1, 1ll << 52, -(1ll << 53), 42, 7}},
      {DType::I32, {0, -1, 2147483647, -2147483648.0, 5, 6}},
      {DType::I16, {0, -1, 32767, -32768, 5, 6}},
      {DType::I8, {0, -1, 127, -128, 5, 6}},
      {DType::U8, {0, 1, 255, 128, 5, 6}},
      {DType::U32, {0, 1, 4294967295.0, 2147483648.0, 5, 6}},
      {DType::I1, {0, 1, 1, 0, 0, 1}},
  };
  for (const auto& c : cases) {
    std::string path = tempPath("rt.npy");
    ASSERT_TRUE(writeNpy(path, c.t, {2, 3}, c.values)) << ir::dtypeName(c.t);
    HostArray a;
    Status s = readNpy(path, a);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(a.dtype, c.t);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
    ASSERT_EQ(a.data.size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(a.data[i], c.values[i]) << ir::dtypeName(c.t) << " element " << i;
      EXPECT_EQ(std::signbit(a.data[i]), std::signbit(c.values[i])) << ir::dtypeName(c.t) << " element " << i;
    }
    std::remove(path.c_str());
  }
}

TEST(Npy, HeaderIsNumPyCompatible) {
  std::string path = tempPath("hdr.npy");
  ASSERT_TRUE(writeNpy(path, DType::F32, {3}, {1, 2, 3}));
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), 128u + 12u);  // the header is padded to a multiple of 64 bytes
  EXPECT_EQ(bytes.substr(10, 57), "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }");
  EXPECT_EQ(bytes[127], '\n');
  std::remove(path.c_str());
}

TEST(Npy, ScalarsAndEmptyArrays) {
  std::string path = tempPath("scalar.npy");
  ASSERT_TRUE(writeNpy(path, DType::F64, {}, {2.5}));
  HostArray a;
  ASSERT_TRUE(readNpy(path, a));
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.data, (std::vector<double>{2.5}));
  ASSERT_TRUE(writeNpy(path, DType::I32, {0, 4}, {}));
  ASSERT_TRUE(readNpy(path, a));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(a.data.empty());
  std::remove(path.c_str());
}

TEST(Npy, ReadsVersions2And3AndMlDtypesBf16) {
  HostArray a;
  for (int v : {2, 3}) {
    Status s = parseNpy(npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", floatBytes({1, 2}), v), "v.npy", a);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(a.data, (std::vector<double>{1, 2}));
  }
  std::string bf16("\x80\x3f\x00\xc0", 4);  // 1.0, -2.0
  ASSERT_TRUE(parseNpy(npyImage("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", bf16), "b.npy", a));
  EXPECT_EQ(a.dtype, DType::BF16);
  EXPECT_EQ(a.data, (std::vector<double>{1, -2}));
  // Double quotes and no trailing comma are valid Python too.
  ASSERT_TRUE(parseNpy(npyImage("{\"shape\": (1, 2), \"fortran_order\": False, \"descr\": \"<f4\"}", floatBytes({3, 4})), "q.npy", a));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2}));
}

void expectError(const std::string& bytes, const std::string& fragment) {
  HostArray a;
  Status s = parseNpy(bytes, "in.npy", a);
  ASSERT_FALSE(s) << "expected an error containing: " << fragment;
  EXPECT_EQ(s.message().rfind("in.npy: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

TEST(Npy, BadFilesAreErrorsNamingTheFile) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  expectError("", "bad magic");
  expectError("PK\x03\x04 not numpy at all", "bad magic");
  expectError(npyImage(ok, floatBytes({1})), "data holds 1 elements but shape 2 needs 2");
  expectError(npyImage(ok, floatBytes({1, 2})).substr(0, 40), "file ends inside the header");
  expectError(std::string("\x93NUMPY\x01\x00\x05", 9), "file ends inside the header length");
  expectError(npyImage("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", floatBytes({1, 2})), "fortran_order");
  expectError(npyImage("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", floatBytes({1, 2, 3, 4})), "unsupported dtype '<c8'");
  expectError(npyImage("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", floatBytes({1, 2})), "big-endian");
  expectError(npyImage("{'descr': '<f4', 'shape': (2,), }", floatBytes({1, 2})), "lacks");
  expectError(npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (2,-1), }", floatBytes({1, 2})), "shape");
  expectError(npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", floatBytes({1, 2})), "unexpected key 'x'");
  expectError(npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", floatBytes({1, 2})), "malformed header");
  expectError(npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", ""),
              "too many elements");
  expectError(npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", ""), "too large");
  expectError(npyImage(ok, floatBytes({1, 2}), 4), "version 4");
  std::string huge = std::string("\x93NUMPY\x02\x00", 8) + std::string("\xff\xff\xff\x7f", 4);
  expectError(huge, "too large");
}

TEST(Npy, FileErrors) {
  HostArray a;
  Status s = readNpy("/nonexistent/dir/x.npy", a);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "/nonexistent/dir/x.npy: cannot open file for reading");
  std::string path = tempPath("trunc.npy");
  writeBytes(path, npyImage("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", std::string(16, '\0')));
  s = readNpy(path, a);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), path + ": data holds 2 elements but shape 3 needs 3");
  std::remove(path.c_str());
  s = writeNpy("/nonexistent/dir/y.npy", DType::F32, {1}, {1});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "/nonexistent/dir/y.npy: cannot open file for writing");
  s = writeNpy(path, DType::F32, {2, 2}, {1});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), path + ": shape 2x2 needs 4 elements but the data has 1");
}

TEST(Float, Bf16RoundsToNearestEven) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(roundToBf16(1 + std::ldexp(1, -8)), 1.0);  // tie, even is 1
  EXPECT_EQ(roundToBf16(1 + 3 * std::ldexp(1, -8)), 1 + std::ldexp(1, -6));  // tie, even is up
  EXPECT_EQ(roundToBf16(-(1 + std::ldexp(1, -8))), -1.0);
  // Just above a tie rounds up, even where rounding through float first would
  // land on the tie and then round down (double rounding).
  EXPECT_EQ(roundToBf16(1 + std::ldexp(1, -8) + std::ldexp(1, -40)), 1 + std::ldexp(1, -7));
  const double maxBf16 = std::ldexp(2 - std::ldexp(1, -7), 127);
  EXPECT_EQ(roundToBf16(maxBf16), maxBf16);
  EXPECT_EQ(roundToBf16(maxBf16 + std::ldexp(1, 119) * 0.99), maxBf16);
  EXPECT_EQ(roundToBf16(maxBf16 + std::ldexp(1, 119)), inf);  // the tie rounds to even, past the top
  EXPECT_EQ(roundToBf16(1e300), inf);
  EXPECT_EQ(roundToBf16(-1e300), -inf);
  EXPECT_TRUE(std::isnan(roundToBf16(NAN)));
  // Subnormals: the smallest is 2^-133.
  EXPECT_EQ(roundToBf16(std::ldexp(1, -133)), std::ldexp(1, -133));
  EXPECT_EQ(roundToBf16(std::ldexp(1, -134)), 0.0);  // tie with 0, even is 0
  EXPECT_EQ(roundToBf16(std::ldexp(1.0000001, -134)), std::ldexp(1, -133));
  EXPECT_EQ(roundToBf16(std::ldexp(3, -134)), std::ldexp(2, -133));  // tie, even is 2 quanta
  EXPECT_EQ(roundToBf16(std::ldexp(127.5, -133)), std::ldexp(128, -133));  // rounds up into the normals
  EXPECT_TRUE(std::signbit(roundToBf16(-std::ldexp(1, -140))));
  EXPECT_EQ(bf16Bits(1.0), 0x3F80);
  EXPECT_EQ(bf16Bits(-2.0), 0xC000);
  EXPECT_EQ(bf16Bits(inf), 0x7F80);
  EXPECT_EQ(bf16Bits(NAN), 0x7FC0);
  EXPECT_EQ(bf16Bits(std::ldexp(1, -133)), 0x0001);
  for (uint32_t b = 0; b < 0x10000; ++b) {  // every bit pattern survives decode + encode
    double v = bf16FromBits(static_cast<uint16_t>(b));
    if (std::isnan(v)) continue;
    ASSERT_EQ(roundToBf16(v), v) << b;
    ASSERT_EQ(bf16Bits(v), b) << b;
  }
}

TEST(Float, F16RoundsToNearestEven) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(roundToF16(1 + std::ldexp(1, -11)), 1.0);
  EXPECT_EQ(roundToF16(1 + 3 * std::ldexp(1, -11)), 1 + std::ldexp(1, -9));
  EXPECT_EQ(roundToF16(65504), 65504);
  EXPECT_EQ(roundToF16(65519.99), 65504);
  EXPECT_EQ(roundToF16(65520), inf);  // the tie past the largest finite
  EXPECT_EQ(roundToF16(-1e6), -inf);
  EXPECT_EQ(roundToF16(std::ldexp(1, -24)), std::ldexp(1, -24));
  EXPECT_EQ(roundToF16(std::ldexp(1, -25)), 0.0);
  EXPECT_EQ(roundToF16(std::ldexp(3, -25)), std::ldexp(1, -23));
  EXPECT_EQ(roundToF16(0.1), 0.0999755859375);
  EXPECT_EQ(f16Bits(1.0), 0x3C00);
  EXPECT_EQ(f16Bits(65504), 0x7BFF);
  EXPECT_EQ(f16Bits(std::ldexp(1, -24)), 0x0001);
  EXPECT_EQ(f16Bits(-0.0), 0x8000);
  EXPECT_EQ(f16Bits(inf), 0x7C00);
  EXPECT_EQ(f16Bits(NAN), 0x7E00);
  EXPECT_EQ(f16FromBits(0xFC00), -inf);
  EXPECT_TRUE(std::isnan(f16FromBits(0x7E00)));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    double v = f16FromBits(static_cast<uint16_t>(b));
    if (std::isnan(v)) continue;
    ASSERT_EQ(roundToF16(v), v) << b;
    ASSERT_EQ(f16Bits(v), b) << b;
  }
}

TEST(Float, IntegersWrapAndCastsSaturate) {
  EXPECT_EQ(roundToDType(200, DType::I8), -56);
  EXPECT_EQ(roundToDType(-1, DType::U8), 255);
  EXPECT_EQ(roundToDType(-1, DType::U32), 4294967295.0);
  EXPECT_EQ(roundToDType(2147483648.0, DType::I32), -2147483648.0);
  EXPECT_EQ(roundToDType(std::ldexp(1, 63), DType::I64), -std::ldexp(1, 63));
  EXPECT_EQ(roundToDType(2, DType::I1), 1);
  EXPECT_EQ(roundToDType(-2.7, DType::I32), -2);
  EXPECT_EQ(roundToDType(NAN, DType::I32), 0);
  EXPECT_EQ(roundToDType(0.1, DType::F32), static_cast<double>(0.1f));
  EXPECT_EQ(castToDType(1e10, DType::F32, DType::I32), 2147483647);
  EXPECT_EQ(castToDType(-1e30, DType::F32, DType::I64), -std::ldexp(1, 63));
  EXPECT_LT(castToDType(1e30, DType::F32, DType::I64), std::ldexp(1, 63));  // saturates to a valid i64
  EXPECT_EQ(castToDType(-5, DType::F32, DType::U32), 0);
  EXPECT_EQ(castToDType(NAN, DType::F32, DType::I8), 0);
  EXPECT_EQ(castToDType(300, DType::I32, DType::U8), 44);  // int to int wraps
  EXPECT_EQ(castToDType(-0.0, DType::F32, DType::I1), 0);
}

}  // namespace
}  // namespace fnk
