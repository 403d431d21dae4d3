// fnk's definition of ANTLR's antlr4::ANTLRInputStream (the class declared in
// the runtime's ANTLRInputStream.h), so that libfnk can link ANTLR's runtime
// statically (issue 3, item 5; CMakeLists.txt says what else that takes).
//
// Debian's libantlr4-runtime.a is built for executables: its
// ANTLRInputStream.cpp.o reaches the thread_local UTF-8 converter of
// antlrcpp::utf8_to_utf32 through local-exec TLS (R_X86_64_TPOFF32), which a
// shared library cannot use, and the runtime's Parser pulls that object in
// (Parser -> ParseTreePatternMatcher -> ANTLRInputStream). Every symbol that
// object defines is defined here, compiled as position-independent code, so
// the linker takes these and never pulls the archive's object. The behaviour
// is the runtime's (4.9): the input is UTF-8 (fnk validates it first,
// frontend/Parse.cpp), held as UTF-32 code points, a leading byte-order mark
// dropped; only getText of an interval that ends before it starts differs
// (empty here, where the runtime returned the rest of the input).
#include <antlr4-runtime.h>

#include <algorithm>
#include <iterator>

namespace antlr4 {

ANTLRInputStream::ANTLRInputStream(const std::string& input) {
  InitializeInstanceFields();
  load(input);
}

ANTLRInputStream::ANTLRInputStream(const char data_[], size_t numberOfActualCharsInArray)
    : ANTLRInputStream(std::string(data_, numberOfActualCharsInArray)) {}

ANTLRInputStream::ANTLRInputStream(std::istream& stream) {
  InitializeInstanceFields();
  load(stream);
}

void ANTLRInputStream::load(const std::string& input) {
  static constexpr char kBom[] = "\xef\xbb\xbf";
  const size_t skip = input.compare(0, 3, kBom, 3) == 0 ? 3 : 0;
  _data = antlrcpp::utf8_to_utf32(input.data() + skip, input.data() + input.size());
  p = 0;
}

void ANTLRInputStream::load(std::istream& stream) {
  if (!stream.good() || stream.eof()) return;  // no data: not an error
  load(std::string(std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>()));
}

void ANTLRInputStream::reset() { p = 0; }

void ANTLRInputStream::consume() {
  if (p >= _data.size()) throw IllegalStateException("cannot consume EOF");
  ++p;
}

size_t ANTLRInputStream::LA(ssize_t i) {
  if (i == 0) return 0;  // undefined
  const ssize_t at = static_cast<ssize_t>(p) + (i < 0 ? i : i - 1);  // LA(-1): the character before p
  if (at < 0 || at >= static_cast<ssize_t>(_data.size())) return IntStream::EOF;
  return _data[static_cast<size_t>(at)];
}

size_t ANTLRInputStream::LT(ssize_t i) { return LA(i); }

size_t ANTLRInputStream::index() { return p; }

size_t ANTLRInputStream::size() { return _data.size(); }

ssize_t ANTLRInputStream::mark() { return -1; }  // the whole input is held: nothing to mark

void ANTLRInputStream::release(ssize_t) {}

void ANTLRInputStream::seek(size_t index) {
  // Backwards anywhere; forwards as consume() would go, which stops at the end.
  p = index <= p ? index : std::min(index, _data.size());
}

std::string ANTLRInputStream::getText(const misc::Interval& interval) {
  if (interval.a < 0 || interval.b < 0) return "";
  const size_t start = static_cast<size_t>(interval.a);
  if (start >= _data.size()) return "";
  const size_t stop = std::min(static_cast<size_t>(interval.b), _data.size() - 1);
  if (stop < start) return "";
  return antlrcpp::utf32_to_utf8(_data.substr(start, stop - start + 1));
}

std::string ANTLRInputStream::getSourceName() const {
  return name.empty() ? IntStream::UNKNOWN_SOURCE_NAME : name;
}

std::string ANTLRInputStream::toString() const { return antlrcpp::utf32_to_utf8(_data); }

void ANTLRInputStream::InitializeInstanceFields() { p = 0; }

}  // namespace antlr4
