#include "codegen/codegen_llvm.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/codegen_arith.h"
#include "codegen/codegen_math.h"
#include "codegen/libmvec.h"
#include "codegen/minmax_avx512.h"
#include "codegen/strided_groups.h"
#include "codegen/target.h"
#include "codegen/transposed_groups.h"
#include "ir/op.h"
#include "ir/visitor.h"
#include "runtime/backend_api.h"
#include "schedule/interval.h"
#include "support/error.h"
#include "support/stack.h"

namespace ptb {

namespace {

// Intermediates of a known size up to this many bytes live in the function's stack frame
// (allocated once in the entry block), where LLVM can keep them in registers; the total per
// function is capped so that deep loop nests of small buffers cannot overflow a thread's stack.
constexpr int64_t kMaxStackAllocation = 16 * 1024;
constexpr int64_t kMaxStackPerFunction = 128 * 1024;
constexpr unsigned kAllocAlignment = 64;
// Unconditional loads remembered per buffer and statement, to prove others safe to speculate.
constexpr size_t kMaxRememberedLoads = 16;
// A block with more loop nests than this puts each in a function of its own (see emit_block).
constexpr size_t kMaxLoopNestsPerFunction = 8;

using VarKey = const ExprNode*;

// Every variable a statement refers to, buffer data pointers included, in first-use order.
class VarCollector : public IRVisitor {
 public:
  std::vector<VarKey> vars;

 protected:
  using IRVisitor::visit_node;
  void visit_node(const Var* op) override { add(op); }
  void visit_node(const Load* op) override {
    add(op->buffer->data.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const Store* op) override {
    add(op->buffer->data.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const Allocate* op) override {
    for (const Expr& e : op->buffer->shape) visit(e);
    IRVisitor::visit_node(op);
  }
  void visit_node(const CallPacked* op) override {
    for (const PackedCallArg& a : op->args) {
      if (!a.buffer) continue;
      add(a.buffer->data.get());
      for (const Expr& e : a.buffer->shape) visit(e);
      for (const Expr& e : a.buffer->strides) visit(e);
    }
    IRVisitor::visit_node(op);
  }

 private:
  void add(VarKey v) {
    if (seen_.insert(v).second) vars.push_back(v);
  }
  std::unordered_set<VarKey> seen_;
};

// The buffers a function stores to, and the ones it allocates.
class BufferUseCollector : public IRVisitor {
 public:
  std::unordered_set<VarKey> stored;
  std::unordered_set<VarKey> loaded;
  std::vector<VarKey> allocated;

 protected:
  using IRVisitor::visit_node;
  void visit_node(const Store* op) override {
    stored.insert(op->buffer->data.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const Load* op) override {
    loaded.insert(op->buffer->data.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const Allocate* op) override {
    allocated.push_back(op->buffer->data.get());
    IRVisitor::visit_node(op);
  }
  // A packed function may write any tensor it is given.
  void visit_node(const CallPacked* op) override {
    for (const PackedCallArg& a : op->args) {
      if (a.buffer) stored.insert(a.buffer->data.get());
    }
    IRVisitor::visit_node(op);
  }
};

class CodeGenLLVM {
 public:
  CodeGenLLVM(llvm::Module& module, llvm::TargetMachine& tm, const Target& target)
      : module_(module), ctx_(module.getContext()), target_(target), b_(ctx_) {
    const llvm::MCSubtargetInfo* sti = tm.getMCSubtargetInfo();
    avx512_ = sti->checkFeatures("+avx512f");
    vector_math_ = &libmvec_variants(sti->checkFeatures("+avx2"), avx512_);
    llvm::FastMathFlags fmf;
    if (target.fast_math) {
      fmf.setFast();
    } else {
      fmf.setAllowContract(true);  // FMA contraction only, as TVM does
    }
    b_.setFastMathFlags(fmf);
    declare_runtime();
  }

  void add_function(const LoweredFunc& f) {
    std::string symbol = kernel_symbol(f.name);
    // The name users gave the kernel for its compact specialization (which adds a suffix to
    // it); the generic function runs only for strided arrays, and says so.
    const std::string suffix = "_compact";
    kernel_label_ = f.name;
    if (kernel_label_.size() > suffix.size() &&
        kernel_label_.compare(kernel_label_.size() - suffix.size(), suffix.size(), suffix) == 0) {
      kernel_label_.resize(kernel_label_.size() - suffix.size());
    } else {
      kernel_label_ += " (strided)";
    }
    parallel_count_ = 0;
    versioned_root_ = f.versioned ? f.body.get() : nullptr;
    if (module_.getFunction(symbol) != nullptr) {
      value_error("two functions named '", f.name, "' in one module");
    }
    llvm::Type* ptr = b_.getPtrTy();
    auto* fty = llvm::FunctionType::get(b_.getInt32Ty(), {ptr, ptr}, false);
    llvm::Function* fn =
        llvm::Function::Create(fty, llvm::Function::ExternalLinkage, symbol, module_);
    configure(fn);
    for (unsigned i = 0; i < 2; ++i) {
      // The pointer array and the scalars are the runtime's, read-only and not otherwise
      // accessed during the call.
      fn->addParamAttr(i, llvm::Attribute::NoAlias);
      fn->addParamAttr(i, llvm::Attribute::NoCapture);
      fn->addParamAttr(i, llvm::Attribute::ReadOnly);
    }
    fn->getArg(0)->setName("data");
    fn->getArg(1)->setName("scalars");
    begin_function(fn, /*parallel=*/false);
    setup_alias_scopes(f);

    llvm::MDNode* invariant = llvm::MDNode::get(ctx_, {});
    for (size_t i = 0; i < f.args.size(); ++i) {
      const Buffer& buf = f.args[i];
      PTB_ICHECK(buf && buf->data.as<Var>() && buf->data.dtype().is_handle(), "argument ", i,
                 " of ", f.name, " has no data variable");
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr, fn->getArg(0), i);
      llvm::LoadInst* p = b_.CreateAlignedLoad(ptr, slot, llvm::Align(8), buf->name);
      p->setMetadata(llvm::LLVMContext::MD_invariant_load, invariant);
      bind(buf->data.get(), p);
    }
    for (size_t j = 0; j < f.scalar_params.size(); ++j) {
      const Expr& v = f.scalar_params[j];
      PTB_ICHECK(v.as<Var>(), "scalar parameter ", j, " of ", f.name, " is not a Var");
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), fn->getArg(1), j);
      llvm::LoadInst* raw = b_.CreateAlignedLoad(b_.getInt64Ty(), slot, llvm::Align(8));
      raw->setMetadata(llvm::LLVMContext::MD_invariant_load, invariant);
      llvm::Value* value = emit_cast(b_, raw, DataType::Int(64), v.dtype());
      value->setName(v.as<Var>()->name);
      bind(v.get(), value);
    }
    emit(f.body);
    b_.CreateRet(b_.getInt32(0));
    finish_alias_scopes();
  }

 private:
  // ---------------------------------------------------------------- functions and state

  struct FunctionState {
    llvm::Function* fn = nullptr;
    llvm::BasicBlock* entry = nullptr;
    std::unordered_map<VarKey, llvm::Value*> vars;
    std::vector<llvm::Value*> heap;  // live ptb_alloc results, innermost last
    // cleanup[i] frees heap[i], then heap[i - 1]..., then returns the status in status_slot:
    // one block per allocation (made on first use), so that the failure paths of N nested
    // allocations take O(N) code, not O(N^2).
    std::vector<llvm::BasicBlock*> cleanup;
    llvm::BasicBlock* fail_return = nullptr;
    llvm::AllocaInst* status_slot = nullptr;
    int64_t stack_bytes = 0;
    bool parallel = false;  // inside an outlined parallel body: nested parallel loops are serial
    // One loop nest of a block of many, outlined (emit_block): its vectorized loops are not
    // unrolled again (see emit_loop).
    bool one_of_many = false;
    // The values of the compound expressions emitted so far in the current statement, so that
    // a subexpression shared by several parents is computed once (expressions are DAGs). An
    // entry made inside a branch (one side of an if_then_else, a guarded load, a Let body) is
    // dropped when the branch ends, since its value does not dominate what follows; all are
    // dropped at the next statement, since stores may change what loads would read.
    std::unordered_map<const ExprNode*, llvm::Value*> values;
    std::vector<const ExprNode*> value_order;  // the keys of `values`, oldest first
    int branch_depth = 0;                      // the number of live ValueRegions
    // The loads emitted outside every branch of the current statement (they were read, so
    // reading them again cannot fault), and which expressions are known to be safe to evaluate
    // unconditionally (see speculatable()).
    std::unordered_map<const BufferNode*, std::vector<Expr>> unconditional_loads;  // indices
    std::unordered_map<const ExprNode*, bool> speculatable;
    // The annotated loads and stores, with their buffers' alias groups (finish_alias_scopes).
    std::vector<std::pair<llvm::Instruction*, size_t>> scoped_accesses;
  };

  // Entries made while `region` is alive are forgotten when it ends.
  class ValueRegion {
   public:
    explicit ValueRegion(CodeGenLLVM* cg)
        : cg_(cg), fn_(cg->fs_.fn), mark_(cg->fs_.value_order.size()) {
      ++cg_->fs_.branch_depth;
    }
    ~ValueRegion() {
      FunctionState& fs = cg_->fs_;
      if (fs.fn != fn_) return;
      --fs.branch_depth;
      while (fs.value_order.size() > mark_) {
        fs.values.erase(fs.value_order.back());
        fs.value_order.pop_back();
      }
    }
    ValueRegion(const ValueRegion&) = delete;
    ValueRegion& operator=(const ValueRegion&) = delete;

   private:
    CodeGenLLVM* cg_;
    llvm::Function* fn_;
    size_t mark_;
  };

  void forget_values() {
    fs_.values.clear();
    fs_.value_order.clear();
    fs_.unconditional_loads.clear();
    fs_.speculatable.clear();
  }

  // Whether e can be evaluated where it might not have been (both sides of an if_then_else
  // at once): nothing in it may fault. A load may, unless the same load was already done
  // unconditionally; an integer division may, unless by a non-zero constant. Remembered per
  // statement (a "no" may turn into a "yes" later in the statement; it stays "no", which is
  // only slower).
  bool speculatable(const Expr& e) {
    if (!e.defined()) return true;
    ExprKind k = e->kind;
    if (k == ExprKind::kIntImm || k == ExprKind::kFloatImm || k == ExprKind::kVar) return true;
    if (k == ExprKind::kLoad) {
      // The same element may be read through another node: compared by structure.
      const auto* load = e.as<Load>();
      if (load->predicate.defined()) return false;
      auto loads = fs_.unconditional_loads.find(load->buffer.get());
      if (loads == fs_.unconditional_loads.end()) return false;
      for (const Expr& index : loads->second) {
        if (structurally_equal(index, load->index)) return true;
      }
      return false;
    }
    auto it = fs_.speculatable.find(e.get());
    if (it != fs_.speculatable.end()) return it->second;
    check_stack();
    bool ok = true;
    if (k == ExprKind::kDiv || k == ExprKind::kMod || k == ExprKind::kFloorDiv ||
        k == ExprKind::kFloorMod) {
      const Expr& divisor = k == ExprKind::kDiv        ? e.as<Div>()->b
                            : k == ExprKind::kMod      ? e.as<Mod>()->b
                            : k == ExprKind::kFloorDiv ? e.as<FloorDiv>()->b
                                                       : e.as<FloorMod>()->b;
      auto c = as_const_int(divisor);
      ok = !e.dtype().is_integer() || (c && *c != 0);
    }
    if (ok) {
      std::vector<const Expr*> children;
      detail::push_expr_children(e, &children);
      for (const Expr* c : children) {
        if (!speculatable(*c)) {
          ok = false;
          break;
        }
      }
    }
    fs_.speculatable[e.get()] = ok;
    return ok;
  }

  void begin_function(llvm::Function* fn, bool parallel) {
    fs_ = FunctionState();
    fs_.fn = fn;
    fs_.parallel = parallel;
    fs_.entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
    b_.SetInsertPoint(fs_.entry);
  }

  void configure(llvm::Function* fn) {
    fn->setDoesNotThrow();
    fn->addFnAttr("target-cpu", target_.cpu);
    if (!target_.features.empty()) fn->addFnAttr("target-features", target_.features);
    // Lets vector math calls pass 512-bit vectors in zmm registers, as libmvec's AVX-512
    // variants expect, even on CPUs where LLVM prefers 256-bit vectors.
    if (avx512_) fn->addFnAttr("min-legal-vector-width", "512");
    // FP exceptions are never observed, so FP operations may be speculated (clang's default).
    fn->addFnAttr("no-trapping-math", "true");
    if (target_.fast_math) {
      for (const char* a : {"unsafe-fp-math", "no-infs-fp-math", "no-nans-fp-math",
                            "no-signed-zeros-fp-math", "approx-func-fp-math"}) {
        fn->addFnAttr(a, "true");
      }
    }
  }

  void declare_runtime() {
    llvm::Type* ptr = b_.getPtrTy();
    llvm::Type* i64 = b_.getInt64Ty();
    parallel_for_ = module_.getOrInsertFunction(
        "ptb_parallel_for_named",
        llvm::FunctionType::get(b_.getInt32Ty(), {i64, ptr, ptr, ptr}, false));
    alloc_ = module_.getOrInsertFunction("ptb_alloc", llvm::FunctionType::get(ptr, {i64}, false));
    call_packed_ = module_.getOrInsertFunction(
        "ptb_call_packed",
        llvm::FunctionType::get(b_.getInt32Ty(), {ptr, b_.getInt32Ty(), ptr, ptr}, false));
    free_ = module_.getOrInsertFunction("ptb_free",
                                        llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(alloc_.getCallee())) {
      // Fresh memory: it aliases nothing else, and is 64-byte aligned.
      f->addRetAttr(llvm::Attribute::NoAlias);
      f->addRetAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(kAllocAlignment)));
      f->setDoesNotThrow();
    }
    if (auto* f = llvm::dyn_cast<llvm::Function>(free_.getCallee())) f->setDoesNotThrow();
    if (auto* f = llvm::dyn_cast<llvm::Function>(parallel_for_.getCallee())) f->setDoesNotThrow();
  }

  llvm::Value* bind(VarKey var, llvm::Value* value) {
    auto [it, inserted] = fs_.vars.emplace(var, value);
    if (inserted) return nullptr;
    // A variable bound again while bound: values computed with its outer binding are stale.
    forget_values();
    llvm::Value* previous = it->second;
    it->second = value;
    return previous;
  }
  void unbind(VarKey var, llvm::Value* previous) {
    if (previous) {
      fs_.vars[var] = previous;
    } else {
      fs_.vars.erase(var);
    }
  }
  llvm::Value* lookup(const Var* var) const {
    auto it = fs_.vars.find(var);
    PTB_ICHECK(it != fs_.vars.end(), "variable '", var->name, "' is used outside its scope");
    return it->second;
  }

  // Frees the live intermediates and returns `status` when `failed` holds.
  void return_if(llvm::Value* failed, llvm::Value* status) {
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(failed); c && c->isZero()) return;
    llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "fail", fs_.fn);
    llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "ok", fs_.fn);
    b_.CreateCondBr(failed, fail, ok, llvm::MDBuilder(ctx_).createUnlikelyBranchWeights());
    b_.SetInsertPoint(fail);
    if (fs_.heap.empty()) {
      b_.CreateRet(status);
    } else {
      b_.CreateStore(status, status_slot());
      b_.CreateBr(cleanup_block(fs_.heap.size() - 1));
    }
    b_.SetInsertPoint(ok);
  }

  llvm::AllocaInst* status_slot() {
    if (!fs_.status_slot) fs_.status_slot = entry_alloca(b_.getInt32Ty(), 4);
    return fs_.status_slot;
  }

  // The block that frees heap[depth], ..., heap[0] and returns the stored status.
  llvm::BasicBlock* cleanup_block(size_t depth) {
    if (!fs_.fail_return) {
      fs_.fail_return = llvm::BasicBlock::Create(ctx_, "fail.return", fs_.fn);
      llvm::IRBuilder<> rb(fs_.fail_return);
      rb.CreateRet(rb.CreateLoad(rb.getInt32Ty(), status_slot()));
    }
    // Blocks below `depth` that are missing are made first, so each can branch to the next.
    size_t first_missing = depth + 1;
    while (first_missing > 0 && !fs_.cleanup[first_missing - 1]) --first_missing;
    for (size_t i = first_missing; i <= depth; ++i) {
      llvm::BasicBlock* bb = llvm::BasicBlock::Create(ctx_, "fail.free", fs_.fn);
      llvm::IRBuilder<> cb(bb);
      cb.CreateCall(free_, {fs_.heap[i]});
      cb.CreateBr(i == 0 ? fs_.fail_return : fs_.cleanup[i - 1]);
      fs_.cleanup[i] = bb;
    }
    return fs_.cleanup[depth];
  }

  // An alloca in the entry block, so that it is allocated once per call, not per iteration.
  llvm::AllocaInst* entry_alloca(llvm::Type* ty, unsigned align) {
    llvm::IRBuilder<> eb(fs_.entry, fs_.entry->getFirstInsertionPt());
    llvm::AllocaInst* a = eb.CreateAlloca(ty);
    a->setAlignment(llvm::Align(align));
    return a;
  }

  // ---------------------------------------------------------------- alias information

  // Scopes: one for the arguments only read, one for the arguments written, one per
  // intermediate buffer. An access is in its buffer's scope and declared not to alias the
  // others: read-only arguments may alias each other (harmless, nothing writes them), written
  // arguments may alias each other, but the two groups never overlap (the runtime checks it).
  //
  // The noalias list of an access names only the scopes accessed in the same LLVM function
  // (queries never cross functions): listing every scope of the kernel would make N chained
  // stages, each outlined into a function of its own, carry N lists of N scopes, and every
  // alias query walk one (O(N^2) metadata and compile time). So accesses get their scope as
  // they are emitted, and their noalias lists when their function is finished.
  void setup_alias_scopes(const LoweredFunc& f) {
    alias_group_.clear();
    alias_scopes_.clear();
    BufferUseCollector uses;
    uses.visit(f.body);
    llvm::MDBuilder md(ctx_);
    llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(f.name);
    std::vector<std::vector<VarKey>> groups(2);
    write_only_.clear();
    for (const Buffer& buf : f.args) {
      VarKey v = buf->data.get();
      groups[uses.stored.count(v) ? 1 : 0].push_back(v);
      if (uses.stored.count(v) && !uses.loaded.count(v)) write_only_.insert(v);
    }
    alias_scopes_.push_back(md.createAnonymousAliasScope(domain, "inputs"));
    alias_scopes_.push_back(md.createAnonymousAliasScope(domain, "outputs"));
    for (VarKey a : uses.allocated) {
      groups.push_back({a});
      alias_scopes_.push_back(md.createAnonymousAliasScope(domain));
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      for (VarKey v : groups[g]) alias_group_[v] = g;
    }
  }

  void annotate(llvm::Value* access, const Buffer& buf) {
    auto* inst = llvm::dyn_cast<llvm::Instruction>(access);
    auto it = alias_group_.find(buf->data.get());
    if (inst == nullptr || it == alias_group_.end()) return;
    size_t group = it->second;
    inst->setMetadata(llvm::LLVMContext::MD_alias_scope,
                      llvm::MDNode::get(ctx_, {alias_scopes_[group]}));
    fs_.scoped_accesses.emplace_back(inst, group);
  }

  // The noalias lists of the current function's accesses: every other scope it accesses.
  void finish_alias_scopes() {
    std::vector<size_t> present;
    for (const auto& [inst, group] : fs_.scoped_accesses) present.push_back(group);
    std::sort(present.begin(), present.end());
    present.erase(std::unique(present.begin(), present.end()), present.end());
    std::unordered_map<size_t, llvm::MDNode*> noalias;
    for (size_t g : present) {
      std::vector<llvm::Metadata*> others;
      for (size_t h : present) {
        if (h != g) others.push_back(alias_scopes_[h]);
      }
      if (!others.empty()) noalias[g] = llvm::MDNode::get(ctx_, others);
    }
    for (const auto& [inst, group] : fs_.scoped_accesses) {
      auto it = noalias.find(group);
      if (it != noalias.end()) inst->setMetadata(llvm::LLVMContext::MD_noalias, it->second);
    }
    fs_.scoped_accesses.clear();
  }

  // ---------------------------------------------------------------- statements

  void emit(const Stmt& s) {
    PTB_ICHECK(s.defined(), "undefined statement");
    check_stack();
    forget_values();
    switch (s->kind) {
      case StmtKind::kFor:
        return emit_for(s.as<For>());
      case StmtKind::kStore:
        return emit_store(s.as<Store>());
      case StmtKind::kAllocate:
        return emit_allocate(s.as<Allocate>());
      case StmtKind::kBlock:
        return emit_block(s.as<Block>());
      case StmtKind::kIfThenElse:
        return emit_if(s.as<IfThenElse>());
      case StmtKind::kLetStmt: {
        const auto* op = s.as<LetStmt>();
        llvm::Value* prev = bind(op->var.get(), emit(op->value));
        emit(op->body);
        unbind(op->var.get(), prev);
        return;
      }
      case StmtKind::kEvaluate: {
        const Expr& v = s.as<Evaluate>()->value;
        if (v.defined() && !v.as<IntImm>() && !v.as<FloatImm>()) emit(v);
        return;
      }
      case StmtKind::kCallPacked:
        return emit_call_packed(s.as<CallPacked>());
      case StmtKind::kProvide:
      case StmtKind::kRealize:
        internal_error(__FILE__, __LINE__,
                       "a tensor-level statement reached codegen; storage flattening must run "
                       "before it");
    }
  }

  // A block of many loop nests (N chained stages) gives each nest a function of its own: LLVM's
  // loop analyses (scalar evolution's guard search, dominator walks) take time that grows with
  // the size of the function around a loop, so one function of N loops compiles in O(N^2).
  void emit_block(const Block* op) {
    size_t loops = 0;
    for (const Stmt& c : op->stmts) loops += c.as<For>() != nullptr;
    bool outline = loops > kMaxLoopNestsPerFunction;
    TransposeScope transposes(this, op);
    for (const Stmt& c : op->stmts) {
      const For* loop = c.as<For>();
      if (outline && loop && !(loop->for_kind == ForKind::kParallel && !fs_.parallel)) {
        emit_outlined_for(loop, /*parallel=*/false);
      } else {
        emit(c);
      }
    }
  }

  // ---------------------------------------------------------------- transposed gathers

  // The gathers of each run of stores in a block that read the columns of a matrix block
  // (find_transposed_groups): registered for the block's lifetime; a group's rows are loaded
  // and transposed where its first column is used, which is the value of a store in the run,
  // so they dominate the group's later stores.
  class TransposeScope {
   public:
    TransposeScope(CodeGenLLVM* cg, const Block* block) : cg_(cg), mark_(cg->transposes_.size()) {
      std::vector<const Store*> run;
      auto flush = [&] {
        if (run.size() >= 4) {
          std::unordered_map<const ExprNode*, const Store*> store_of;
          for (const Store* store : run) store_of.emplace(store->value.get(), store);
          for (TransposedGroup& g : find_transposed_groups(run)) {
            size_t id = cg_->transposes_.size();
            for (const auto& [load, column] : g.taps) {
              cg_->transpose_taps_[load] = {id, column, store_of.at(load)};
            }
            cg_->transposes_.push_back({std::move(g), {}});
          }
        }
        run.clear();
      };
      for (const Stmt& c : block->stmts) {
        if (const auto* store = c.as<Store>()) {
          run.push_back(store);
        } else {
          flush();
        }
      }
      flush();
    }
    ~TransposeScope() {
      while (cg_->transposes_.size() > mark_) {
        for (const auto& tap : cg_->transposes_.back().group.taps) {
          cg_->transpose_taps_.erase(tap.first);
        }
        cg_->transposes_.pop_back();
      }
    }
    TransposeScope(const TransposeScope&) = delete;
    TransposeScope& operator=(const TransposeScope&) = delete;

   private:
    CodeGenLLVM* cg_;
    size_t mark_;
  };

  struct PendingTranspose {
    TransposedGroup group;
    std::vector<llvm::Value*> columns;  // empty until the first tap is emitted
  };

  // Column `column` of group `id`, as a value of type `t`: the group's rows are loaded (row r
  // is the `lanes` contiguous elements at base + r * stride, which are exactly the elements
  // the group's gathers read) and transposed on first use.
  llvm::Value* transposed_column(size_t id, int column, DataType t) {
    PendingTranspose& p = transposes_[id];
    if (p.columns.empty()) {
      const TransposedGroup& g = p.group;
      llvm::Type* mem_ty = memory_type(ctx_, t);
      llvm::Type* elem = mem_ty->getScalarType();
      llvm::Value* data = lookup(g.buffer->data.as<Var>());
      llvm::Value* base = to_offset(emit(g.base), g.base.dtype());
      llvm::Value* stride = to_offset(emit(g.stride), g.stride.dtype());
      std::vector<llvm::Value*> rows;
      for (int r = 0; r < g.lanes; ++r) {
        llvm::Value* start = b_.CreateAdd(base, b_.CreateMul(stride, b_.getInt64(r)));
        llvm::Value* ptr = b_.CreateInBoundsGEP(elem, data, start);
        llvm::LoadInst* row = b_.CreateAlignedLoad(mem_ty, ptr, element_align(g.buffer));
        annotate(row, g.buffer);
        rows.push_back(row);
      }
      p.columns = transpose_rows(std::move(rows));
    }
    return from_memory(b_, p.columns[column], t);
  }

  // The columns of a square matrix held as its rows: log2(L) rounds of a perfect shuffle, each
  // pairing row i with row i + L/2 and interleaving their low halves into row 2i and their
  // high halves into row 2i + 1 (after round j, row i holds the elements whose row and column
  // indices have had j bits exchanged).
  std::vector<llvm::Value*> transpose_rows(std::vector<llvm::Value*> rows) {
    int lanes = static_cast<int>(rows.size());
    int half = lanes / 2;
    std::vector<int> low(lanes), high(lanes);
    for (int i = 0; i < half; ++i) {
      low[2 * i] = i;
      low[2 * i + 1] = lanes + i;
      high[2 * i] = half + i;
      high[2 * i + 1] = lanes + half + i;
    }
    for (int round = 1; round < lanes; round *= 2) {
      std::vector<llvm::Value*> next(lanes);
      for (int i = 0; i < half; ++i) {
        next[2 * i] = b_.CreateShuffleVector(rows[i], rows[i + half], low);
        next[2 * i + 1] = b_.CreateShuffleVector(rows[i], rows[i + half], high);
      }
      rows = std::move(next);
    }
    return rows;
  }

  // Fills a pointer array and a metadata array (backend_api.h's encoding) in the entry block and
  // calls ptb_call_packed; a failure returns its status from the kernel.
  void emit_call_packed(const CallPacked* op) {
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Type* ptr = b_.getPtrTy();
    std::vector<llvm::Value*> meta;
    std::vector<llvm::Value*> data;
    auto constant = [&](int64_t v) { return llvm::ConstantInt::get(i64, v); };
    for (const PackedCallArg& a : op->args) {
      if (a.scalar.defined()) {
        DataType t = a.scalar.dtype();
        llvm::Value* v = emit(a.scalar);
        data.push_back(llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx_, 0)));
        if (t.is_float()) {
          meta.push_back(constant(2));
          meta.push_back(b_.CreateBitCast(emit_cast(b_, v, t, DataType::Float(64)), i64));
        } else {
          meta.push_back(constant(1));
          meta.push_back(emit_cast(b_, v, t, DataType::Int(64)));
        }
        continue;
      }
      const Buffer& buf = a.buffer;
      PTB_ICHECK(buf, "a packed call reached codegen before storage flattening");
      data.push_back(lookup(buf->data.as<Var>()));
      meta.push_back(constant(0));
      meta.push_back(constant(static_cast<int64_t>(buf->dtype.code())));
      meta.push_back(constant(buf->dtype.is_bool() ? 8 : buf->dtype.bits()));
      meta.push_back(constant(1));
      meta.push_back(constant(static_cast<int64_t>(buf->shape.size())));
      std::vector<llvm::Value*> shape;
      for (const Expr& e : buf->shape)
        shape.push_back(emit_cast(b_, emit(e), e.dtype(), DataType::Int(64)));
      meta.insert(meta.end(), shape.begin(), shape.end());
      std::vector<llvm::Value*> strides(buf->shape.size());
      for (size_t d = buf->shape.size(); d-- > 0;) {
        if (!buf->strides.empty()) {
          const Expr& s = buf->strides[d];
          strides[d] = emit_cast(b_, emit(s), s.dtype(), DataType::Int(64));
        } else {
          strides[d] =
              d + 1 == buf->shape.size() ? constant(1) : b_.CreateMul(strides[d + 1], shape[d + 1]);
        }
      }
      meta.insert(meta.end(), strides.begin(), strides.end());
    }
    llvm::AllocaInst* data_arr =
        entry_alloca(llvm::ArrayType::get(ptr, std::max<size_t>(data.size(), 1)), 8);
    llvm::AllocaInst* meta_arr =
        entry_alloca(llvm::ArrayType::get(i64, std::max<size_t>(meta.size(), 1)), 8);
    for (size_t k = 0; k < data.size(); ++k) {
      b_.CreateAlignedStore(data[k], b_.CreateConstInBoundsGEP1_64(ptr, data_arr, k),
                            llvm::Align(8));
    }
    for (size_t k = 0; k < meta.size(); ++k) {
      b_.CreateAlignedStore(meta[k], b_.CreateConstInBoundsGEP1_64(i64, meta_arr, k),
                            llvm::Align(8));
    }
    llvm::Value* name = b_.CreateGlobalStringPtr(op->name, "packed.name");
    llvm::Value* status = b_.CreateCall(
        call_packed_,
        {name, b_.getInt32(static_cast<int32_t>(op->args.size())), data_arr, meta_arr});
    return_if(b_.CreateICmpNE(status, b_.getInt32(0)), status);
  }

  void emit_for(const For* op) {
    const std::string& name = op->var.as<Var>()->name;
    PTB_ICHECK(op->for_kind != ForKind::kVectorized, "loop '", name,
               "' is still marked vectorized at codegen; the vectorize pass must rewrite it");
    if (op->for_kind == ForKind::kParallel && !fs_.parallel) {
      return emit_outlined_for(op, /*parallel=*/true);
    }
    llvm::Value* min = emit(op->min);
    llvm::Value* extent = emit(op->extent);
    DataType t = op->var.dtype();
    llvm::Value* end = emit_binary(b_, BinaryOp::kAdd, min, extent, t);
    emit_loop(op->var, min, end, op->body, op->for_kind == ForKind::kUnrolled);
  }

  // for (var = begin; var < end; ++var) body, in the rotated form LLVM's loop passes expect.
  void emit_loop(const Expr& var, llvm::Value* begin, llvm::Value* end, const Stmt& body,
                 bool unroll_full) {
    // A buffer allocated first thing in every iteration, of a size the iteration does not
    // change, is allocated once around the loop (per thread, for a parallel loop's chunk): a
    // symbolic size is a heap allocation, and a softmax's row buffer over a dynamic row length
    // was one malloc and free per row.
    if (const auto* a = body.as<Allocate>()) {
      bool invariant = true;
      for (const Expr& extent : a->buffer->shape) invariant = invariant && !uses_var(extent, var);
      if (invariant) {
        with_allocation(a, [&] { emit_loop(var, begin, end, a->body, unroll_full); });
        return;
      }
    }
    DataType t = var.dtype();
    bool is_signed = !t.is_uint();
    auto less = [&](llvm::Value* a, llvm::Value* c) {
      return is_signed ? b_.CreateICmpSLT(a, c) : b_.CreateICmpULT(a, c);
    };
    const std::string& name = var.as<Var>()->name;
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx_, name + ".loop", fs_.fn);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, name + ".exit", fs_.fn);
    b_.CreateCondBr(less(begin, end), loop, exit);

    b_.SetInsertPoint(loop);
    llvm::PHINode* iv = b_.CreatePHI(begin->getType(), 2, name);
    iv->addIncoming(begin, pre);
    llvm::Value* prev = bind(var.get(), iv);
    emit(body);
    unbind(var.get(), prev);
    // iv < end, so iv + 1 cannot overflow.
    llvm::Value* next = b_.CreateAdd(iv, llvm::ConstantInt::get(iv->getType(), 1), name + ".next",
                                     /*HasNUW=*/!is_signed, /*HasNSW=*/is_signed);
    iv->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst* back = b_.CreateCondBr(less(next, end), loop, exit);
    auto hint = [&](const char* name) {
      return llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name)});
    };
    llvm::MDNode* loop_hint = nullptr;
    if (unroll_full) {
      loop_hint = hint("llvm.loop.unroll.full");
    } else if (fs_.one_of_many) {
      // A loop of one of many outlined nests, once vectorized (and interleaved as LLVM
      // chooses), is not unrolled again: for such small bodies that gains little and doubles
      // what the later passes and instruction selection work through, per nest (N chained
      // stages compile about a fifth faster). A loop left scalar is unrolled as usual.
      loop_hint = llvm::MDNode::get(
          ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.followup_vectorized"),
                 hint("llvm.loop.unroll.disable")});
    }
    if (loop_hint != nullptr) {
      llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, {nullptr, loop_hint});
      id->replaceOperandWith(0, id);
      back->setMetadata(llvm::LLVMContext::MD_loop, id);
    }
    b_.SetInsertPoint(exit);
  }

  // The body becomes `i32 f(i64 begin, i64 end, ptr closure)` over a chunk of the iterations;
  // the closure is a struct on this function's stack holding the loop's min and every value
  // the body uses from outside. A parallel loop runs it on the thread pool; a serial one calls
  // it once over all the iterations (and keeps it out of line).
  void emit_outlined_for(const For* op, bool parallel) {
    DataType t = op->var.dtype();
    llvm::Value* min = emit(op->min);
    llvm::Value* extent = emit(op->extent);

    VarCollector collector;
    collector.visit(op->body);
    std::vector<VarKey> captured;
    std::vector<llvm::Value*> values{min};
    for (VarKey v : collector.vars) {
      auto it = fs_.vars.find(v);
      if (v == op->var.get() || it == fs_.vars.end()) continue;
      captured.push_back(v);
      values.push_back(it->second);
    }
    std::vector<llvm::Type*> field_types;
    for (llvm::Value* v : values) field_types.push_back(v->getType());
    llvm::StructType* closure_ty = llvm::StructType::get(ctx_, field_types);

    llvm::Value* closure = entry_alloca(closure_ty, 8);
    for (size_t i = 0; i < values.size(); ++i) {
      b_.CreateStore(values[i], b_.CreateStructGEP(closure_ty, closure, i));
    }

    llvm::Type* i64 = b_.getInt64Ty();
    auto* body_ty = llvm::FunctionType::get(b_.getInt32Ty(), {i64, i64, b_.getPtrTy()}, false);
    std::string body_name = fs_.fn->getName().str() + (parallel ? "_parallel_" : "_loop_") +
                            std::to_string(outlined_count_++);
    llvm::Function* body_fn =
        llvm::Function::Create(body_ty, llvm::Function::InternalLinkage, body_name, module_);
    configure(body_fn);
    if (!parallel) body_fn->addFnAttr(llvm::Attribute::NoInline);

    llvm::Value* n = b_.CreateIntCast(extent, i64, /*isSigned=*/!t.is_uint());
    llvm::Value* status = nullptr;
    if (parallel) {
      // The loop's name for the loop profile (runtime/loop_profile.h): the kernel's and the
      // loop's place among its parallel loops, which is their order in lower()'s text.
      std::string label = kernel_label_ + " loop " + std::to_string(parallel_count_++);
      // One string per name: the profile keys a row on its address, and a versioned body's
      // two copies of a loop are one row.
      llvm::Value*& name = loop_names_[label];
      if (name == nullptr) name = b_.CreateGlobalString(label, ".loop_name");
      status = b_.CreateCall(parallel_for_, {n, body_fn, closure, name});
    } else {
      status = b_.CreateCall(body_fn, {b_.getInt64(0), n, closure});
    }
    return_if(b_.CreateICmpNE(status, b_.getInt32(0)), status);

    // Emit the body function, then come back here.
    FunctionState outer = std::move(fs_);
    llvm::IRBuilderBase::InsertPoint resume = b_.saveIP();
    begin_function(body_fn, /*parallel=*/parallel || outer.parallel);
    fs_.one_of_many = !parallel || outer.one_of_many;
    llvm::Value* arg_closure = body_fn->getArg(2);
    arg_closure->setName("closure");
    std::vector<llvm::Value*> loaded;
    for (size_t i = 0; i < values.size(); ++i) {
      loaded.push_back(
          b_.CreateLoad(field_types[i], b_.CreateStructGEP(closure_ty, arg_closure, i)));
    }
    for (size_t i = 0; i < captured.size(); ++i) bind(captured[i], loaded[i + 1]);
    llvm::Type* var_ty = register_type(ctx_, t);
    llvm::Value* begin =
        emit_binary(b_, BinaryOp::kAdd, loaded[0], b_.CreateTrunc(body_fn->getArg(0), var_ty), t);
    llvm::Value* end =
        emit_binary(b_, BinaryOp::kAdd, loaded[0], b_.CreateTrunc(body_fn->getArg(1), var_ty), t);
    emit_loop(op->var, begin, end, op->body, /*unroll_full=*/false);
    b_.CreateRet(b_.getInt32(0));
    finish_alias_scopes();
    fs_ = std::move(outer);
    b_.restoreIP(resume);
  }

  void emit_if(const IfThenElse* op) {
    llvm::Value* cond = emit(op->condition);
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fs_.fn);
    llvm::BasicBlock* else_bb =
        op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "else", fs_.fn) : nullptr;
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "endif", fs_.fn);
    b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : merge);
    b_.SetInsertPoint(then_bb);
    int first_parallel = parallel_count_;
    emit(op->then_case);
    b_.CreateBr(merge);
    if (else_bb) {
      b_.SetInsertPoint(else_bb);
      // Two versions of one loop nest: the else branch's loops carry the same names.
      if (op == versioned_root_) parallel_count_ = first_parallel;
      emit(op->else_case);
      b_.CreateBr(merge);
    }
    b_.SetInsertPoint(merge);
  }

  void emit_allocate(const Allocate* op) {
    with_allocation(op, [&] { emit(op->body); });
  }

  // `op`'s buffer, bound while emit_body() runs: on the stack when its size is a small constant,
  // else from the heap (freed after, and on every early return).
  template <typename F>
  void with_allocation(const Allocate* op, F emit_body) {
    const BufferNode& buf = *op->buffer;
    int64_t elem_bytes = static_cast<int64_t>(buf.dtype.bytes()) * buf.dtype.lanes();
    // The size in bytes, folded when every extent is a constant.
    bool constant = true;
    int64_t const_bytes = elem_bytes;
    llvm::Value* bytes = b_.getInt64(elem_bytes);
    for (const Expr& extent : buf.shape) {
      if (auto c = as_const_int(extent)) {
        const_bytes *= *c;
      } else {
        constant = false;
      }
      llvm::Value* e = emit_cast(b_, emit(extent), extent.dtype(), DataType::Int(64));
      bytes = b_.CreateMul(bytes, e, "", false, /*HasNSW=*/true);
    }
    llvm::Value* prev = nullptr;
    if (constant && const_bytes <= kMaxStackAllocation &&
        fs_.stack_bytes + const_bytes <= kMaxStackPerFunction) {
      fs_.stack_bytes += const_bytes;
      llvm::Type* ty = llvm::ArrayType::get(b_.getInt8Ty(), std::max<int64_t>(const_bytes, 1));
      llvm::AllocaInst* mem = entry_alloca(ty, kAllocAlignment);
      mem->setName(buf.name);
      prev = bind(buf.data.get(), mem);
      emit_body();
    } else {
      llvm::Value* mem = b_.CreateCall(alloc_, {bytes}, buf.name);
      return_if(b_.CreateIsNull(mem), b_.getInt32(PTB_ERROR_OUT_OF_MEMORY));
      fs_.heap.push_back(mem);
      fs_.cleanup.push_back(nullptr);
      prev = bind(buf.data.get(), mem);
      emit_body();
      fs_.heap.pop_back();
      fs_.cleanup.pop_back();
      b_.CreateCall(free_, {mem});
    }
    unbind(buf.data.get(), prev);
  }

  // ---------------------------------------------------------------- memory access

  enum class AccessKind { kScalar, kContiguous, kBroadcast, kGather };
  struct Address {
    AccessKind kind;
    llvm::Value* ptr;  // one pointer, or a vector of pointers for kGather
  };

  llvm::Value* to_offset(llvm::Value* index, DataType t) {
    return emit_cast(b_, index, t, DataType::Int(64, t.lanes()));
  }

  Address address_of(const Buffer& buf, const Expr& index) {
    llvm::Value* base = lookup(buf->data.as<Var>());
    llvm::Type* elem = memory_type(ctx_, buf->dtype.element_of());
    auto gep = [&](const Expr& scalar_index) {
      return b_.CreateInBoundsGEP(elem, base, to_offset(emit(scalar_index), scalar_index.dtype()));
    };
    if (index.dtype().is_scalar()) return {AccessKind::kScalar, gep(index)};
    if (const auto* ramp = index.as<Ramp>(); ramp && is_const_int(ramp->stride, 1)) {
      return {AccessKind::kContiguous, gep(ramp->base)};
    }
    if (const auto* bc = index.as<Broadcast>()) return {AccessKind::kBroadcast, gep(bc->value)};
    llvm::Value* offsets = to_offset(emit(index), index.dtype());
    return {AccessKind::kGather, b_.CreateInBoundsGEP(elem, base, offsets)};
  }

  // Whether a contiguous vector access of `buf` at `index` lies inside a stack allocation:
  // its ramp starts at a constant and its lanes end within the allocation's bytes.
  bool within_stack_buffer(const Buffer& buf, const Expr& index, int lanes) {
    const auto* a = llvm::dyn_cast<llvm::AllocaInst>(lookup(buf->data.as<Var>()));
    const auto* ramp = index.as<Ramp>();
    if (!a || !ramp || buf->dtype.lanes() != 1) return false;
    auto base = as_const_int(ramp->base);
    auto size = a->getAllocationSize(a->getModule()->getDataLayout());
    if (!base || *base < 0 || !size || size->isScalable()) return false;
    int64_t end = (*base + lanes) * buf->dtype.bytes();
    return end <= static_cast<int64_t>(size->getFixedValue());
  }

  // Element alignment only: arrays from users are not guaranteed to be more aligned.
  llvm::Align element_align(const Buffer& buf) {
    return llvm::Align(std::max(1, buf->dtype.bytes()));
  }

  llvm::Value* all_lanes(int lanes) { return llvm::ConstantInt::getTrue(mask_type(lanes)); }
  llvm::Type* mask_type(int lanes) { return llvm::FixedVectorType::get(b_.getInt1Ty(), lanes); }

  llvm::Value* emit_load(const Load* op) {
    DataType t = op->dtype;
    int lanes = t.lanes();
    llvm::Value* pred = op->predicate.defined() ? emit(op->predicate) : nullptr;
    llvm::Value* guard = nullptr;  // a scalar condition to branch around the whole load
    // Inside a lane-wise if_then_else only the lanes that take this branch may be read: a load
    // of the same lanes is masked, any other is skipped when no lane takes the branch.
    if (!masks_.empty()) {
      llvm::Value* mask = masks_.back();
      if (lanes > 1 && mask_lanes(mask) == lanes) {
        pred = pred ? b_.CreateAnd(pred, mask) : mask;
      } else {
        guard = mask_lanes(mask) > 1 ? b_.CreateOrReduce(mask) : mask;
      }
    }
    if (lanes == 1 && pred) {
      guard = guard ? b_.CreateAnd(guard, pred) : pred;
      pred = nullptr;
    }
    if (guard) return guarded(guard, [&] { return load_lanes(op, pred); }, t);
    return load_lanes(op, pred);
  }

  static int mask_lanes(llvm::Value* mask) {
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(mask->getType());
    return vt ? static_cast<int>(vt->getNumElements()) : 1;
  }

  // Loads of a ramp with a small constant stride s (a stride-2 pooling window, a strided slice):
  // the s contiguous vectors that span its lanes, each masked to the lanes the ramp takes (so
  // nothing outside them is read), then one shuffle picks every s-th element. A gather issues
  // one load per lane; this is s loads and a shuffle.
  static constexpr int64_t kMaxShuffledStride = 4;

  llvm::Value* strided_load(const Load* op, const Ramp* ramp, int64_t stride, llvm::Value* mask) {
    DataType t = op->dtype;
    int lanes = t.lanes();
    llvm::Type* mem_ty = memory_type(ctx_, t);
    llvm::Type* elem = mem_ty->getScalarType();
    llvm::Value* base = lookup(op->buffer->data.as<Var>());
    llvm::Value* start =
        b_.CreateInBoundsGEP(elem, base, to_offset(emit(ramp->base), ramp->base.dtype()));
    llvm::Value* zero = llvm::Constant::getNullValue(mem_ty);
    llvm::Value* no_lane = llvm::ConstantInt::getFalse(mask_type(lanes));
    std::vector<llvm::Value*> chunks;
    for (int k = 0; k < static_cast<int>(stride); ++k) {
      // Element g = k * lanes + p of the span is lane g / s of the ramp when s divides g.
      std::vector<int> pick(lanes);
      std::vector<llvm::Constant*> fixed(lanes);
      for (int p = 0; p < lanes; ++p) {
        int g = k * lanes + p;
        bool taken = g % stride == 0;
        pick[p] = taken ? static_cast<int>(g / stride) : lanes;  // lanes: a lane of no_lane
        fixed[p] = llvm::ConstantInt::getBool(ctx_, taken);
      }
      llvm::Value* chunk_mask =
          mask ? b_.CreateShuffleVector(mask, no_lane, pick) : llvm::ConstantVector::get(fixed);
      llvm::Value* ptr = b_.CreateInBoundsGEP(elem, start, b_.getInt64(int64_t{k} * lanes));
      llvm::Value* chunk =
          b_.CreateMaskedLoad(mem_ty, ptr, element_align(op->buffer), chunk_mask, zero);
      annotate(chunk, op->buffer);
      chunks.push_back(chunk);
    }
    // Concatenate the chunks, then pick.
    llvm::Value* all = concat_vectors(std::move(chunks));
    std::vector<int> every(lanes);
    for (int i = 0; i < lanes; ++i) every[i] = static_cast<int>(stride) * i;
    llvm::Value* v = b_.CreateShuffleVector(all, every);
    return from_memory(b_, v, t);
  }

  // The taps of a strided window (x[2i], x[2i + 1], x[2i + 2] in one statement): the
  // contiguous vectors of their common span read once, masked to the elements some tap takes,
  // and each tap picked from the vectors its lanes lie in, instead of s loads per tap. A tap at
  // an odd start then shares both loads of the even one, and LLVM can forward a stack buffer's
  // stores to them (the starts of a row buffer's vectors). The taps' values go into
  // fs_.values, where emit() finds them.
  void share_strided_loads(const Expr& value) {
    for (const StridedGroup& g : find_strided_groups(value, kMaxShuffledStride)) {
      // Contiguous taps (stride 1) only from a stack buffer: there the shared vectors are the
      // buffer's own stores, forwarded; from memory an unaligned load is cheaper than a shuffle.
      if (g.stride == 1 && !llvm::isa<llvm::AllocaInst>(lookup(g.buffer->data.as<Var>()))) continue;
      DataType t = g.taps[0].load->dtype;
      int lanes = g.lanes;
      int64_t lo = g.taps[0].offset, hi = lo;
      for (const StridedTap& tap : g.taps) {
        lo = std::min(lo, tap.offset);
        hi = std::max(hi, tap.offset + g.stride * (lanes - 1));
      }
      // Narrow taps (a row's last 8 outputs) read whole 64-byte vectors with AVX-512: the
      // stores of a stack buffer they forward from are that wide, and a narrower piece of one
      // is extracted lane by lane.
      DataType mem_t = t;
      int bits = memory_type(ctx_, t.element_of())->getPrimitiveSizeInBits();
      if (avx512_ && bits > 0 && lanes * bits < 512 && 512 % (lanes * bits) == 0) {
        mem_t = t.with_lanes(512 / bits);
      }
      int width = mem_t.lanes();
      int64_t chunks = (hi - lo) / width + 1;
      if (chunks > 2 * g.stride + 2) continue;  // taps far apart: each reads its own
      std::vector<bool> needed(static_cast<size_t>(chunks * width), false);
      for (const StridedTap& tap : g.taps) {
        for (int i = 0; i < lanes; ++i) needed[tap.offset - lo + g.stride * i] = true;
      }
      llvm::Type* mem_ty = memory_type(ctx_, mem_t);
      llvm::Type* elem = mem_ty->getScalarType();
      llvm::Value* first = b_.CreateAdd(to_offset(emit(g.base), g.base.dtype()), b_.getInt64(lo));
      llvm::Value* start = b_.CreateInBoundsGEP(elem, lookup(g.buffer->data.as<Var>()), first);
      std::vector<llvm::Value*> loaded;
      for (int64_t k = 0; k < chunks; ++k) {
        std::vector<llvm::Constant*> mask(width);
        int count = 0;
        for (int p = 0; p < width; ++p) {
          bool take = needed[k * width + p];
          count += take;
          mask[p] = llvm::ConstantInt::getBool(ctx_, take);
        }
        llvm::Value* ptr = b_.CreateInBoundsGEP(elem, start, b_.getInt64(k * width));
        llvm::Value* chunk = llvm::Constant::getNullValue(mem_ty);
        if (count == width) {
          chunk = b_.CreateAlignedLoad(mem_ty, ptr, element_align(g.buffer));
        } else if (count > 0) {
          chunk = b_.CreateMaskedLoad(mem_ty, ptr, element_align(g.buffer),
                                      llvm::ConstantVector::get(mask), chunk);
        }
        if (count > 0) annotate(chunk, g.buffer);
        loaded.push_back(chunk);
      }
      for (const StridedTap& tap : g.taps) {
        if (fs_.values.count(tap.load)) continue;
        int64_t from = (tap.offset - lo) / width;
        int64_t to = (tap.offset - lo + g.stride * (lanes - 1)) / width;
        std::vector<llvm::Value*> parts(loaded.begin() + from, loaded.begin() + to + 1);
        llvm::Value* v = parts.size() == 1 ? parts[0] : concat_vectors(parts);
        std::vector<int> pick(lanes);
        for (int i = 0; i < lanes; ++i) {
          pick[i] = static_cast<int>(tap.offset - lo - from * width + g.stride * i);
        }
        v = from_memory(b_, b_.CreateShuffleVector(v, pick), t);
        fs_.values.emplace(tap.load, v);
        fs_.value_order.push_back(tap.load);
        std::vector<Expr>& seen = fs_.unconditional_loads[tap.load->buffer.get()];
        if (seen.size() < kMaxRememberedLoads) seen.push_back(tap.load->index);
      }
    }
  }

  // The vectors one after another (pairwise; an odd one out is padded with zeros).
  llvm::Value* concat_vectors(std::vector<llvm::Value*> parts) {
    while (parts.size() > 1) {
      std::vector<llvm::Value*> next;
      for (size_t i = 0; i < parts.size(); i += 2) {
        llvm::Value* a = parts[i];
        int width =
            static_cast<int>(llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements());
        llvm::Value* b =
            i + 1 < parts.size() ? parts[i + 1] : llvm::Constant::getNullValue(a->getType());
        std::vector<int> both(2 * width);
        for (int j = 0; j < 2 * width; ++j) both[j] = j;
        next.push_back(b_.CreateShuffleVector(a, b, both));
      }
      parts = std::move(next);
    }
    return parts[0];
  }

  // A contiguous load of a lane count that is not a power of two and has an odd part of 3 or
  // more (a 7x7 image's rows): x86 has no such width, and a plain load may not read past its
  // lanes, so LLVM splits it into power-of-two pieces (4 + 2 + 1 lanes: three loads and two
  // inserts). With AVX-512 a load of the next power of two masked to the first lanes is one
  // instruction that reads nothing beyond them.
  static bool odd_width_load(DataType t) {
    int lanes = t.lanes();
    if (lanes < 3 || lanes > 64 || (lanes & (lanes - 1)) == 0) return false;
    int odd = lanes;
    while (odd % 2 == 0) odd /= 2;
    return odd >= 3 && (t.is_float() || t.is_int() || t.is_uint()) && t.bits() >= 32;
  }

  // Only the kernel's inputs: a buffer this kernel writes (a stack accumulator) would be
  // stored in pieces just before the load, which a masked load cannot take from the store
  // buffer (and an alloca read by a masked load stays in memory): ten times slower.
  bool read_only_argument(const Buffer& buf) const {
    auto it = alias_group_.find(buf->data.get());
    return it != alias_group_.end() && it->second == 0;
  }

  // An output argument this kernel never reads (a masked store cannot forward to a later load:
  // an output accumulated in place was 8x slower): an odd-width store narrower than a 64-byte
  // vector (a 28-wide row's 12-lane tail, a padded row's 10) as one masked store of the next
  // power of two, which writes nothing beyond its lanes, instead of the pieces LLVM splits it
  // into (8 + 4 lanes: two stores and an extract).
  bool written_argument(const Buffer& buf) const { return write_only_.count(buf->data.get()) > 0; }

  llvm::Value* padded_store(llvm::Value* value, llvm::Value* ptr, llvm::Align align) {
    auto* vty = llvm::cast<llvm::FixedVectorType>(value->getType());
    int lanes = static_cast<int>(vty->getNumElements());
    int wide = 1;
    while (wide < lanes) wide *= 2;
    std::vector<int> pick(wide, -1);
    std::vector<llvm::Constant*> first(wide);
    for (int i = 0; i < wide; ++i) {
      if (i < lanes) pick[i] = i;
      first[i] = llvm::ConstantInt::getBool(ctx_, i < lanes);
    }
    return b_.CreateMaskedStore(b_.CreateShuffleVector(value, pick), ptr, align,
                                llvm::ConstantVector::get(first));
  }

  llvm::Value* padded_load(const Load* op, llvm::Value* ptr, llvm::Align align) {
    DataType t = op->dtype;
    int lanes = t.lanes();
    int wide = 1;
    while (wide < lanes) wide *= 2;
    llvm::Type* wide_ty = llvm::FixedVectorType::get(memory_type(ctx_, t)->getScalarType(), wide);
    std::vector<llvm::Constant*> first(wide);
    for (int i = 0; i < wide; ++i) first[i] = llvm::ConstantInt::getBool(ctx_, i < lanes);
    llvm::Value* loaded = b_.CreateMaskedLoad(wide_ty, ptr, align, llvm::ConstantVector::get(first),
                                              llvm::Constant::getNullValue(wide_ty));
    annotate(loaded, op->buffer);
    std::vector<int> keep(lanes);
    for (int i = 0; i < lanes; ++i) keep[i] = i;
    return b_.CreateShuffleVector(loaded, keep);
  }

  // The load of op's lanes, masked by `mask` (a vector of i1) if given.
  llvm::Value* load_lanes(const Load* op, llvm::Value* mask) {
    DataType t = op->dtype;
    int lanes = t.lanes();
    llvm::Type* mem_ty = memory_type(ctx_, t);
    llvm::Align align = element_align(op->buffer);
    if (const auto* ramp = op->index.as<Ramp>(); ramp && (t.is_float() || t.bits() >= 8)) {
      auto stride = as_const_int(ramp->stride);
      if (stride && *stride >= 2 && *stride <= kMaxShuffledStride && lanes >= 4) {
        return strided_load(op, ramp, *stride, mask);
      }
    }
    Address addr = address_of(op->buffer, op->index);
    llvm::Value* zero = llvm::Constant::getNullValue(mem_ty);
    llvm::Value* v = nullptr;
    switch (addr.kind) {
      case AccessKind::kScalar:
        v = b_.CreateAlignedLoad(mem_ty, addr.ptr, align);
        break;
      case AccessKind::kContiguous:
        if (!mask && avx512_ && odd_width_load(t) && read_only_argument(op->buffer)) {
          return from_memory(b_, padded_load(op, addr.ptr, align), t);
        }
        v = mask ? static_cast<llvm::Value*>(
                       b_.CreateMaskedLoad(mem_ty, addr.ptr, align, mask, zero))
                 : b_.CreateAlignedLoad(mem_ty, addr.ptr, align);
        break;
      case AccessKind::kBroadcast:
        if (!mask) {
          llvm::LoadInst* one = b_.CreateAlignedLoad(mem_ty->getScalarType(), addr.ptr, align);
          annotate(one, op->buffer);
          return from_memory(b_, b_.CreateVectorSplat(lanes, one), t);
        }
        v = b_.CreateMaskedGather(mem_ty, b_.CreateVectorSplat(lanes, addr.ptr), align, mask, zero);
        break;
      case AccessKind::kGather:
        v = b_.CreateMaskedGather(mem_ty, addr.ptr, align, mask ? mask : all_lanes(lanes), zero);
        break;
    }
    annotate(v, op->buffer);
    return from_memory(b_, v, t);
  }

  // cond ? value() : 0, evaluating value() only when cond holds.
  llvm::Value* guarded(llvm::Value* cond, const std::function<llvm::Value*()>& value, DataType t) {
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(cond); c && c->isOne()) return value();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "guarded", fs_.fn);
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "guarded.end", fs_.fn);
    b_.CreateCondBr(cond, then_bb, merge);
    b_.SetInsertPoint(then_bb);
    llvm::Value* v = nullptr;
    {
      ValueRegion region(this);
      v = value();
    }
    llvm::BasicBlock* then_end = b_.GetInsertBlock();
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
    llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2);
    phi->addIncoming(v, then_end);
    phi->addIncoming(llvm::Constant::getNullValue(register_type(ctx_, t)), pre);
    return phi;
  }

  void emit_store(const Store* op) {
    DataType t = op->value.dtype();
    int lanes = t.lanes();
    if (lanes > 1) share_strided_loads(op->value);
    current_store_ = op;
    llvm::Value* value = to_memory(b_, emit(op->value), t);
    current_store_ = nullptr;
    llvm::Value* pred = op->predicate.defined() ? emit(op->predicate) : nullptr;
    if (pred && lanes == 1) {  // a scalar predicate: a branch around the store
      llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "store", fs_.fn);
      llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "store.end", fs_.fn);
      b_.CreateCondBr(pred, then_bb, merge);
      b_.SetInsertPoint(then_bb);
      store_lanes(op, value, nullptr);
      b_.CreateBr(merge);
      b_.SetInsertPoint(merge);
      return;
    }
    store_lanes(op, value, pred);
  }

  void store_lanes(const Store* op, llvm::Value* value, llvm::Value* mask) {
    int lanes = op->value.dtype().lanes();
    llvm::Align align = element_align(op->buffer);
    Address addr = address_of(op->buffer, op->index);
    llvm::Value* s = nullptr;
    switch (addr.kind) {
      case AccessKind::kScalar:
        s = b_.CreateAlignedStore(value, addr.ptr, align);
        break;
      case AccessKind::kContiguous:
        if (mask && within_stack_buffer(op->buffer, op->index, lanes)) {
          // A stack buffer is this thread's own and every lane lies inside it: keep the
          // unselected lanes' old values and store whole. A masked store there (a reduction
          // tail's partial accumulator) keeps the buffer in memory, and the full-width reads
          // after it miss store forwarding.
          llvm::Value* old = b_.CreateAlignedLoad(value->getType(), addr.ptr, align);
          value = b_.CreateSelect(mask, value, old);
          mask = nullptr;
        }
        if (!mask && avx512_ && odd_width_load(op->value.dtype()) &&
            op->value.dtype().bits() * lanes < 512 && written_argument(op->buffer)) {
          s = padded_store(value, addr.ptr, align);
          break;
        }
        s = mask ? static_cast<llvm::Value*>(b_.CreateMaskedStore(value, addr.ptr, align, mask))
                 : b_.CreateAlignedStore(value, addr.ptr, align);
        break;
      case AccessKind::kBroadcast:
        if (!mask) {  // every lane writes the same element: the last one wins, as in a scatter
          s = b_.CreateAlignedStore(b_.CreateExtractElement(value, lanes - 1), addr.ptr, align);
          break;
        }
        s = b_.CreateMaskedScatter(value, b_.CreateVectorSplat(lanes, addr.ptr), align, mask);
        break;
      case AccessKind::kGather:
        s = b_.CreateMaskedScatter(value, addr.ptr, align, mask ? mask : all_lanes(lanes));
        break;
    }
    annotate(s, op->buffer);
  }

  // ---------------------------------------------------------------- expressions

  llvm::Value* emit(const Expr& e) {
    PTB_ICHECK(e.defined(), "undefined expression");
    ExprKind k = e->kind;
    if (k == ExprKind::kIntImm || k == ExprKind::kFloatImm || k == ExprKind::kVar) {
      return emit_node(e);
    }
    if (k == ExprKind::kLoad && !transpose_taps_.empty()) {
      // Only as the value of its own store in the run: the same load node elsewhere (a shared
      // subexpression) may come after a write to its buffer, or not be dominated by the run.
      auto tap = transpose_taps_.find(e.get());
      if (tap != transpose_taps_.end() && tap->second.store == current_store_) {
        return transposed_column(tap->second.group, tap->second.column, e.dtype());
      }
    }
    auto it = fs_.values.find(e.get());
    if (it != fs_.values.end()) return it->second;
    check_stack();
    llvm::Value* v = emit_node(e);
    if (fs_.values.emplace(e.get(), v).second) fs_.value_order.push_back(e.get());
    if (k == ExprKind::kLoad && fs_.branch_depth == 0 && !e.as<Load>()->predicate.defined() &&
        masks_.empty()) {
      std::vector<Expr>& loads = fs_.unconditional_loads[e.as<Load>()->buffer.get()];
      if (loads.size() < kMaxRememberedLoads) loads.push_back(e.as<Load>()->index);
    }
    return v;
  }

  llvm::Value* emit_node(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntImm:
        return make_int_constant(ctx_, e.dtype(), e.as<IntImm>()->value);
      case ExprKind::kFloatImm:
        return make_float_constant(ctx_, e.dtype(), e.as<FloatImm>()->value);
      case ExprKind::kVar:
        return lookup(e.as<Var>());
      case ExprKind::kCast: {
        const auto* op = e.as<Cast>();
        return emit_cast(b_, emit(op->value), op->value.dtype(), op->dtype);
      }
#define PTB_BINARY_CASE(T)                                       \
  case ExprKind::k##T: {                                         \
    const auto* op = e.as<T>();                                  \
    llvm::Value* a = emit(op->a);                                \
    llvm::Value* c = emit(op->b);                                \
    return emit_binary(b_, BinaryOp::k##T, a, c, op->a.dtype()); \
  }
        PTB_BINARY_CASE(Add)
        PTB_BINARY_CASE(Sub)
        PTB_BINARY_CASE(Mul)
        PTB_BINARY_CASE(Div)
        PTB_BINARY_CASE(Mod)
        PTB_BINARY_CASE(FloorDiv)
        PTB_BINARY_CASE(FloorMod)
#define PTB_MINMAX_CASE(T)                                                              \
  case ExprKind::k##T: {                                                                \
    const auto* op = e.as<T>();                                                         \
    llvm::Value* a = emit(op->a);                                                       \
    llvm::Value* c = emit(op->b);                                                       \
    if (avx512_ && op->a.dtype().is_float() && minmax_avx512_applies(a))                \
      return emit_minmax_avx512(b_, BinaryOp::k##T, a, c, op->b.as<Load>() != nullptr); \
    return emit_binary(b_, BinaryOp::k##T, a, c, op->a.dtype());                        \
  }
        PTB_MINMAX_CASE(Min)
        PTB_MINMAX_CASE(Max)
#undef PTB_MINMAX_CASE
        PTB_BINARY_CASE(EQ)
        PTB_BINARY_CASE(NE)
        PTB_BINARY_CASE(LT)
        PTB_BINARY_CASE(LE)
        PTB_BINARY_CASE(GT)
        PTB_BINARY_CASE(GE)
        PTB_BINARY_CASE(And)
        PTB_BINARY_CASE(Or)
#undef PTB_BINARY_CASE
      case ExprKind::kNot:
        return b_.CreateNot(emit(e.as<Not>()->a));
      case ExprKind::kSelect: {
        const auto* op = e.as<Select>();
        if (llvm::Value* v = emit_select_of_masked_load(op)) return v;
        llvm::Value* cond = emit(op->condition);
        if (llvm::Value* v = emit_select_of_operand(cond, op->true_value, op->false_value)) {
          return v;
        }
        llvm::Value* t = emit(op->true_value);
        llvm::Value* f = emit(op->false_value);
        return b_.CreateSelect(cond, t, f);
      }
      case ExprKind::kCall:
        return emit_call(e.as<Call>());
      case ExprKind::kLet: {
        const auto* op = e.as<Let>();
        llvm::Value* value = emit(op->value);
        ValueRegion region(this);
        llvm::Value* prev = bind(op->var.get(), value);
        llvm::Value* v = emit(op->body);
        unbind(op->var.get(), prev);
        return v;
      }
      case ExprKind::kLoad:
        return emit_load(e.as<Load>());
      case ExprKind::kRamp:
        return emit_ramp(e.as<Ramp>());
      case ExprKind::kBroadcast: {
        const auto* op = e.as<Broadcast>();
        return b_.CreateVectorSplat(op->lanes, emit(op->value));
      }
      case ExprKind::kTensorRead:
      case ExprKind::kReduce:
        internal_error(__FILE__, __LINE__,
                       "a tensor-level expression reached codegen; lowering must remove it");
    }
    internal_error(__FILE__, __LINE__, "unknown expression kind");
  }

  llvm::Value* emit_ramp(const Ramp* op) {
    DataType t = op->dtype;
    DataType elem = t.element_of();
    llvm::Value* base = b_.CreateVectorSplat(op->lanes, emit(op->base));
    llvm::Value* stride = b_.CreateVectorSplat(op->lanes, emit(op->stride));
    std::vector<llvm::Constant*> steps;
    for (int i = 0; i < op->lanes; ++i) {
      steps.push_back(llvm::cast<llvm::Constant>(
          elem.is_float() ? make_float_constant(ctx_, elem, i) : make_int_constant(ctx_, elem, i)));
    }
    llvm::Value* offsets =
        emit_binary(b_, BinaryOp::kMul, stride, llvm::ConstantVector::get(steps), t);
    return emit_binary(b_, BinaryOp::kAdd, base, offsets, t);
  }

  llvm::Value* emit_call(const Call* op) {
    if (op->op == Intrinsic::kIfThenElse) return emit_if_then_else(op);
    if (op->op == Intrinsic::kPrefetch) return emit_prefetch(op);
    std::vector<llvm::Value*> args;
    for (const Expr& a : op->args) args.push_back(emit(a));
    // Integer bit operations, not math functions: plain instructions.
    if (is_bitwise_intrinsic(op->op)) return emit_bitwise(b_, op->op, args, op->dtype);
    DataType t = op->op == Intrinsic::kIsNan ? op->args[0].dtype() : op->dtype;
    return emit_math(b_, op->op, args, t, *vector_math_, avx512_);
  }

  // prefetch(x[i], level): llvm.prefetch of x + i into cache level 1 (locality 3, x86's
  // prefetcht0) or 2 (locality 2, prefetcht1). The address is computed without "inbounds": a
  // prefetch may point past the end of the buffer (the hint never faults). An unresolved
  // request (three arguments) emits nothing.
  llvm::Value* emit_prefetch(const Call* op) {
    llvm::Value* zero = b_.getInt32(0);
    if (op->args.size() != 2) return zero;
    const auto* load = op->args[0].as<Load>();
    PTB_ICHECK(load && load->index.dtype().is_scalar(), "prefetch of a non-scalar read");
    llvm::Value* base = lookup(load->buffer->data.as<Var>());
    llvm::Type* elem = memory_type(ctx_, load->buffer->dtype.element_of());
    llvm::Value* ptr = b_.CreateGEP(elem, base, to_offset(emit(load->index), load->index.dtype()));
    llvm::Function* fn =
        llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::prefetch, {ptr->getType()});
    int locality = *as_const_int(op->args[1]) == 1 ? 3 : 2;
    llvm::CallInst* call =
        b_.CreateCall(fn, {ptr, b_.getInt32(0), b_.getInt32(locality), b_.getInt32(1)});
    // The buffer's alias scope, as its loads have: without it LLVM cannot tell that the call
    // leaves the other buffers alone, and LICM keeps the stores to a register block that the
    // loop updates (an accumulator buffer read back after the loop) inside the loop, one per
    // accumulator per iteration.
    annotate(call, load->buffer);
    return zero;
  }

  // `select(c, x op y, x)` emitted as `x op select(c, y, identity)`, and `select(c, x, x op y)`
  // as `x op select(c, identity, y)`, for op in + - * (identity 0 or 1; for floats -0.0 for +
  // and +0.0 for -, which leave every x as it is, signed zeros, NaN and infinities included).
  // The value is the same in every lane; what changes is that x no longer flows through the
  // select: a chain `e = if_then_else(c_k, e + 1, e)` becomes a chain of adds of a few selected
  // constants instead of a chain of masked merges, which LLVM's two-address pass handles in
  // linear time (5000 levels: 1.55 s -> 0.3 s to compile). Done here, after the lowering
  // passes, so the adds keep their written order (the long-sum regrouping never sees them).
  // x is matched by node identity (a shared subexpression is one node). nullptr when the sides
  // are not of that form.
  // select(c, x[i] if c, 0): the lanes of a load under c where c is false read nothing and are
  // zero, so the select is the load itself. (A padded row, topi's global pool of an odd
  // width, otherwise costs a blend with zero after each row's masked load.)
  llvm::Value* emit_select_of_masked_load(const Select* op) {
    const auto* load = op->true_value.as<Load>();
    if (load == nullptr || load->dtype.lanes() == 1 || !load->predicate.defined() ||
        !masks_.empty()) {
      return nullptr;
    }
    Expr f = op->false_value;
    if (const auto* bc = f.as<Broadcast>()) f = bc->value;
    const auto* fz = f.as<FloatImm>();
    bool zero = fz ? fz->value == 0.0 && !std::signbit(fz->value) : is_const_int(f, 0);
    if (!zero || !structurally_equal(load->predicate, op->condition)) return nullptr;
    return emit_load(load);
  }

  llvm::Value* emit_select_of_operand(llvm::Value* cond, const Expr& t, const Expr& f) {
    DataType type = t.dtype();
    if (!(type.is_float() || type.is_integer())) return nullptr;
    struct Match {
      BinaryOp op;
      Expr x, y;
      double identity;
    };
    auto match = [&](const Expr& v, const Expr& x) -> std::optional<Match> {
      const bool fp = type.is_float();
      if (const auto* a = v.as<Add>()) {
        if (a->a.same_as(x)) return Match{BinaryOp::kAdd, x, a->b, fp ? -0.0 : 0.0};
        if (a->b.same_as(x)) return Match{BinaryOp::kAdd, x, a->a, fp ? -0.0 : 0.0};
      } else if (const auto* m = v.as<Mul>()) {
        if (m->a.same_as(x)) return Match{BinaryOp::kMul, x, m->b, 1.0};
        if (m->b.same_as(x)) return Match{BinaryOp::kMul, x, m->a, 1.0};
      } else if (const auto* d = v.as<Sub>(); d && d->a.same_as(x)) {
        return Match{BinaryOp::kSub, x, d->b, 0.0};
      }
      return std::nullopt;
    };
    std::optional<Match> m = match(t, f);
    const bool operation_when_true = m.has_value();
    if (!m) m = match(f, t);
    if (!m || m->y.dtype() != type) return nullptr;
    llvm::Value* x = emit(m->x);
    llvm::Value* y = emit(m->y);
    llvm::Value* identity = type.is_float()
                                ? make_float_constant(ctx_, type, m->identity)
                                : make_int_constant(ctx_, type, static_cast<int64_t>(m->identity));
    llvm::Value* chosen = operation_when_true ? b_.CreateSelect(cond, y, identity)
                                              : b_.CreateSelect(cond, identity, y);
    return emit_binary(b_, m->op, x, chosen, type);
  }

  // Only the branch taken is evaluated, since it may guard a read that would be out of bounds.
  // A scalar condition branches; a lane-wise one evaluates both sides with the lanes that do
  // not take them masked off (their loads become masked loads), then selects.
  llvm::Value* emit_if_then_else(const Call* op) {
    llvm::Value* cond = emit(op->args[0]);
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(cond)) {
      return emit(op->args[c->isOne() ? 1 : 2]);
    }
    // When neither side can fault, both are evaluated and one is picked: no branch, and what
    // the sides share is computed once (`if_then_else(c, x + 1, x)` nested 5000 deep).
    if (masks_.empty() && speculatable(op->args[1]) && speculatable(op->args[2])) {
      if (llvm::Value* v = emit_select_of_operand(cond, op->args[1], op->args[2])) return v;
      llvm::Value* t = emit(op->args[1]);
      llvm::Value* f = emit(op->args[2]);
      return b_.CreateSelect(cond, t, f);
    }
    if (cond->getType()->isVectorTy()) {
      PTB_ICHECK(op->dtype.lanes() == op->args[0].dtype().lanes(), "if_then_else with a ",
                 op->args[0].dtype().str(), " condition and ", op->dtype.str(), " values");
      llvm::Value* outer = masks_.empty() ? nullptr : masks_.back();
      auto within = [&](llvm::Value* m) { return outer ? b_.CreateAnd(outer, m) : m; };
      masks_.push_back(within(cond));
      llvm::Value* t = nullptr;
      llvm::Value* f = nullptr;
      {
        ValueRegion region(this);  // loads under this mask are not valid under another
        t = emit(op->args[1]);
      }
      masks_.back() = within(b_.CreateNot(cond));
      {
        ValueRegion region(this);
        f = emit(op->args[2]);
      }
      masks_.pop_back();
      return b_.CreateSelect(cond, t, f);
    }
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "if_then", fs_.fn);
    llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, "if_else", fs_.fn);
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "if_end", fs_.fn);
    b_.CreateCondBr(cond, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    llvm::Value* t = nullptr;
    llvm::Value* f = nullptr;
    {
      ValueRegion region(this);  // values of one branch do not dominate the other
      t = emit(op->args[1]);
    }
    llvm::BasicBlock* then_end = b_.GetInsertBlock();
    b_.CreateBr(merge);
    b_.SetInsertPoint(else_bb);
    {
      ValueRegion region(this);
      f = emit(op->args[2]);
    }
    llvm::BasicBlock* else_end = b_.GetInsertBlock();
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
    llvm::PHINode* phi = b_.CreatePHI(t->getType(), 2);
    phi->addIncoming(t, then_end);
    phi->addIncoming(f, else_end);
    return phi;
  }

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  const Target& target_;
  llvm::IRBuilder<> b_;
  bool avx512_ = false;
  const std::vector<VectorMathVariant>* vector_math_ = nullptr;
  llvm::FunctionCallee parallel_for_, alloc_, free_, call_packed_;

  FunctionState fs_;
  std::unordered_map<VarKey, size_t> alias_group_;  // a buffer's alias scope group
  std::unordered_set<VarKey> write_only_;           // arguments stored to and never loaded
  std::vector<llvm::MDNode*> alias_scopes_;         // the scope of each group
  std::vector<llvm::Value*> masks_;  // lane masks of the enclosing lane-wise if_then_else
  // The transposed gathers of the blocks being emitted (TransposeScope), innermost last, and
  // each tap's group and column.
  std::vector<PendingTranspose> transposes_;
  struct TransposeTap {
    size_t group;
    int column;
    const Store* store;  // the store whose whole value the load is
  };
  std::unordered_map<const ExprNode*, TransposeTap> transpose_taps_;
  const Store* current_store_ = nullptr;  // the store emit_store is emitting
  int outlined_count_ = 0;
  // The kernel being emitted, for the names of its parallel loops, and how many it has so far.
  std::string kernel_label_;
  int parallel_count_ = 0;
  const StmtNode* versioned_root_ = nullptr;  // LoweredFunc::versioned's IfThenElse
  std::unordered_map<std::string, llvm::Value*> loop_names_;
};

}  // namespace

std::string kernel_symbol(const std::string& name) { return "ptb." + name; }

void emit_lowered_funcs(llvm::Module& module, llvm::TargetMachine& tm, const Target& target,
                        const std::vector<LoweredFunc>& funcs) {
  CodeGenLLVM cg(module, tm, target);
  for (const LoweredFunc& f : funcs) cg.add_function(f);
}

}  // namespace ptb
