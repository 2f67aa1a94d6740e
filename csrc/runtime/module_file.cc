#include "runtime/module_file.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <llvm/Config/llvm-config.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/CRC.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/codegen_llvm.h"
#include "codegen/cpu_features.h"
#include "codegen/jit.h"
#include "codegen/llvm_target.h"
#include "codegen/target.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "support/error.h"

namespace ptb {

namespace {

namespace json = llvm::json;

constexpr char kMagic[8] = {'P', 'T', 'B', 'M', 'O', 'D', '\r', '\n'};

// ---- expressions (sizes) as JSON trees ----

using BinaryMaker = Expr (*)(Expr, Expr);

const std::vector<std::pair<const char*, BinaryMaker>>& binary_ops() {
  static const std::vector<std::pair<const char*, BinaryMaker>> ops = {
      {"add", &Add::make},           {"sub", &Sub::make}, {"mul", &Mul::make},
      {"div", &Div::make},           {"mod", &Mod::make}, {"floordiv", &FloorDiv::make},
      {"floormod", &FloorMod::make}, {"min", &Min::make}, {"max", &Max::make},
  };
  return ops;
}

// The two-operand bitwise intrinsics, by their names (intrinsic_name); built as the te
// operators build them (ir/op.h), which check the operands' dtypes.
const std::vector<std::pair<const char*, BinaryMaker>>& bitwise_ops() {
  static const std::vector<std::pair<const char*, BinaryMaker>> ops = {
      {"bitwise_and", &bitwise_and}, {"bitwise_or", &bitwise_or},   {"bitwise_xor", &bitwise_xor},
      {"shift_left", &shift_left},   {"shift_right", &shift_right},
  };
  return ops;
}

// The name of a binary node, or nullptr when e is not one of binary_ops().
const char* binary_name(const Expr& e, const Expr** a, const Expr** b) {
#define PTB_BINARY(T, NAME)        \
  if (const auto* n = e.as<T>()) { \
    *a = &n->a;                    \
    *b = &n->b;                    \
    return NAME;                   \
  }
  PTB_BINARY(Add, "add")
  PTB_BINARY(Sub, "sub")
  PTB_BINARY(Mul, "mul")
  PTB_BINARY(Div, "div")
  PTB_BINARY(Mod, "mod")
  PTB_BINARY(FloorDiv, "floordiv")
  PTB_BINARY(FloorMod, "floormod")
  PTB_BINARY(Min, "min")
  PTB_BINARY(Max, "max")
#undef PTB_BINARY
  return nullptr;
}

int slot_index(const std::vector<Expr>& slots, const Expr& var) {
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].same_as(var)) return static_cast<int>(i);
  }
  return -1;
}

json::Value expr_to_json(const Expr& e, const std::vector<Expr>& slots) {
  if (const auto* imm = e.as<IntImm>()) {
    return json::Object{{"int", imm->value}, {"dtype", e.dtype().str()}};
  }
  if (const auto* v = e.as<Var>()) {
    return json::Object{
        {"var", slot_index(slots, e)}, {"name", v->name}, {"dtype", e.dtype().str()}};
  }
  if (const auto* c = e.as<Cast>()) {
    return json::Object{
        {"op", "cast"}, {"dtype", e.dtype().str()}, {"a", expr_to_json(c->value, slots)}};
  }
  const Expr* a = nullptr;
  const Expr* b = nullptr;
  if (const char* name = binary_name(e, &a, &b)) {
    return json::Object{
        {"op", name}, {"a", expr_to_json(*a, slots)}, {"b", expr_to_json(*b, slots)}};
  }
  if (const auto* c = e.as<Call>(); c != nullptr && is_bitwise_intrinsic(c->op)) {
    json::Object o{{"op", intrinsic_name(c->op)}, {"a", expr_to_json(c->args[0], slots)}};
    if (c->args.size() > 1) o.try_emplace("b", expr_to_json(c->args[1], slots));
    return o;
  }
  not_implemented("cannot save a module whose size expression ", to_string(e),
                  " uses an operation other than + - * / % // min max, bitwise ones and casts");
}

// Reading a manifest: every defect is a ValueError naming the file and the field.
class ManifestReader {
 public:
  explicit ManifestReader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& what) const {
    value_error(origin_, ": invalid module manifest: ", what);
  }

  const json::Object& object(const json::Value& v, const char* what) const {
    const json::Object* o = v.getAsObject();
    if (!o) fail(str_cat(what, " must be a JSON object"));
    return *o;
  }
  const json::Value& field(const json::Object& o, const char* key) const {
    const json::Value* v = o.get(key);
    if (!v) fail(str_cat("missing field '", key, "'"));
    return *v;
  }
  std::string str(const json::Object& o, const char* key) const {
    auto s = field(o, key).getAsString();
    if (!s) fail(str_cat("field '", key, "' must be a string"));
    return s->str();
  }
  int64_t integer(const json::Object& o, const char* key) const {
    auto i = field(o, key).getAsInteger();
    if (!i) fail(str_cat("field '", key, "' must be an integer"));
    return *i;
  }
  const json::Array& array(const json::Object& o, const char* key) const {
    const json::Array* a = field(o, key).getAsArray();
    if (!a) fail(str_cat("field '", key, "' must be an array"));
    return *a;
  }
  std::vector<std::string> strings(const json::Object& o, const char* key) const {
    std::vector<std::string> out;
    for (const json::Value& v : array(o, key)) {
      auto s = v.getAsString();
      if (!s) fail(str_cat("field '", key, "' must hold strings"));
      out.push_back(s->str());
    }
    return out;
  }
  DataType dtype(const json::Object& o) const {
    std::string name = str(o, "dtype");
    try {
      return DataType::parse(name);
    } catch (const UserError&) {
      fail(str_cat("unknown dtype '", name, "'"));
    }
  }
  int slot(int64_t index, size_t count) const {
    if (index < 0 || static_cast<size_t>(index) >= count) {
      fail(str_cat("slot ", index, " is out of range (the module has ", count, ")"));
    }
    return static_cast<int>(index);
  }

  Expr expr(const json::Value& v, const std::vector<Expr>& slots, int depth = 0) const {
    if (depth > 200) fail("a size expression is nested too deeply");
    const json::Object& o = object(v, "a size expression");
    if (o.get("int")) {
      DataType t = dtype(o);
      if (!t.is_integer()) fail(str_cat("an integer size has dtype ", t.str()));
      return IntImm::make(t, integer(o, "int"));
    }
    if (o.get("var")) {
      int64_t index = integer(o, "var");
      if (index < 0) return Var::make(dtype(o), str(o, "name"));
      return slots[static_cast<size_t>(slot(index, slots.size()))];
    }
    std::string op = str(o, "op");
    try {
      if (op == "cast") return Cast::make(dtype(o), expr(field(o, "a"), slots, depth + 1));
      for (const auto& [name, make] : binary_ops()) {
        if (op == name) {
          return make(expr(field(o, "a"), slots, depth + 1), expr(field(o, "b"), slots, depth + 1));
        }
      }
      if (op == "bitwise_not") return bitwise_not(expr(field(o, "a"), slots, depth + 1));
      for (const auto& [name, make] : bitwise_ops()) {
        if (op == name) {
          return make(expr(field(o, "a"), slots, depth + 1), expr(field(o, "b"), slots, depth + 1));
        }
      }
    } catch (const InternalError& e) {
      fail(str_cat("a size expression is ill-typed: ", e.what()));
    }
    fail(str_cat("unknown size operation '", op, "'"));
  }

 private:
  std::string origin_;
};

// ---- the container ----

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_section(std::string& out, const std::string& bytes) {
  put_u64(out, bytes.size());
  out += bytes;
}

uint32_t crc_of(const char* data, size_t n) {
  return llvm::crc32(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(data), n));
}

// The three sections of a file, after the magic, version, length and checksum checks.
struct Sections {
  std::string manifest, ir;
  std::vector<std::string> objects;
};

Sections split_file(const std::string& bytes, const std::string& origin) {
  size_t pos = 0;
  auto need = [&](size_t n, const char* what) {
    if (bytes.size() - pos < n) {
      value_error(origin, ": truncated module file: ", what, " needs ", n, " byte(s) at offset ",
                  pos, ", but the file has ", bytes.size(), " byte(s) in all");
    }
  };
  auto u32 = [&](const char* what) {
    need(4, what);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(bytes[pos + i])) << (8 * i);
    pos += 4;
    return v;
  };
  auto u64 = [&](const char* what) {
    need(8, what);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(bytes[pos + i])) << (8 * i);
    pos += 8;
    return v;
  };
  auto section = [&](const char* what) {
    uint64_t n = u64(what);
    if (n > bytes.size() - pos) {
      value_error(origin, ": truncated or corrupted module file: the ", what, " section says ", n,
                  " byte(s) at offset ", pos, ", but only ", bytes.size() - pos, " remain");
    }
    std::string out = bytes.substr(pos, n);
    pos += n;
    return out;
  };

  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    value_error(origin, ": not a pytvmbridge module file (it does not start with the magic bytes ",
                "\"PTBMOD\\r\\n\"; a file from Module.save/export_library does)");
  }
  pos = sizeof(kMagic);
  uint32_t version = u32("the format version");
  if (version != kModuleFileVersion) {
    value_error(origin, ": module file format version ", version, " is not supported; this ",
                "pytvmbridge reads version ", kModuleFileVersion,
                " (rebuild the module, or load it with the pytvmbridge that saved it)");
  }
  u32("the reserved field");
  Sections s;
  s.manifest = section("manifest");
  uint32_t count = u32("the object count");
  if (count > 16) {
    value_error(origin, ": corrupted module file: it says it holds ", count,
                " objects (a module has at most 2)");
  }
  for (uint32_t k = 0; k < count; ++k) s.objects.push_back(section("object code"));
  s.ir = section("LLVM IR");
  size_t body = pos;
  uint32_t stored = u32("the checksum");
  if (pos != bytes.size()) {
    value_error(origin, ": corrupted module file: ", bytes.size() - pos,
                " unexpected byte(s) after the checksum at offset ", pos);
  }
  if (crc_of(bytes.data(), body) != stored) {
    value_error(origin, ": corrupted module file: the CRC-32 checksum does not match its ",
                "contents (the file was damaged or modified after it was saved)");
  }
  return s;
}

std::vector<std::string> undefined_symbols(const std::string& object) {
  std::vector<std::string> out;
  auto file = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "module"));
  if (!file) {
    llvm::consumeError(file.takeError());
    return out;
  }
  for (const llvm::object::SymbolRef& sym : (*file)->symbols()) {
    auto flags = sym.getFlags();
    auto name = sym.getName();
    if (!flags || !name) {
      if (!flags) llvm::consumeError(flags.takeError());
      if (!name) llvm::consumeError(name.takeError());
      continue;
    }
    if ((*flags & llvm::object::SymbolRef::SF_Undefined) && !name->empty()) {
      out.push_back(name->str());
    }
  }
  return out;
}

json::Value parse_manifest(const std::string& text, const std::string& origin) {
  // LLVM's parser recurses once per nesting level with no limit: a manifest nested deeper than
  // any module's (size expressions are limited to 200 levels) is refused before it overflows
  // the stack. Brackets inside strings count too, which only makes the bound stricter.
  int depth = 0;
  for (char c : text) {
    depth += (c == '[' || c == '{') - (c == ']' || c == '}');
    if (depth > 1000) value_error(origin, ": corrupted module file: the manifest nests too deeply");
  }
  auto value = json::parse(text);
  if (!value) {
    value_error(origin, ": corrupted module file: the manifest is not valid JSON: ",
                llvm::toString(value.takeError()));
  }
  return std::move(*value);
}

// Refuses code this host cannot run: another architecture or OS, or CPU features it lacks.
void check_host(const json::Object& m, const ManifestReader& r, const std::string& origin) {
  llvm::Triple file_triple(r.str(m, "triple")), host(host_triple());
  if (file_triple.getArch() != host.getArch() || file_triple.getOS() != host.getOS()) {
    value_error(origin, ": the module was compiled for ", file_triple.str(),
                " and cannot run on this host (", host.str(), ")");
  }
  std::vector<std::string> missing;
  for (const std::string& f : r.strings(m, "cpu_features")) {
    auto it = host_cpu_features().find(f);
    if (it == host_cpu_features().end() || !it->second) missing.push_back(f);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& f : missing) list += (list.empty() ? "" : ", ") + f;
    value_error(origin, ": the module was compiled for CPU '", r.str(m, "cpu"),
                "' with instruction-set features this host (CPU '", host_cpu_name(),
                "') lacks: ", list, "; running it would fault. Rebuild it on this machine, or ",
                "export it from a build with target=\"llvm -mcpu=<a CPU both machines ",
                "support>\"");
  }
}

}  // namespace

std::string save_module_bytes(const Module& module, const std::string& producer, bool include_ir,
                              bool include_generic) {
  const JITModule& jit = module.jit();
  // The objects: the module's own JIT, and the strided variant's when it lives apart.
  std::vector<const JITModule*> jits = {&jit};
  std::shared_ptr<JITModule> generic = module.generic_jit(include_generic);
  if (generic && generic.get() != &jit) jits.push_back(generic.get());
  const std::vector<Expr>& slots = module.slots();
  json::Array slot_list;
  for (const Expr& v : slots) {
    slot_list.push_back(json::Object{{"name", v.as<Var>()->name}, {"dtype", v.dtype().str()}});
  }
  json::Array args;
  for (const ArgSpec& a : module.args()) {
    json::Array shape;
    for (const DimSpec& d : a.dims) {
      if (d.kind == DimSpec::Kind::kConst) {
        shape.push_back(d.value);
      } else if (d.kind == DimSpec::Kind::kVar) {
        shape.push_back(json::Object{
            {"var", d.slot}, {"name", d.expr.as<Var>()->name}, {"dtype", d.expr.dtype().str()}});
      } else {
        shape.push_back(
            json::Object{{"expr", expr_to_json(d.expr, slots)}, {"text", to_string(d.expr)}});
      }
    }
    json::Array strides;
    for (int s : a.stride_slots) strides.push_back(s);
    args.push_back(json::Object{{"name", a.name},
                                {"dtype", a.dtype.str()},
                                {"output", a.is_output},
                                {"shape", std::move(shape)},
                                {"stride_slots", std::move(strides)}});
  }
  json::Array internal;
  for (const InternalSize& s : module.internal_sizes()) {
    internal.push_back(
        json::Object{{"what", s.what}, {"expr", expr_to_json(s.expr, slots)}, {"size", s.is_size}});
  }
  json::Array reads;
  for (const ReadCheck& c : module.read_checks()) {
    json::Array loops;
    for (const Expr& e : c.loops) loops.push_back(expr_to_json(e, slots));
    reads.push_back(json::Object{{"what", c.what},
                                 {"lo", expr_to_json(c.lo, slots)},
                                 {"hi", expr_to_json(c.hi, slots)},
                                 {"extent", expr_to_json(c.extent, slots)},
                                 {"loops", std::move(loops)},
                                 {"nonempty", c.nonempty},
                                 {"divisor", c.divisor}});
  }
  json::Array functions, imports, features;
  std::vector<std::string> seen;
  for (size_t k = 0; k < jits.size(); ++k) {
    for (const std::string& f : jits[k]->function_names()) {
      const char* role = f == module.name() + "_compact" ? "compact" : "generic";
      functions.push_back(json::Object{{"name", f}, {"role", role}, {"object", int64_t(k)}});
    }
    for (const std::string& s : undefined_symbols(jits[k]->object_code())) {
      if (std::find(seen.begin(), seen.end(), s) == seen.end()) seen.push_back(s);
    }
  }
  for (const std::string& s : seen) imports.push_back(s);
  for (const std::string& f : target_cpu_features(jit.target())) features.push_back(f);
  std::string cpu = jit.target().cpu.empty() ? host_cpu_name() : jit.target().cpu;

  json::Object manifest{
      {"format", "pytvmbridge-module"},
      {"format_version", static_cast<int64_t>(kModuleFileVersion)},
      {"pytvmbridge_version", producer},
      {"llvm_version", LLVM_VERSION_STRING},
      {"triple", host_triple()},
      {"target", jit.target().str()},
      {"cpu", cpu},
      {"cpu_features", std::move(features)},
      {"name", module.name()},
      {"functions", std::move(functions)},
      {"slots", std::move(slot_list)},
      {"args", std::move(args)},
      {"internal_sizes", std::move(internal)},
      {"imports", std::move(imports)},
      {"lowered", module.lowered_text()},
      {"compile_seconds", module.compile_seconds()},
      {"pointwise", module.pointwise()},
      {"read_checks", std::move(reads)},
  };
  std::string manifest_text;
  llvm::raw_string_ostream os(manifest_text);
  os << llvm::formatv("{0:1}", json::Value(std::move(manifest)));
  os.flush();

  std::string out(kMagic, sizeof(kMagic));
  put_u32(out, kModuleFileVersion);
  put_u32(out, 0);
  put_section(out, manifest_text);
  put_u32(out, static_cast<uint32_t>(jits.size()));
  for (const JITModule* j : jits) put_section(out, j->object_code());
  put_section(out, include_ir ? jit.get_source("ll") : std::string());
  put_u32(out, crc_of(out.data(), out.size()));
  return out;
}

std::string llvm_version() { return LLVM_VERSION_STRING; }

std::string read_module_manifest(const std::string& bytes, const std::string& origin) {
  Sections s = split_file(bytes, origin);
  parse_manifest(s.manifest, origin);
  return s.manifest;
}

std::shared_ptr<Module> load_module_bytes(const std::string& bytes, const std::string& origin,
                                          GenericCompiler compile_generic) {
  auto start = std::chrono::steady_clock::now();
  Sections sections = split_file(bytes, origin);
  json::Value value = parse_manifest(sections.manifest, origin);
  ManifestReader r(origin);
  const json::Object& m = r.object(value, "the manifest");
  if (r.str(m, "format") != "pytvmbridge-module") r.fail("field 'format' is not a module's");
  check_host(m, r, origin);

  Target target;
  try {
    target = Target::parse(r.str(m, "target"));
  } catch (const UserError& e) {
    value_error(origin, ": the module's target cannot be used here: ", e.what());
  }
  std::vector<Expr> slots;
  for (const json::Value& v : r.array(m, "slots")) {
    const json::Object& o = r.object(v, "a slot");
    slots.push_back(Var::make(r.dtype(o), r.str(o, "name")));
  }
  std::vector<ArgSpec> specs;
  for (const json::Value& v : r.array(m, "args")) {
    const json::Object& o = r.object(v, "an argument");
    ArgSpec spec;
    spec.name = r.str(o, "name");
    spec.dtype = r.dtype(o);
    auto output = r.field(o, "output").getAsBoolean();
    if (!output) r.fail("field 'output' must be a boolean");
    spec.is_output = *output;
    for (const json::Value& d : r.array(o, "shape")) {
      DimSpec dim;
      if (auto c = d.getAsInteger()) {
        dim.kind = DimSpec::Kind::kConst;
        dim.value = *c;
      } else {
        const json::Object& od = r.object(d, "a dimension");
        if (od.get("var")) {
          dim.kind = DimSpec::Kind::kVar;
          dim.slot = r.slot(r.integer(od, "var"), slots.size());
          dim.expr = slots[static_cast<size_t>(dim.slot)];
        } else {
          dim.kind = DimSpec::Kind::kExpr;
          dim.expr = r.expr(r.field(od, "expr"), slots);
        }
      }
      spec.dims.push_back(std::move(dim));
    }
    for (const json::Value& s : r.array(o, "stride_slots")) {
      auto i = s.getAsInteger();
      if (!i) r.fail("field 'stride_slots' must hold integers");
      spec.stride_slots.push_back(r.slot(*i, slots.size()));
    }
    if (spec.stride_slots.size() != spec.dims.size()) {
      r.fail(str_cat("argument '", spec.name, "' has ", spec.dims.size(), " dimension(s) but ",
                     spec.stride_slots.size(), " stride slot(s)"));
    }
    specs.push_back(std::move(spec));
  }
  std::vector<InternalSize> internal;
  for (const json::Value& v : r.array(m, "internal_sizes")) {
    const json::Object& o = r.object(v, "an internal size");
    // Files saved before "size" existed check these extents for overflow only.
    std::optional<bool> is_size = false;
    if (const json::Value* flag = o.get("size")) is_size = flag->getAsBoolean();
    if (!is_size) r.fail("field 'size' of an internal size must be true or false");
    internal.push_back({r.str(o, "what"), r.expr(r.field(o, "expr"), slots), *is_size});
  }
  // Files saved before the field existed have no read checks.
  std::vector<ReadCheck> read_checks;
  if (m.get("read_checks")) {
    for (const json::Value& v : r.array(m, "read_checks")) {
      const json::Object& o = r.object(v, "a read check");
      ReadCheck c{r.str(o, "what"),
                  r.expr(r.field(o, "lo"), slots),
                  r.expr(r.field(o, "hi"), slots),
                  r.expr(r.field(o, "extent"), slots),
                  {}};
      for (const json::Value& e : r.array(o, "loops")) c.loops.push_back(r.expr(e, slots));
      // (files saved before the field existed hold reads only)
      if (const json::Value* flag = o.get("nonempty")) {
        std::optional<bool> nonempty = flag->getAsBoolean();
        if (!nonempty) r.fail("field 'nonempty' of a read check must be true or false");
        c.nonempty = *nonempty;
      }
      if (const json::Value* divisor = o.get("divisor")) {
        std::optional<int64_t> d = divisor->getAsInteger();
        if (!d || *d < 0) r.fail("field 'divisor' of a read check must be an integer >= 0");
        c.divisor = *d;
      }
      read_checks.push_back(std::move(c));
    }
  }
  std::string name = r.str(m, "name");
  // Which object holds which function.
  std::vector<std::vector<std::string>> names(sections.objects.size());
  std::string compact_name, generic_name;
  size_t compact_object = 0, generic_object = 0;
  for (const json::Value& v : r.array(m, "functions")) {
    const json::Object& o = r.object(v, "a function");
    std::string fn = r.str(o, "name"), role = r.str(o, "role");
    int64_t k = r.integer(o, "object");
    if (k < 0 || static_cast<size_t>(k) >= names.size()) {
      r.fail(str_cat("function '", fn, "' is in object ", k, " of ", names.size()));
    }
    names[static_cast<size_t>(k)].push_back(fn);
    if (role == "compact") {
      compact_name = fn;
      compact_object = static_cast<size_t>(k);
    } else if (role == "generic") {
      generic_name = fn;
      generic_object = static_cast<size_t>(k);
    } else {
      r.fail(str_cat("function '", fn, "' has the unknown role '", role, "'"));
    }
  }
  if (compact_name.empty()) r.fail("the module has no compact function");
  std::vector<std::shared_ptr<JITModule>> jits;
  for (size_t k = 0; k < sections.objects.size(); ++k) {
    // The IR is the compact variant's (the module's own JIT).
    std::string ir = k == compact_object ? sections.ir : std::string();
    jits.push_back(JITModule::load(sections.objects[k], names[k], target, std::move(ir), name));
  }
  std::shared_ptr<JITModule> jit = jits[compact_object];
  KernelFn generic_fn = nullptr;
  if (!generic_name.empty()) {
    std::shared_ptr<JITModule> holder = jits[generic_object];
    KernelFn fn = holder->lookup(generic_name);
    if (holder == jit) {
      generic_fn = fn;
    } else {
      compile_generic = [holder, fn] { return std::make_pair(holder, fn); };
    }
  } else if (!compile_generic) {
    compile_generic = [name, origin]() -> std::pair<std::shared_ptr<JITModule>, KernelFn> {
      value_error("kernel '", name, "' was loaded from ", origin,
                  ", saved without its variant for strided arrays: pass contiguous arrays, or ",
                  "save the module with Module.save/export_library, which include it");
    };
  }
  auto module = std::make_shared<Module>(name, std::move(specs), std::move(slots), jit, generic_fn,
                                         jit->lookup(compact_name), r.str(m, "lowered"),
                                         std::move(compile_generic));
  module->set_internal_sizes(std::move(internal));
  module->set_read_checks(std::move(read_checks));
  // Files saved before this field existed run such arrays through the strided variant.
  if (const json::Value* pointwise = m.get("pointwise")) {
    std::optional<bool> flag = pointwise->getAsBoolean();
    if (!flag) r.fail("field 'pointwise' must be true or false");
    module->set_pointwise(*flag);
  }
  module->set_compile_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  module->set_loaded(true);
  return module;
}

}  // namespace ptb
