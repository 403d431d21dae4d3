#include "ir/Parser.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "ir/IRLexer.h"

namespace fnk::ir {

namespace {

using irtext::Lexer;
using irtext::Tok;
using irtext::Token;

class Parser {
public:
  Parser(const SourceManager& sm, int file, DiagEngine& diags)
      : file_(file), diags_(diags), lex_(sm.text(file)) {
    advance();
  }

  std::unique_ptr<Module> parseModule() {
    auto m = std::make_unique<Module>();
    if (!isIdent("module")) return fail("expected 'module' at start of IR");
    advance();
    if (tok_.kind != Tok::SymbolName) return fail("expected module name after 'module'");
    m->name = std::string(tok_.text.substr(1));
    advance();
    while (tok_.kind != Tok::Eof) {
      if (!isIdent("kernel")) return fail("expected 'kernel' or end of input");
      auto f = parseKernel();
      if (!f) return nullptr;
      if (m->lookup(f->name)) {
        diags_.error(f->loc, "kernel '@" + f->name + "' redefined");
        return nullptr;
      }
      m->functions.push_back(std::move(f));
    }
    return m;
  }

private:
  using Scope = std::unordered_map<std::string, Value*>;

  // --- tokens ----------------------------------------------------------
  void advance() {
    prevEnd_ = tok_.end;
    tok_ = lex_.next();
  }
  Token peek(int n = 1) const {
    Lexer copy = lex_;
    Token t = tok_;
    for (int i = 0; i < n && t.kind != Tok::Eof && t.kind != Tok::Error; ++i) t = copy.next();
    return t;
  }
  bool isPunct(char c) const { return isPunct(tok_, c); }
  static bool isPunct(const Token& t, char c) { return t.kind == Tok::Punct && t.text[0] == c; }
  bool isIdent(std::string_view s) const { return tok_.kind == Tok::Ident && tok_.text == s; }
  /// True when the current token continues the line of the op being parsed.
  bool onSameLine() const { return !tok_.lineStart && tok_.kind != Tok::Eof; }
  SourceRange range(const Token& t) const { return SourceRange{SourceLoc{file_, t.begin}, t.end}; }

  /// Reports `msg` at the current token (or the lexer's message at a bad
  /// token) and returns a null value of whatever the caller returns.
  struct Failure {
    template <class T>
    operator std::unique_ptr<T>() const { return nullptr; }
    operator bool() const { return false; }
  };
  Failure fail(const std::string& msg) { return failAt(tok_, msg); }
  Failure failAt(const Token& t, const std::string& msg) {
    diags_.error(range(t), t.kind == Tok::Error ? lex_.errorMessage() : msg);
    return {};
  }
  bool expectPunct(char c, const std::string& msg) {
    if (!isPunct(c)) return fail(msg);
    advance();
    return true;
  }

  // --- numbers and attributes -------------------------------------------
  bool parseInt(int64_t& out) {
    if (tok_.kind != Tok::Number || tok_.isFloat) return fail("expected integer");
    auto [p, ec] = std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), out);
    if (ec != std::errc() || p != tok_.text.data() + tok_.text.size())
      return fail("integer literal '" + std::string(tok_.text) + "' is out of range");
    advance();
    return true;
  }

  bool parseAttrValue(Attr& out) {
    if (tok_.kind == Tok::Number && tok_.isFloat) {
      std::string s(tok_.text);
      double v = std::strtod(s.c_str(), nullptr);
      // Underflow to a subnormal or zero is fine; only overflow loses the value.
      if (std::isinf(v)) return fail("float literal '" + s + "' is out of range");
      out = v;
      advance();
      return true;
    }
    if (tok_.kind == Tok::Number) {
      int64_t v;
      if (!parseInt(v)) return false;
      out = v;
      return true;
    }
    if (isPunct('-')) {
      advance();
      if (!isIdent("inf")) return fail("expected number after '-'");
      out = -HUGE_VAL;
      advance();
      return true;
    }
    if (tok_.kind == Tok::String) {
      out = std::string(tok_.text.substr(1, tok_.text.size() - 2));
      advance();
      return true;
    }
    if (isPunct('[')) {
      advance();
      std::vector<int64_t> list;
      if (!isPunct(']')) {
        for (;;) {
          int64_t v;
          if (tok_.kind != Tok::Number || tok_.isFloat) return fail("expected integer in list");
          if (!parseInt(v)) return false;
          list.push_back(v);
          if (!isPunct(',')) break;
          advance();
        }
      }
      if (!expectPunct(']', "expected ']' to close list")) return false;
      out = std::move(list);
      return true;
    }
    if (tok_.kind == Tok::Ident) {
      std::string_view w = tok_.text;
      if (w == "true" || w == "false") out = w == "true";
      else if (w == "inf") out = HUGE_VAL;
      else if (w == "nan") out = std::nan("");
      else if (auto d = parseDType(w)) out = *d;
      else return fail("unknown attribute value '" + std::string(w) + "'");
      advance();
      return true;
    }
    return fail("expected attribute value");
  }

  bool parseAttrDict(AttrDict& d) {
    advance();  // '{'
    if (isPunct('}')) {
      advance();
      return true;
    }
    for (;;) {
      if (tok_.kind != Tok::Ident) return fail("expected attribute name");
      std::string key(tok_.text);
      if (d.get(key)) return fail("attribute '" + key + "' given twice");
      advance();
      if (!expectPunct('=', "expected '=' after attribute name")) return false;
      Attr v;
      if (!parseAttrValue(v)) return false;
      d.set(key, std::move(v));
      if (!isPunct(',')) break;
      advance();
    }
    return expectPunct('}', "expected ',' or '}' in attribute list");
  }

  // --- types ------------------------------------------------------------
  bool parseType(Type& t) {
    bool out = false;
    if (isIdent("out")) {
      out = true;
      advance();
      if (!isIdent("tensor")) return fail("expected 'tensor' after 'out'");
    }
    if (tok_.kind != Tok::Ident) return fail("expected type");
    std::string_view head = tok_.text;
    if (head != "tile" && head != "tensor" && head != "shared") {
      auto d = parseDType(head);
      if (!d) return fail("unknown type '" + std::string(head) + "'");
      t = Type::scalar(*d);
      advance();
      return true;
    }
    advance();
    if (!expectPunct('<', "expected '<' after '" + std::string(head) + "'")) return false;
    if (tok_.kind != Tok::Ident) return fail("expected element type");
    auto d = parseDType(tok_.text);
    if (!d) return fail("unknown element type '" + std::string(tok_.text) + "'");
    advance();
    if (!expectPunct('>', "expected '>' after element type")) return false;
    if (!expectPunct('[', "expected '[' before shape")) return false;
    std::vector<int64_t> shape;
    std::vector<std::string> dims;
    if (!isPunct(']')) {
      for (;;) {
        if (head == "tensor" && tok_.kind == Tok::Ident) {
          dims.emplace_back(tok_.text);
          advance();
        } else {
          if (tok_.kind != Tok::Number || tok_.isFloat) return fail("expected dimension");
          Token dimTok = tok_;
          int64_t v;
          if (!parseInt(v)) return false;
          if (v < 0) return failAt(dimTok, "dimension must not be negative");
          shape.push_back(v);
          dims.emplace_back(dimTok.text);
        }
        if (!isPunct(',')) break;
        advance();
      }
    }
    if (!expectPunct(']', "expected ',' or ']' in shape")) return false;
    if (head == "tensor") t = Type::tensor(*d, std::move(dims), out);
    else if (head == "tile") t = Type::tile(*d, std::move(shape));
    else t = Type::shared(*d, std::move(shape));
    return true;
  }

  // --- values -----------------------------------------------------------
  Value* lookup(std::string_view name) const {
    std::string key(name);
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(key);
      if (f != it->end()) return f->second;
    }
    return nullptr;
  }
  bool define(const Token& name, Value* v) {
    if (lookup(name.text)) return failAt(name, "value '" + std::string(name.text) + "' redefined");
    scopes_.back().emplace(std::string(name.text), v);
    return true;
  }

  // --- kernels ----------------------------------------------------------
  std::unique_ptr<Function> parseKernel() {
    Token start = tok_;
    advance();  // 'kernel'
    if (tok_.kind != Tok::SymbolName || tok_.text.size() < 2) return fail("expected kernel name after 'kernel'");
    auto f = std::make_unique<Function>();
    f->name = std::string(tok_.text.substr(1));
    advance();
    if (isPunct('<')) {
      advance();
      for (;;) {
        if (tok_.kind != Tok::Ident) return fail("expected constant name");
        std::string name(tok_.text);
        for (const auto& c : f->consts)
          if (c.first == name) return fail("constant '" + name + "' given twice");
        advance();
        if (!expectPunct('=', "expected '=' after constant name")) return nullptr;
        Attr v;
        if (!parseAttrValue(v)) return nullptr;
        f->consts.emplace_back(std::move(name), std::move(v));
        if (!isPunct(',')) break;
        advance();
      }
      if (!expectPunct('>', "expected ',' or '>' after constant")) return nullptr;
    }
    if (!expectPunct('(', "expected '(' before parameter list")) return nullptr;
    if (!isPunct(')')) {
      for (;;) {
        if (tok_.kind != Tok::ValueName) return fail("expected parameter name");
        std::string name(tok_.text.substr(1));
        if (f->paramIndex(name) >= 0) return fail("parameter '" + std::string(tok_.text) + "' redefined");
        advance();
        if (!expectPunct(':', "expected ':' after parameter name")) return nullptr;
        Type t;
        if (!parseType(t)) return nullptr;
        f->params.push_back(Param{std::move(name), std::move(t)});
        if (!isPunct(',')) break;
        advance();
      }
    }
    if (!expectPunct(')', "expected ',' or ')' in parameter list")) return nullptr;
    f->loc = SourceRange{SourceLoc{file_, start.begin}, prevEnd_};
    if (isPunct('{') && onSameLine() && !parseAttrDict(f->attrs)) return nullptr;
    if (!parseFunctionRegion("launch", f->launch, *f) || !parseFunctionRegion("body", f->body, *f)) return nullptr;
    return f;
  }

  /// `launch { ... }` or `body { ... }`: one block whose arguments are the
  /// kernel's parameters.
  bool parseFunctionRegion(const char* label, Region& r, const Function& f) {
    if (!isIdent(label)) return fail(std::string("expected '") + label + "' region");
    advance();
    if (!expectPunct('{', std::string("expected '{' after '") + label + "'")) return false;
    Block& b = r.addBlock();
    scopes_.assign(1, Scope{});
    for (const Param& p : f.params) scopes_.back().emplace("%" + p.name, b.addArgument(p.type, p.name));
    return parseOps(b);
  }

  /// Ops up to and including the closing '}' of the enclosing region.
  bool parseOps(Block& b) {
    while (!isPunct('}')) {
      if (tok_.kind == Tok::Eof) return fail("expected '}' to close region");
      if (!tok_.lineStart) return fail("expected newline before operation");
      if (!parseOp(b)) return false;
    }
    advance();
    return true;
  }

  bool parseRegion(Region& r) {
    if (++depth_ > kMaxRegionDepth)
      return fail("regions nested deeper than " + std::to_string(kMaxRegionDepth) + " levels");
    advance();  // '{'
    Block& b = r.addBlock();
    scopes_.emplace_back();
    if (tok_.kind == Tok::Label) {
      advance();
      if (!expectPunct('(', "expected '(' after block label")) return false;
      if (!isPunct(')')) {
        for (;;) {
          if (tok_.kind != Tok::ValueName) return fail("expected block argument name");
          Token name = tok_;
          advance();
          if (!expectPunct(':', "expected ':' after block argument name")) return false;
          Type t;
          if (!parseType(t)) return false;
          if (!define(name, b.addArgument(std::move(t)))) return false;
          if (!isPunct(',')) break;
          advance();
        }
      }
      if (!expectPunct(')', "expected ',' or ')' in block argument list")) return false;
      if (!expectPunct(':', "expected ':' after block arguments")) return false;
    }
    if (!parseOps(b)) return false;
    scopes_.pop_back();
    --depth_;
    return true;
  }

  //   op := [results '='] mnemonic [operands] ['{' attrs '}'] [':' types] regions
  bool parseOp(Block& b) {
    Token start = tok_;
    std::vector<Token> results;
    if (tok_.kind == Tok::ValueName) {
      for (;;) {
        results.push_back(tok_);
        advance();
        if (!isPunct(',')) break;
        advance();
        if (tok_.kind != Tok::ValueName) return fail("expected result name after ','");
      }
      if (!expectPunct('=', "expected '=' after result list")) return false;
    }
    if (tok_.kind != Tok::Ident) return fail("expected operation name");
    OpKind kind;
    if (!lookupOpKind(tok_.text, kind)) return fail("unknown op '" + std::string(tok_.text) + "'");
    advance();
    std::vector<Value*> operands;
    AttrDict attrs;
    if (tok_.kind == Tok::ValueName && onSameLine()) {
      for (;;) {
        if (tok_.kind != Tok::ValueName) return fail("expected operand after ','");
        Value* v = lookup(tok_.text);
        if (!v) return fail("use of undefined value '" + std::string(tok_.text) + "'");
        operands.push_back(v);
        advance();
        if (!isPunct(',')) break;
        advance();
      }
    }
    if (isPunct('{') && onSameLine() && peek(1).kind == Tok::Ident && isPunct(peek(2), '=')) {
      if (!parseAttrDict(attrs)) return false;
    }
    std::vector<Type> types;
    if (isPunct(':') && onSameLine()) {
      Token colon = tok_;
      if (results.empty()) return fail("operation without results takes no type list");
      advance();
      for (;;) {
        Type t;
        if (!parseType(t)) return false;
        types.push_back(std::move(t));
        if (!isPunct(',')) break;
        advance();
      }
      if (types.size() != results.size())
        return failAt(colon, "operation has " + std::to_string(results.size()) + " results but " +
                                 std::to_string(types.size()) + " types");
    } else if (!results.empty()) {
      return fail("expected ':' after operand list");
    }
    // The op's location covers its own line, not its regions.
    auto op = std::make_unique<Operation>(kind, SourceRange{SourceLoc{file_, start.begin}, prevEnd_});
    for (Value* v : operands) op->addOperand(v);
    for (Type& t : types) op->addResult(std::move(t));
    op->attrs() = std::move(attrs);
    Operation* raw = b.append(std::move(op));
    while (isPunct('{') && onSameLine())
      if (!parseRegion(raw->addRegion())) return false;
    if (onSameLine() && !isPunct('}')) return fail("expected newline after operation");
    // Results become visible after the regions: an op's own regions cannot use them.
    for (unsigned i = 0; i < results.size(); ++i)
      if (!define(results[i], raw->result(i))) return false;
    return true;
  }

  int file_;
  DiagEngine& diags_;
  Lexer lex_;
  Token tok_;
  uint32_t prevEnd_ = 0;
  int depth_ = 0;
  std::vector<Scope> scopes_;
};

}  // namespace

std::unique_ptr<Module> parseIR(const SourceManager& sm, int fileId, DiagEngine& diags) {
  Parser p(sm, fileId, diags);
  return p.parseModule();
}

}  // namespace fnk::ir
