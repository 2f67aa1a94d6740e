// How the two objects of a split build (jit.cc: a module's functions compiled on two threads)
// reach each other's functions.
#pragma once

namespace llvm {
class Module;
}  // namespace llvm

namespace ptb {

// Marks every function declaration of `module` (among them the other piece's functions) as
// possibly outside this object, so that code reaches them through the GOT and PLT stubs
// JITLink puts in this object's own memory. Left dso_local, an address taken or a call across
// the two pieces is a 32-bit PC-relative fixup, and the two objects' memory may lie more than
// 2 GiB apart: "relocation target ... is out of range of Delta32 fixup" (seen once in a CI run:
// a matmul's parallel body taken by address from the other object). Call it after the piece's
// bitcode is kept for get_source and saving (a saved module is one object again), before the
// object is emitted.
void reach_declarations_indirectly(llvm::Module& module);

}  // namespace ptb
