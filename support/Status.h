// Errors as values for library code that is not reporting on source text
// (the interpreter, file I/O, the runtime). Source errors use DiagEngine.
#pragma once
#include <string>
#include <utility>

namespace fnk {

class [[nodiscard]] Status {
public:
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.message_ = std::move(message);
    s.failed_ = true;
    return s;
  }
  bool isOk() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string& message() const { return message_; }

private:
  std::string message_;
  bool failed_ = false;
};

}  // namespace fnk
