// The text form of fnk IR. Printing the parse of printed IR gives the same
// text (tests/ir/roundtrip_test.cpp checks this over every stdlib and example
// file). Grammar of the form, informally:
//
//   module @a.b
//   kernel @name<K = 1024, T = bf16>(%x: tensor<bf16>[M, N], %eps: f32) {warps = 8}
//   launch {
//     ...ops...
//   }
//   body {
//     ...ops...
//   }
//
//   op     := [results '='] mnemonic [operands] ['{' attrs '}'] [':' types] regions
//   region := '{' ['^bb(' %arg ':' type, ... '):'] ops '}'
//
// Attributes: integers, floats (always with '.' or an exponent, or inf/nan),
// true/false, "strings", dtype names, [int lists].
#pragma once
#include <iosfwd>
#include <string>

#include "ir/IR.h"

namespace fnk::ir {

void print(std::ostream& os, const Module& m);
void print(std::ostream& os, const Function& f);
std::string toString(const Module& m);

}  // namespace fnk::ir
