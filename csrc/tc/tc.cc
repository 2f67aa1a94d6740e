#include "tc/tc.h"

#include <map>

#include "support/error.h"
#include "tc/index_type.h"
#include "tc/parser.h"
#include "tc/sema.h"
#include "tc/to_te.h"

namespace ptb::tc {

namespace {

void check_unique_names(const SourceText& text, const AstProgram& program) {
  std::map<std::string, SourcePos> seen;
  for (const AstDef& def : program.defs) {
    if (!seen.emplace(def.name, def.pos).second) {
      text.fail(def.pos, "'" + def.name + "' is defined twice");
    }
  }
}

}  // namespace

std::vector<TcDef> compile_tc_defs(const std::string& source, DataType index_type) {
  PTB_ICHECK(index_type == DataType::Int(32) || index_type == DataType::Int(64), "TC index type ",
             index_type.str());
  IndexTypeScope scope(index_type);
  SourceText text(source);
  AstProgram program = parse_program(text, /*per_def=*/true);
  check_unique_names(text, program);
  std::vector<TcDef> out;
  for (const AstDef& def : program.defs) {
    TcDef d{def.name, nullptr, def.error};
    if (!d.error) {
      try {
        d.fn = std::make_shared<TcFunction>(to_te(text, check_def(text, def)));
      } catch (const TCError& e) {
        d.error = std::make_shared<const TCError>(e);
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<TcFunction> compile_tc(const std::string& source) {
  SourceText text(source);
  AstProgram program = parse_program(text);
  check_unique_names(text, program);
  std::vector<TcFunction> out;
  for (const AstDef& def : program.defs) out.push_back(to_te(text, check_def(text, def)));
  return out;
}

}  // namespace ptb::tc
