#include "tc/tc.h"

#include <map>

#include "tc/parser.h"
#include "tc/sema.h"
#include "tc/to_te.h"

namespace ptb::tc {

std::vector<TcFunction> compile_tc(const std::string& source) {
  SourceText text(source);
  AstProgram program = parse_program(text);
  std::map<std::string, SourcePos> seen;
  for (const AstDef& def : program.defs) {
    if (!seen.emplace(def.name, def.pos).second) {
      text.fail(def.pos, "'" + def.name + "' is defined twice");
    }
  }
  std::vector<TcFunction> out;
  for (const AstDef& def : program.defs) out.push_back(to_te(text, check_def(text, def)));
  return out;
}

}  // namespace ptb::tc
