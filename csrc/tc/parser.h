// The recursive-descent parser of TC source.
//
//   program := def+
//   def     := 'def' name '(' [param {',' param}] ')' '->' '(' output {',' output} ')' '{' stmt*
//   '}' param   := type ['(' [dim {',' dim}] ')'] name          dim := name | integer output  :=
//   [type ['(' [dim {',' dim}] ')']] name stmt    := name ['(' [name {',' name}] ')'] assign expr
//   ['where' item {',' item}] [';'] assign  := '=' | '+=' | '*=' | 'min=' | 'max=' | '+=!' | '*=!'
//   | 'min=!' | 'max=!' item    := name 'in' or_expr ':' expr | name '=' expr expr    := or_expr
//   ['?' expr ':' expr] or_expr := and {'||' and}   and := eq {'&&' eq}   eq := rel {('=='|'!=')
//   rel} rel     := add {('<'|'<='|'>'|'>=') add}   add := mul {('+'|'-') mul} mul     := unary
//   {('*'|'/') unary}   unary := ('-'|'+'|'!') unary | primary primary := integer | float | name |
//   name '(' [expr {',' expr}] ')' | name '.' integer
//            | type '(' expr ')' | '(' expr ')'
//
// Statements need no separator: an expression can never be followed by a name, so the next
// name starts the next statement.
#pragma once

#include "tc/ast.h"
#include "tc/error.h"

namespace ptb::tc {

// Parses the whole source; throws TCError at the first syntax error. With `per_def`, a syntax
// error inside a def (after its name) is kept in that def (AstDef::error) and parsing goes on
// with the next def.
AstProgram parse_program(const SourceText& source, bool per_def = false);

}  // namespace ptb::tc
