#include "ir/IRLexer.h"

#include <cstdio>

namespace fnk::ir::irtext {

namespace {

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameChar(char c) { return isIdentStart(c) || isDigit(c); }

}  // namespace

Token Lexer::next() {
  bool sawNewline = pos_ == 0;
  skipSpace(sawNewline);
  Token t;
  t.begin = static_cast<uint32_t>(pos_);
  t.lineStart = sawNewline;
  if (pos_ >= s_.size()) {
    t.end = t.begin;
    return t;
  }
  char c = s_[pos_];
  if (isIdentStart(c)) {
    t.kind = Tok::Ident;
    while (pos_ < s_.size() && (isNameChar(s_[pos_]) || s_[pos_] == '.')) ++pos_;
  } else if (c == '%' || c == '^' || c == '@') {
    ++pos_;
    size_t start = pos_;
    // Symbols may be dotted (module names such as @a.b); values and labels not.
    while (pos_ < s_.size() && (isNameChar(s_[pos_]) || (c == '@' && s_[pos_] == '.'))) ++pos_;
    t.kind = c == '%' ? Tok::ValueName : c == '^' ? Tok::Label : Tok::SymbolName;
    if (pos_ == start && c != '@') return error(t, std::string("expected a name after '") + c + "'");
  } else if (isDigit(c) || (c == '-' && pos_ + 1 < s_.size() && isDigit(s_[pos_ + 1]))) {
    lexNumber(t);
  } else if (c == '"') {
    ++pos_;
    while (pos_ < s_.size() && s_[pos_] != '"' && s_[pos_] != '\n') ++pos_;
    if (pos_ >= s_.size() || s_[pos_] != '"') return error(t, "unterminated string");
    ++pos_;
    t.kind = Tok::String;
  } else if (std::string_view("=,:(){}<>[]-").find(c) != std::string_view::npos) {
    ++pos_;
    t.kind = Tok::Punct;
  } else {
    ++pos_;
    char buf[48];
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) std::snprintf(buf, sizeof buf, "unexpected character '%c'", c);
    else std::snprintf(buf, sizeof buf, "unexpected byte 0x%02x", u);
    return error(t, buf);
  }
  t.end = static_cast<uint32_t>(pos_);
  t.text = s_.substr(t.begin, t.end - t.begin);
  return t;
}

void Lexer::skipSpace(bool& sawNewline) {
  while (pos_ < s_.size()) {
    char c = s_[pos_];
    if (c == '\n') {
      sawNewline = true;
      ++pos_;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '/') {
      while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
    } else {
      return;
    }
  }
}

void Lexer::lexNumber(Token& t) {
  t.kind = Tok::Number;
  if (s_[pos_] == '-') ++pos_;
  auto digits = [&] {
    while (pos_ < s_.size() && isDigit(s_[pos_])) ++pos_;
  };
  digits();
  if (pos_ < s_.size() && s_[pos_] == '.') {
    t.isFloat = true;
    ++pos_;
    digits();
  }
  if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
    size_t p = pos_ + 1;
    if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
    if (p < s_.size() && isDigit(s_[p])) {
      t.isFloat = true;
      pos_ = p;
      digits();
    }
  }
}

Token Lexer::error(Token t, std::string msg) {
  t.kind = Tok::Error;
  t.end = static_cast<uint32_t>(pos_ > t.begin ? pos_ : t.begin + 1);
  if (t.end > s_.size()) t.end = static_cast<uint32_t>(s_.size());
  t.text = s_.substr(t.begin, t.end - t.begin);
  error_ = std::move(msg);
  return t;
}

}  // namespace fnk::ir::irtext
