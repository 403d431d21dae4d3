// The tokens of fnk IR text, for ir/Parser.cpp. Kept apart so the parser file
// holds only the grammar. A Lexer is a plain value: the parser peeks ahead by
// lexing from a copy.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace fnk::ir::irtext {

enum class Tok { Eof, Error, Ident, ValueName, SymbolName, Label, Number, String, Punct };

struct Token {
  Tok kind = Tok::Eof;
  std::string_view text;  // the whole token, sigils and quotes included
  uint32_t begin = 0, end = 0;
  bool lineStart = false;  // a newline separates it from the previous token
  bool isFloat = false;    // Number with '.' or an exponent
};

/// Splits IR text into tokens on demand. Skips blanks and `//` comments. A
/// byte that starts no token gives a Tok::Error token; errorMessage() says why.
class Lexer {
public:
  explicit Lexer(std::string_view text) : s_(text) {}
  Token next();
  const std::string& errorMessage() const { return error_; }

private:
  void skipSpace(bool& sawNewline);
  void lexNumber(Token& t);
  Token error(Token t, std::string msg);

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace fnk::ir::irtext
