#include "ir/simplify.h"

namespace ptb {

Expr simplify(const Expr& e) { return e; }
Stmt simplify(const Stmt& s) { return s; }

}  // namespace ptb
