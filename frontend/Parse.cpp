#include "frontend/Parse.h"

#include <cerrno>
#include <cstdlib>
#include <optional>

#include "FnkLexer.h"
#include "FnkParser.h"
#include "antlr4-runtime.h"

namespace fnk {

namespace {

using P = FnkParser;

/// Byte offset of each code point, so ANTLR's code-point indices map back to
/// the byte offsets SourceRange uses.
struct OffsetMap {
  std::vector<uint32_t> byteOfCodePoint;
  uint32_t operator()(size_t cp) const {
    if (byteOfCodePoint.empty()) return static_cast<uint32_t>(cp);
    return cp < byteOfCodePoint.size() ? byteOfCodePoint[cp] : byteOfCodePoint.back();
  }
};

/// Returns the offset of the first invalid UTF-8 byte, or -1.
long firstInvalidUtf8(const std::string& s, OffsetMap& map) {
  bool ascii = true;
  for (unsigned char c : s)
    if (c >= 0x80 || c == 0) ascii = false;
  if (ascii) return -1;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || c == 0 || i + n > s.size()) return static_cast<long>(i);
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return static_cast<long>(i);
    if (n == 2 && c < 0xC2) return static_cast<long>(i);  // overlong
    map.byteOfCodePoint.push_back(static_cast<uint32_t>(i));
    i += n;
  }
  map.byteOfCodePoint.push_back(static_cast<uint32_t>(s.size()));
  return -1;
}

struct TooManyErrors {};

/// Turns ANTLR's messages into fnk's style: "unexpected ';'", "expected ')'
/// before ';'", with a missing token reported just after the token it should
/// follow. Expectation sets longer than a few tokens are dropped: they list
/// the grammar, not what the user meant.
class ErrorListener : public antlr4::BaseErrorListener {
public:
  ErrorListener(DiagEngine& d, int file, const OffsetMap& m, antlr4::CommonTokenStream& toks)
      : diags_(d), file_(file), map_(m), tokens_(toks) {}
  void syntaxError(antlr4::Recognizer*, antlr4::Token* tok, size_t, size_t, const std::string& msg,
                   std::exception_ptr) override {
    SourceRange r;
    r.begin = {file_, 0};
    bool isEof = tok && tok->getType() == antlr4::Token::EOF;
    if (tok) {
      size_t start = tok->getStartIndex(), stop = tok->getStopIndex();
      if (isEof) start = stop = tok->getStartIndex();
      r.begin.offset = map_(start);
      r.end = stop >= start && !isEof ? map_(stop + 1) : r.begin.offset + 1;
    }
    std::string text = clean(msg, tok);
    if (msg.rfind("missing ", 0) == 0 && tok) {
      // Point just past the previous token: that is where the missing one belongs.
      if (antlr4::Token* prev = previous(tok)) {
        r.begin.offset = map_(prev->getStopIndex() + 1);
        r.end = r.begin.offset + 1;
      }
    }
    antlr4::Token* open = isEof ? unclosedBrace() : nullptr;
    if (open) {
      std::string s = open->getText();
      text = std::string("expected '") + (s == "{" ? "}" : s == "(" ? ")" : "]") + "' at end of file";
    }
    Diagnostic& d = diags_.error(r, text);
    if (open)
      DiagEngine::note(d, {{file_, map_(open->getStartIndex())}, map_(open->getStartIndex()) + 1},
                       "to match this '" + open->getText() + "'");
    if (++count_ >= kMaxSyntaxErrors) throw TooManyErrors{};
  }
  unsigned count() const { return count_; }

private:
  static std::string quote(antlr4::Token* tok) {
    if (!tok || tok->getType() == antlr4::Token::EOF) return "end of file";
    return "'" + tok->getText() + "'";
  }
  /// "{'(', ')'}" or "';'" → "'(' or ')'"; empty when the set is too long to help.
  static std::string expectation(std::string set) {
    for (size_t p; (p = set.find("<EOF>")) != std::string::npos;) set.replace(p, 5, "end of file");
    if (set.empty() || set[0] != '{') return set;
    set = set.substr(1, set.size() - 2);
    std::vector<std::string> items;
    for (size_t b = 0, e; b < set.size(); b = e + 2) {
      e = set.find(", ", b);
      if (e == std::string::npos) e = set.size();
      items.push_back(set.substr(b, e - b));
    }
    if (items.size() > 4) return "";
    std::string out;
    for (size_t i = 0; i < items.size(); ++i)
      out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
    return out;
  }
  static std::string clean(const std::string& msg, antlr4::Token* tok) {
    if (tok && tok->getType() == FnkLexer::ERROR_CHAR) return "unexpected character '" + tok->getText() + "'";
    auto after = [&](const std::string& key) -> std::optional<std::string> {
      size_t p = msg.find(key);
      if (p == std::string::npos) return std::nullopt;
      return msg.substr(p + key.size());
    };
    if (msg.rfind("missing ", 0) == 0) {  // "missing ';' at 'store'"
      size_t at = msg.rfind(" at ");
      std::string what = expectation(msg.substr(8, at == std::string::npos ? std::string::npos : at - 8));
      return "expected " + what + " before " + quote(tok);
    }
    if (msg.rfind("mismatched input", 0) == 0 || msg.rfind("extraneous input", 0) == 0) {
      std::string want = expectation(after(" expecting ").value_or(""));
      if (tok && tok->getType() == antlr4::Token::EOF)
        return "unexpected end of file" + (want.empty() ? std::string() : "; expected " + want);
      return "unexpected " + quote(tok) + (want.empty() ? std::string() : "; expected " + want);
    }
    if (msg.rfind("no viable alternative", 0) == 0) return "unexpected " + quote(tok);
    std::string m = msg;
    for (size_t p; (p = m.find("<EOF>")) != std::string::npos;) m.replace(p, 5, "end of file");
    if (!m.empty()) m[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(m[0])));
    return m;
  }
  antlr4::Token* previous(antlr4::Token* tok) const {
    for (size_t i = tok->getTokenIndex(); i-- > 0;) {
      antlr4::Token* t = tokens_.get(i);
      if (t->getChannel() == antlr4::Token::DEFAULT_CHANNEL) return t;
    }
    return nullptr;
  }
  /// The innermost '{', '(' or '[' still open at the end of the file.
  antlr4::Token* unclosedBrace() const {
    std::vector<antlr4::Token*> open;
    for (antlr4::Token* t : tokens_.getTokens()) {
      std::string s = t->getText();
      if (s == "{" || s == "(" || s == "[") open.push_back(t);
      else if ((s == "}" || s == ")" || s == "]") && !open.empty()) open.pop_back();
    }
    return open.empty() ? nullptr : open.back();
  }
  DiagEngine& diags_;
  int file_;
  const OffsetMap& map_;
  antlr4::CommonTokenStream& tokens_;
  unsigned count_ = 0;
};

/// Converts the parse tree to the AST. Syntax is already valid here; only
/// literal range checks can still fail.
class AstBuilder {
public:
  AstBuilder(DiagEngine& d, int file, const OffsetMap& m) : diags_(d), file_(file), map_(m) {}

  SourceRange range(antlr4::ParserRuleContext* c) const {
    return rangeOf(c->getStart(), c->getStop() ? c->getStop() : c->getStart());
  }
  SourceRange range(antlr4::tree::TerminalNode* t) const { return rangeOf(t->getSymbol(), t->getSymbol()); }
  SourceRange rangeOf(antlr4::Token* a, antlr4::Token* b) const {
    SourceRange r;
    r.begin = {file_, map_(a->getStartIndex())};
    size_t stop = b->getStopIndex();
    r.end = stop == static_cast<size_t>(-1) || stop + 1 < a->getStartIndex() ? r.begin.offset : map_(stop + 1);
    return r;
  }

  std::unique_ptr<ast::Module> module(P::FileContext* f) {
    auto m = std::make_unique<ast::Module>();
    m->fileId = file_;
    m->range = range(f);
    if (auto* md = f->moduleDecl()) m->name = md->qualName()->getText();
    for (auto* imp : f->importDecl()) {
      ast::Import i;
      i.range = range(imp);
      i.module = imp->qualName()->getText();
      m->imports.push_back(std::move(i));
    }
    for (auto* top : f->topDecl()) {
      if (auto* k = top->kernelDecl()) m->decls.push_back(func(k, k->IDENT(), k->genericParams(), k->paramList(), k->block(), true));
      else if (auto* fn = top->fnDecl()) {
        auto d = func(fn, fn->IDENT(), fn->genericParams(), fn->paramList(), fn->block(), false);
        if (fn->typeExpr()) d->returnType = type(fn->typeExpr());
        m->decls.push_back(std::move(d));
      }
    }
    // Launch clauses are read here, after func() made the decl.
    size_t i = 0;
    for (auto* top : f->topDecl()) {
      if (auto* k = top->kernelDecl(); k && k->launchClause())
        for (auto* na : k->launchClause()->namedArg()) m->decls[i]->launch.push_back(namedArg(na));
      ++i;
    }
    return m;
  }

private:
  std::unique_ptr<ast::FuncDecl> func(antlr4::ParserRuleContext* ctx, antlr4::tree::TerminalNode* name,
                                      P::GenericParamsContext* gp, P::ParamListContext* pl,
                                      P::BlockContext* body, bool isKernel) {
    auto d = std::make_unique<ast::FuncDecl>();
    d->range = range(ctx);
    d->isKernel = isKernel;
    d->name = name->getText();
    d->nameRange = range(name);
    if (gp)
      for (auto* g : gp->genericParam()) {
        ast::GenericParam p;
        p.range = range(g);
        p.name = g->IDENT(0)->getText();
        p.kind = g->IDENT(1)->getText();
        p.kindRange = range(g->IDENT(1));
        if (auto* cv = g->constValue()) {
          p.hasDefault = true;
          p.defaultText = cv->getText();
          p.defaultRange = range(cv);
        }
        d->generics.push_back(std::move(p));
      }
    if (pl)
      for (auto* pc : pl->param()) {
        ast::Param p;
        p.range = range(pc);
        p.name = pc->IDENT()->getText();
        p.isOut = pc->OUT() != nullptr;
        if (pc->typeExpr()) p.type = std::move(*type(pc->typeExpr()));
        else p.type.kind = ast::TypeExpr::Kind::Named, p.type.range = p.range;  // untyped helper param
        d->params.push_back(std::move(p));
      }
    d->body = block(body);
    return d;
  }

  ast::NamedArg namedArg(P::NamedArgContext* na) {
    ast::NamedArg a;
    a.range = range(na);
    a.name = na->IDENT()->getText();
    a.value = expr(na->expr());
    return a;
  }

  std::unique_ptr<ast::TypeExpr> type(P::TypeExprContext* t) {
    auto r = std::make_unique<ast::TypeExpr>();
    r->range = range(t);
    if (auto* tt = dynamic_cast<P::TensorTypeContext*>(t)) {
      r->kind = ast::TypeExpr::Kind::Tensor;
      r->dtype = tt->IDENT()->getText();
      r->dtypeRange = range(tt->IDENT());
      for (auto* dim : tt->dimList()->dim()) {
        r->dims.push_back(dim->getText());
        r->dimRanges.push_back(range(dim));
      }
    } else if (auto* ti = dynamic_cast<P::TileTypeContext*>(t)) {
      r->kind = ast::TypeExpr::Kind::Tile;
      r->dtype = ti->IDENT()->getText();
      r->dtypeRange = range(ti->IDENT());
      for (auto* e : ti->exprList()->expr()) r->tileDims.push_back(expr(e));
    } else if (auto* nt = dynamic_cast<P::NamedTypeContext*>(t)) {
      r->dtype = nt->IDENT()->getText();
      r->dtypeRange = range(nt->IDENT());
    }
    return r;
  }

  std::unique_ptr<ast::BlockStmt> block(P::BlockContext* b) {
    auto r = std::make_unique<ast::BlockStmt>();
    r->range = range(b);
    for (auto* s : b->stmt()) r->stmts.push_back(stmt(s));
    return r;
  }

  std::unique_ptr<ast::Stmt> letLike(ast::Stmt::Kind k, antlr4::ParserRuleContext* c, antlr4::tree::TerminalNode* id,
                                     P::TypeExprContext* t, P::ExprContext* init) {
    auto s = std::make_unique<ast::LetStmt>(k);
    s->range = range(c);
    s->name = id->getText();
    s->nameRange = range(id);
    if (t) s->type = type(t);
    s->init = expr(init);
    return s;
  }

  ast::StmtPtr ifStmt(P::IfStatementContext* c) {
    auto s = std::make_unique<ast::IfStmt>();
    s->range = range(c);
    s->cond = expr(c->expr());
    s->thenBody = block(c->block(0));
    if (c->ifStatement()) s->elseBody = ifStmt(c->ifStatement());
    else if (c->block().size() > 1) s->elseBody = block(c->block(1));
    return s;
  }

  ast::StmtPtr stmt(P::StmtContext* c) {
    if (auto* s = dynamic_cast<P::LetStmtContext*>(c))
      return letLike(ast::Stmt::Kind::Let, s, s->IDENT(), s->typeExpr(), s->expr());
    if (auto* s = dynamic_cast<P::VarStmtContext*>(c))
      return letLike(ast::Stmt::Kind::Var, s, s->IDENT(), s->typeExpr(), s->expr());
    if (auto* s = dynamic_cast<P::AssignStmtContext*>(c)) {
      auto a = std::make_unique<ast::AssignStmt>();
      a->range = range(s);
      a->name = s->IDENT()->getText();
      a->nameRange = range(s->IDENT());
      a->op = s->op->getText();
      a->value = expr(s->expr());
      return a;
    }
    if (auto* s = dynamic_cast<P::ForStmtContext*>(c)) {
      auto f = std::make_unique<ast::ForStmt>();
      f->range = range(s);
      f->var = s->IDENT()->getText();
      f->varRange = range(s->IDENT());
      f->rangeArgs = args(s->argList());
      f->body = block(s->block());
      return f;
    }
    if (auto* s = dynamic_cast<P::IfStmtContext*>(c)) return ifStmt(s->ifStatement());
    if (auto* s = dynamic_cast<P::ReturnStmtContext*>(c)) {
      auto r = std::make_unique<ast::ReturnStmt>();
      r->range = range(s);
      if (s->expr()) r->value = expr(s->expr());
      return r;
    }
    if (auto* s = dynamic_cast<P::BlockStmtContext*>(c)) return block(s->block());
    auto* s = static_cast<P::ExprStmtContext*>(c);
    auto e = std::make_unique<ast::ExprStmt>();
    e->range = range(s);
    e->expr = expr(s->expr());
    return e;
  }

  std::vector<ast::Arg> args(P::ArgListContext* al) {
    std::vector<ast::Arg> r;
    if (!al) return r;
    for (auto* a : al->arg()) {
      ast::Arg x;
      if (a->IDENT()) {
        x.name = a->IDENT()->getText();
        x.nameRange = range(a->IDENT());
      }
      x.value = expr(a->expr());
      r.push_back(std::move(x));
    }
    return r;
  }

  template <typename T>
  std::unique_ptr<T> node(antlr4::ParserRuleContext* c) {
    auto n = std::make_unique<T>();
    n->range = range(c);
    return n;
  }

  ast::ExprPtr expr(P::ExprContext* c) {
    if (auto* e = dynamic_cast<P::IntLitContext*>(c)) {
      auto n = node<ast::IntLit>(e);
      std::string t = e->getText();
      errno = 0;
      char* end = nullptr;
      unsigned long long v = t.rfind("0x", 0) == 0 ? std::strtoull(t.c_str() + 2, &end, 16) : std::strtoull(t.c_str(), &end, 10);
      if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
        diags_.error(n->range, "integer literal " + t + " does not fit in 64 bits");
      n->value = static_cast<int64_t>(v);
      return n;
    }
    if (auto* e = dynamic_cast<P::FloatLitContext*>(c)) {
      auto n = node<ast::FloatLit>(e);
      n->value = std::strtod(e->getText().c_str(), nullptr);  // overflow gives inf, as in C
      return n;
    }
    if (auto* e = dynamic_cast<P::BoolLitContext*>(c)) {
      auto n = node<ast::BoolLit>(e);
      n->value = e->getText() == "true";
      return n;
    }
    if (auto* e = dynamic_cast<P::NameExprContext*>(c)) {
      auto n = node<ast::NameExpr>(e);
      n->name = e->getText();
      return n;
    }
    if (auto* e = dynamic_cast<P::ParenExprContext*>(c)) return expr(e->expr());
    if (auto* e = dynamic_cast<P::UnaryExprContext*>(c)) {
      auto n = node<ast::UnaryExpr>(e);
      n->op = e->op->getText();
      n->operand = expr(e->expr());
      return n;
    }
    if (auto* e = dynamic_cast<P::BinaryExprContext*>(c)) {
      auto n = node<ast::BinaryExpr>(e);
      n->op = e->op->getText();
      n->opRange = rangeOf(e->op, e->op);
      n->lhs = expr(e->expr(0));
      n->rhs = expr(e->expr(1));
      return n;
    }
    if (auto* e = dynamic_cast<P::CallExprContext*>(c)) {
      auto n = node<ast::CallExpr>(e);
      n->callee = expr(e->expr());
      n->args = args(e->argList());
      return n;
    }
    if (auto* e = dynamic_cast<P::MethodExprContext*>(c)) {
      auto n = node<ast::MethodExpr>(e);
      n->base = expr(e->expr());
      n->name = e->IDENT()->getText();
      n->nameRange = range(e->IDENT());
      n->args = args(e->argList());
      return n;
    }
    if (auto* e = dynamic_cast<P::MemberExprContext*>(c)) {
      auto n = node<ast::MemberExpr>(e);
      n->base = expr(e->expr());
      n->name = e->IDENT()->getText();
      return n;
    }
    if (auto* e = dynamic_cast<P::IndexExprContext*>(c)) {
      auto n = node<ast::IndexExpr>(e);
      n->base = expr(e->expr());
      for (auto* ia : e->indexArg()) {
        ast::IndexArg a;
        a.range = range(ia);
        if (ia->expr()) a.value = expr(ia->expr());
        else a.kind = ia->NONE() ? ast::IndexArg::Kind::NewAxis : ast::IndexArg::Kind::Slice;
        n->indices.push_back(std::move(a));
      }
      return n;
    }
    if (auto* e = dynamic_cast<P::TupleExprContext*>(c)) {
      auto n = node<ast::TupleExpr>(e);
      n->elements.push_back(expr(e->expr()));
      for (auto* x : e->exprList()->expr()) n->elements.push_back(expr(x));
      return n;
    }
    auto* e = static_cast<P::SharedExprContext*>(c);
    auto n = node<ast::SharedExpr>(e);
    n->dtype = e->IDENT()->getText();
    n->dtypeRange = range(e->IDENT());
    for (auto* x : e->exprList()->expr()) n->dims.push_back(expr(x));
    return n;
  }

  DiagEngine& diags_;
  int file_;
  const OffsetMap& map_;
};

/// Rejects nesting the recursive-descent parser and the tree walkers could
/// not survive, before ANTLR sees it. Counts brackets and runs of prefix
/// operators, which nest as deeply as brackets do. Also reports an unclosed
/// block comment, which the grammar alone would show as a stray '/'.
bool checkNesting(antlr4::CommonTokenStream& tokens, DiagEngine& diags, int file, const OffsetMap& map) {
  int depth = 0, prefixRun = 0, stmtTokens = 0;
  const auto& all = tokens.getTokens();
  for (size_t ti = 0; ti < all.size(); ++ti) {
    antlr4::Token* t = all[ti];
    std::string s = t->getText();
    // BLOCK_COMMENT only matches a closed comment, so an unclosed one lexes as '/' '*'.
    if (s == "/" && ti + 1 < all.size() && all[ti + 1]->getText() == "*" &&
        all[ti + 1]->getStartIndex() == t->getStopIndex() + 1) {
      SourceRange r{{file, map(t->getStartIndex())}, map(t->getStartIndex()) + 2};
      diags.error(r, "unterminated block comment; it needs a closing '*/'");
      return false;
    }
    // Long operator chains nest in the tree as deeply as brackets do.
    stmtTokens = (s == ";" || s == "{" || s == "}") ? 0 : stmtTokens + 1;
    if (stmtTokens > kMaxStatementTokens) {
      SourceRange r{{file, map(t->getStartIndex())}, map(t->getStartIndex()) + 1};
      diags.error(r, "statement longer than " + std::to_string(kMaxStatementTokens) + " tokens");
      return false;
    }
    bool open = s == "(" || s == "[" || s == "{", close = s == ")" || s == "]" || s == "}";
    bool prefix = s == "-" || s == "!" || s == "~";
    prefixRun = prefix ? prefixRun + 1 : 0;
    depth += open ? 1 : close ? -1 : 0;
    if (depth > kMaxNesting || prefixRun > kMaxNesting) {
      SourceRange r{{file, map(t->getStartIndex())}, map(t->getStartIndex()) + 1};
      diags.error(r, "nesting deeper than " + std::to_string(kMaxNesting) + " levels");
      return false;
    }
  }
  return true;
}

}  // namespace

std::unique_ptr<ast::Module> parseSource(const SourceManager& sm, int fileId, DiagEngine& diags) {
  const std::string& text = sm.text(fileId);
  SourceRange fileStart{{fileId, 0}, 1};
  if (text.size() > kMaxSourceBytes) {
    diags.error(fileStart, "source file is " + std::to_string(text.size()) + " bytes; the limit is " +
                               std::to_string(kMaxSourceBytes));
    return nullptr;
  }
  OffsetMap map;
  if (long bad = firstInvalidUtf8(text, map); bad >= 0) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned char>(text[bad]));
    diags.error({{fileId, static_cast<uint32_t>(bad)}, static_cast<uint32_t>(bad) + 1},
                std::string("invalid UTF-8 byte ") + buf + " (fnk source must be UTF-8 without NUL bytes)");
    return nullptr;
  }
  try {
    antlr4::ANTLRInputStream input(text);
    FnkLexer lexer(&input);
    lexer.removeErrorListeners();  // ERROR_CHAR tokens carry lexing errors to the parser
    antlr4::CommonTokenStream tokens(&lexer);
    tokens.fill();
    if (!checkNesting(tokens, diags, fileId, map)) return nullptr;
    FnkParser parser(&tokens);
    // Two-stage parse: SLL prediction with bail-out is several times faster and
    // decides almost every file; only a file it rejects is parsed again with
    // full LL and the reporting listener, so errors are the same either way.
    parser.removeErrorListeners();
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::SLL);
    parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
    FnkParser::FileContext* tree = nullptr;
    try {
      tree = parser.file();
    } catch (const antlr4::ParseCancellationException&) {
      tree = nullptr;
    }
    ErrorListener listener(diags, fileId, map, tokens);
    if (!tree) {
      tokens.seek(0);
      parser.reset();
      parser.setErrorHandler(std::make_shared<antlr4::DefaultErrorStrategy>());
      parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::LL);
      parser.addErrorListener(&listener);
      tree = parser.file();
    }
    if (listener.count() > 0) return nullptr;
    unsigned before = diags.errorCount();
    auto m = AstBuilder(diags, fileId, map).module(tree);
    return diags.errorCount() == before ? std::move(m) : nullptr;
  } catch (const TooManyErrors&) {
    return nullptr;
  } catch (const std::exception& e) {
    diags.error(fileStart, std::string("internal parser failure: ") + e.what());
    return nullptr;
  }
}

}  // namespace fnk
