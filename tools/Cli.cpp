#include "tools/Cli.h"

#include "ir/Parser.h"
#include "ir/Verifier.h"

namespace fnk::cli {

bool isIRFile(const std::string& path) {
  return path.size() >= 6 && path.compare(path.size() - 6, 6, ".fnkir") == 0;
}

std::unique_ptr<ir::Module> loadModule(const std::string& path, const LoadOptions& opts, SourceManager& sm,
                                       DiagEngine& diags, std::unique_ptr<Program>* programOut) {
  std::unique_ptr<ir::Module> m;
  if (isIRFile(path)) {
    std::string err;
    int id = sm.addFile(path, err);
    if (id < 0) {
      diags.error({}, err);
      return nullptr;
    }
    m = ir::parseIR(sm, id, diags);
    if (m && !opts.kernel.empty()) {
      if (!m->lookup(opts.kernel)) {
        diags.error({}, "no kernel named '" + opts.kernel + "' in " + path);
        return nullptr;
      }
      std::erase_if(m->functions, [&](const auto& f) { return f->name != opts.kernel; });
    }
  } else {
    auto program = std::make_unique<Program>(sm, diags, opts.frontend);
    if (!program->loadFile(path)) return nullptr;
    m = elaborateModule(*program, opts.consts, diags, opts.kernel);
    if (programOut) *programOut = std::move(program);
  }
  if (!m) return nullptr;
  if (!ir::verify(*m, diags)) return nullptr;
  return m;
}

bool splitAssignment(const std::string& s, std::string& name, std::string& value) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  name = s.substr(0, eq);
  value = s.substr(eq + 1);
  return true;
}

bool splitWords(const std::string& line, std::vector<std::string>& words, std::string& error) {
  words.clear();
  std::string w;
  bool inWord = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      if (inWord) words.push_back(std::move(w));
      w.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\\') {
      if (++i == line.size()) {
        error = "a backslash at the end of the line";
        return false;
      }
      w += line[i];
    } else if (c == '\'') {
      const size_t q = line.find('\'', i + 1);
      if (q == std::string::npos) {
        error = "an unterminated ' quote";
        return false;
      }
      w.append(line, i + 1, q - i - 1);
      i = q;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size() && (line[j + 1] == '"' || line[j + 1] == '\\')) ++j;
        w += line[j];
      }
      if (j == line.size()) {
        error = "an unterminated \" quote";
        return false;
      }
      i = j;
    } else {
      w += c;
    }
  }
  if (inWord) words.push_back(std::move(w));
  return true;
}

bool ArgReader::take(const std::string& name, std::string& value, std::string& error) {
  const std::string& a = args_[i_];
  bool shortForm = name.size() == 2 && name[0] == '-' && name[1] != '-';
  if (a == name) {
    if (i_ + 1 >= args_.size()) {
      error = "option " + name + " needs a value";
      ++i_;
      return true;
    }
    value = args_[i_ + 1];
    i_ += 2;
    return true;
  }
  if (!shortForm && a.rfind(name + "=", 0) == 0) {
    value = a.substr(name.size() + 1);
    ++i_;
    return true;
  }
  if (shortForm && a.size() > 2 && a.rfind(name, 0) == 0) {
    value = a.substr(2);
    ++i_;
    return true;
  }
  return false;
}

bool ArgReader::takeFlag(const std::string& name) {
  if (args_[i_] != name) return false;
  ++i_;
  return true;
}

}  // namespace fnk::cli
