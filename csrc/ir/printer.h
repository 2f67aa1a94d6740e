// Readable text for expressions and statements: what lower() shows and what error messages quote.
#pragma once

#include <ostream>
#include <string>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace ptb {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);

}  // namespace ptb
