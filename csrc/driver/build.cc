#include "driver/build.h"

#include <algorithm>
#include <chrono>

#include "codegen/cpu_features.h"
#include "codegen/jit.h"
#include "codegen/target.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "lower/lower.h"
#include "lower/specialize_strides.h"
#include "support/error.h"
#include "support/phase_timer.h"
#include "support/stack.h"
#include "te/pointwise.h"
#include "te/read_bounds.h"

namespace ptb {

namespace {

int slot_of(const std::vector<Expr>& slots, const Expr& var) {
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].same_as(var)) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

static std::shared_ptr<Module> build_module_here(const Schedule& sch,
                                                 const std::vector<Tensor>& args,
                                                 const std::string& target,
                                                 const std::string& name) {
  auto start = std::chrono::steady_clock::now();
  Target tgt = Target::parse(target);
  // Constant reads out of range are refused here, before anything is compiled.
  std::vector<ReadBound> bounds = read_bounds(args);
  PhaseTimer timer("lower " + name);  // the LLVM phases print their own line
  LoweredFunc generic = lower(sch, args, name);
  timer.mark("lower");
  LoweredFunc compact = specialize_compact(generic, name + "_compact");
  timer.mark("specialize");

  std::vector<ArgSpec> specs;
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = args[i];
    ArgSpec spec;
    spec.name = t.name();
    spec.dtype = t.dtype();
    spec.is_output = t.op()->kind != OpKind::kPlaceholder;
    for (const Expr& dim : t.shape()) {
      DimSpec d;
      if (const auto* imm = dim.as<IntImm>()) {
        d.kind = DimSpec::Kind::kConst;
        d.value = imm->value;
      } else if (dim.as<Var>()) {
        d.kind = DimSpec::Kind::kVar;
        d.expr = dim;
        d.slot = slot_of(generic.scalar_params, dim);
        PTB_ICHECK(d.slot >= 0, "size var of ", t.name(), " has no slot");
      } else {
        d.kind = DimSpec::Kind::kExpr;
        d.expr = dim;
      }
      spec.dims.push_back(d);
    }
    for (const Expr& stride : generic.args[i]->strides) {
      spec.stride_slots.push_back(slot_of(generic.scalar_params, stride));
    }
    specs.push_back(std::move(spec));
  }

  // Extents computed from the sizes inside the kernel (n * m): the runtime checks that they fit
  // their types, as it does for the arguments' sizes.
  std::vector<InternalSize> internal;
  for (const Stage& st : sch->stages) {
    if (st->is_placeholder()) continue;
    for (const IterVar& iv : st->root_iter_vars) {
      const Expr& e = iv->dom.extent;
      if (e.as<IntImm>() || e.as<Var>()) continue;
      bool bound = true;
      for_each_expr(e, [&](const Expr& x) {
        if (x.as<Var>() && slot_of(generic.scalar_params, x) < 0) bound = false;
      });
      if (bound) {
        internal.push_back(
            {str_cat("axis '", iv->var.as<Var>()->name, "' of stage '", st->op->name, "'"), e,
             iv->kind == IterKind::kDataPar});
      }
    }
  }

  // Only the compact variant is compiled now; the strided one when strided arrays first come.
  auto jit = JITModule::compile({compact}, tgt, name);
  KernelFn compact_fn = jit->lookup(compact.name);
  GenericCompiler compile_generic = [generic, tgt, name] {
    return on_deep_stack([&] { return compile_strided_variant(generic, tgt, name); });
  };
  auto module =
      std::make_shared<Module>(name, std::move(specs), generic.scalar_params, jit, nullptr,
                               compact_fn, to_string(generic.body), std::move(compile_generic));
  module->set_internal_sizes(std::move(internal));
  module->set_features_host_lacks(features_host_lacks(tgt));
  module->set_pointwise(is_pointwise(args));
  // The other read ranges, checked at call time: those over size variables the call binds.
  std::vector<ReadCheck> checks;
  for (ReadBound& b : bounds) {
    bool bound = true;
    auto all_bound = [&](const Expr& e) {
      for_each_expr(e, [&](const Expr& x) {
        if (x.as<Var>() && slot_of(generic.scalar_params, x) < 0) bound = false;
      });
    };
    all_bound(b.lo);
    all_bound(b.hi);
    all_bound(b.extent);
    for (const Expr& e : b.loops) all_bound(e);
    if (bound) {
      checks.push_back(
          {std::move(b.what), b.lo, b.hi, b.extent, std::move(b.loops), b.nonempty, b.divisor});
    }
  }
  module->set_read_checks(std::move(checks));
  module->set_compile_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return module;
}

std::pair<std::shared_ptr<JITModule>, KernelFn> compile_strided_variant(const LoweredFunc& generic,
                                                                        const Target& target,
                                                                        const std::string& name) {
  auto jit = JITModule::compile({specialize_unit_stride(generic)}, target, name);
  KernelFn fn = jit->lookup(generic.name);
  return {std::move(jit), fn};
}

std::shared_ptr<Module> build_module(const Schedule& sch, const std::vector<Tensor>& args,
                                     const std::string& target, const std::string& name) {
  // Lowering and LLVM recurse as deep as the expressions are: a build always runs on a deep
  // stack (LLVM's recursion cannot be guarded from outside).
  return on_deep_stack([&] { return build_module_here(sch, args, target, name); });
}

}  // namespace ptb
