#include "support/Npy.h"

#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "support/Elements.h"
#include "support/Float.h"

static_assert(std::endian::native == std::endian::little, "the .npy reader assumes a little-endian host");

namespace fnk {

namespace {

// np.load refuses headers over 10000 bytes unless told otherwise; we allow a
// little more but still bound what a hostile file can make us parse.
constexpr size_t kMaxHeaderBytes = 1 << 16;

struct DescrInfo {
  const char* descr;  // as written
  ir::DType dtype;
};
// The descr each dtype is written with. Reading also accepts the aliases in descrToDType.
constexpr DescrInfo kDescrs[] = {
    {"<f8", ir::DType::F64}, {"<f4", ir::DType::F32}, {"<f2", ir::DType::F16},   {"bfloat16", ir::DType::BF16},
    {"<i8", ir::DType::I64}, {"<i4", ir::DType::I32}, {"<i2", ir::DType::I16},   {"|i1", ir::DType::I8},
    {"|u1", ir::DType::U8},  {"<u4", ir::DType::U32}, {"|b1", ir::DType::I1},
};

bool descrToDType(const std::string& d, ir::DType& out) {
  for (const auto& e : kDescrs)
    if (d == e.descr) return out = e.dtype, true;
  // Byte order means nothing for one-byte types; '<V2' is ml_dtypes.bfloat16 through np.save.
  static const DescrInfo aliases[] = {{"<i1", ir::DType::I8}, {"=i1", ir::DType::I8}, {"<u1", ir::DType::U8},
                                      {"=u1", ir::DType::U8}, {"<b1", ir::DType::I1}, {"=b1", ir::DType::I1},
                                      {"<V2", ir::DType::BF16}, {"|V2", ir::DType::BF16}};
  for (const auto& e : aliases)
    if (d == e.descr) return out = e.dtype, true;
  return false;
}

// A recursive-descent reader for the one Python literal np.save writes:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
public:
  explicit HeaderParser(const std::string& s) : s_(s) {}

  bool parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape, std::string& err) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    if (!eat('{')) return fail(err, "header does not start with '{'");
    while (true) {
      if (eat('}')) break;
      std::string key;
      if (!str(key)) return fail(err, "expected a quoted key in the header");
      if (!eat(':')) return fail(err, "expected ':' after '" + key + "'");
      if (key == "descr") {
        if (!str(descr)) return fail(err, "'descr' is not a string (structured dtypes are not supported)");
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (word("True")) fortran = true;
        else if (word("False")) fortran = false;
        else return fail(err, "'fortran_order' is not True or False");
        haveFortran = true;
      } else if (key == "shape") {
        if (!tuple(shape, err)) return false;
        haveShape = true;
      } else {
        return fail(err, "unexpected key '" + key + "' in the header");
      }
      if (eat(',')) continue;
      if (eat('}')) break;
      return fail(err, "expected ',' or '}' in the header");
    }
    skipSpace();
    if (pos_ != s_.size()) return fail(err, "unexpected text after the header dictionary");
    if (!haveDescr || !haveFortran || !haveShape)
      return fail(err, "header lacks one of 'descr', 'fortran_order', 'shape'");
    return true;
  }

private:
  static bool fail(std::string& err, std::string m) {
    err = std::move(m);
    return false;
  }
  void skipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  bool word(const char* w) {
    skipSpace();
    size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) == 0) return pos_ += n, true;
    return false;
  }
  bool str(std::string& out) {
    skipSpace();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return false;
    char q = s_[pos_++];
    size_t end = s_.find(q, pos_);
    if (end == std::string::npos) return false;
    out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }
  bool tuple(std::vector<int64_t>& shape, std::string& err) {
    shape.clear();
    if (!eat('(')) return fail(err, "'shape' is not a tuple");
    while (true) {
      if (eat(')')) return true;
      skipSpace();
      size_t start = pos_;
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v))
          return fail(err, "a dimension in 'shape' is too large");
        ++pos_;
      }
      if (pos_ == start) return fail(err, "'shape' holds something other than non-negative integers");
      shape.push_back(v);
      if (shape.size() > 64) return fail(err, "'shape' has more than 64 dimensions");
      if (eat(',')) continue;
      if (eat(')')) return true;
      return fail(err, "expected ',' or ')' in 'shape'");
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

Status parseNpy(const std::string& bytes, const std::string& name, HostArray& out) {
  auto err = [&](const std::string& m) { return Status::error(name + ": " + m); };
  if (bytes.size() < 6 || bytes.compare(0, 6, "\x93NUMPY") != 0) return err("not a .npy file (bad magic)");
  if (bytes.size() < 8) return err("file ends inside the format version");
  int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) return err(".npy format version " + std::to_string(major) + " is not supported");
  size_t lenBytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + lenBytes) return err("file ends inside the header length");
  size_t headerLen = major == 1 ? loadLe<uint16_t>(&bytes[8]) : loadLe<uint32_t>(&bytes[8]);
  if (headerLen > kMaxHeaderBytes) return err("header of " + std::to_string(headerLen) + " bytes is too large");
  size_t dataStart = 8 + lenBytes + headerLen;
  if (bytes.size() < dataStart) return err("file ends inside the header");

  std::string descr, perr;
  bool fortran = false;
  std::vector<int64_t> shape;
  if (!HeaderParser(bytes.substr(8 + lenBytes, headerLen)).parse(descr, fortran, shape, perr))
    return err("malformed header: " + perr);
  if (fortran) return err("fortran_order arrays are not supported; save a C-order array (np.ascontiguousarray)");
  ir::DType dtype;
  if (!descrToDType(descr, dtype)) {
    std::string why = !descr.empty() && descr[0] == '>' ? " (big-endian data is not supported)" : "";
    return err("unsupported dtype '" + descr + "'" + why);
  }

  int64_t count = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(count, d, &count)) return err("shape " + ir::shapeStr(shape) + " has too many elements");
  size_t item = static_cast<size_t>(ir::byteSize(dtype));
  size_t avail = (bytes.size() - dataStart) / item;
  if (static_cast<uint64_t>(count) > avail)
    return err("data holds " + std::to_string(avail) + " elements but shape " + ir::shapeStr(shape) + " needs " +
               std::to_string(count));

  out.dtype = dtype;
  out.shape = std::move(shape);
  out.data.resize(static_cast<size_t>(count));
  const char* p = bytes.data() + dataStart;
  for (int64_t i = 0; i < count; ++i, p += item) out.data[i] = loadElement(p, dtype);
  return Status::ok();
}

Status readNpy(const std::string& path, HostArray& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open file for reading");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return Status::error(path + ": read error");
  return parseNpy(bytes, path, out);
}

Status writeNpy(const std::string& path, ir::DType dtype, const std::vector<int64_t>& shape,
                const std::vector<double>& data) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return Status::error(path + ": negative dimension in shape " + ir::shapeStr(shape));
    if (__builtin_mul_overflow(count, d, &count)) return Status::error(path + ": shape has too many elements");
  }
  if (static_cast<uint64_t>(count) != data.size())
    return Status::error(path + ": shape " + ir::shapeStr(shape) + " needs " + std::to_string(count) +
                         " elements but the data has " + std::to_string(data.size()));
  const char* descr = nullptr;
  for (const auto& e : kDescrs)
    if (e.dtype == dtype) descr = e.descr;

  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) header += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
  header += "), }";
  // Pad with spaces and a final newline so the data starts on a 64-byte boundary.
  bool v2 = header.size() + 1 + 10 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';

  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  out.resize(out.size() + (v2 ? 4 : 2));
  if (v2) storeLe<uint32_t>(&out[out.size() - 4], static_cast<uint32_t>(header.size()));
  else storeLe<uint16_t>(&out[out.size() - 2], static_cast<uint16_t>(header.size()));
  out += header;
  size_t item = static_cast<size_t>(elementBytes(dtype)), at = out.size();
  out.resize(at + data.size() * item);
  for (size_t i = 0; i < data.size(); ++i) storeElement(&out[at + i * item], dtype, data[i]);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status::error(path + ": cannot open file for writing");
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f) return Status::error(path + ": write failed");
  return Status::ok();
}

}  // namespace fnk
