// TC front end, meaning: semantic errors with their positions, the te stages built for the
// classic TC programs (shapes, dtypes, number of stages) and the call-time checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "ir/printer.h"
#include "support/error.h"
#include "tc/tc.h"

namespace ptb::tc {
namespace {

TcFunction one(const std::string& text) {
  auto fns = compile_tc(text);
  EXPECT_EQ(fns.size(), 1u);
  return std::move(fns.at(0));
}

std::string shape_of(const Tensor& t) {
  std::string s;
  for (const Expr& d : t.shape()) s += (s.empty() ? "" : ", ") + to_string(d);
  return "(" + s + ")";
}

// Every compute stage reachable from the outputs.
std::vector<Operation> stages(const TcFunction& f) {
  std::vector<Operation> out;
  std::vector<Operation> todo;
  for (const Tensor& t : f.outputs) todo.push_back(t.op());
  std::set<const OperationNode*> seen;
  while (!todo.empty()) {
    Operation op = todo.back();
    todo.pop_back();
    if (!seen.insert(op.get()).second || op->kind != OpKind::kCompute) continue;
    out.push_back(op);
    for (const Tensor& t : op->input_tensors()) todo.push_back(t.op());
  }
  return out;
}

TCError compile_error(const std::string& text) {
  try {
    compile_tc(text);
  } catch (const TCError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a TCError for:\n" << text;
  return SourceText("").make_error({0, 0}, "none");
}

std::string value_error_of(const TcFunction& f, std::vector<std::vector<int64_t>> shapes) {
  try {
    f.prepare(shapes, nullptr);
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a ValueError";
  return "";
}

TEST(TcToTe, Matmul) {
  TcFunction f = one(R"(
    def matmul(float(M, K) A, float(K, N) B) -> (C) {
      C(m, n) +=! A(m, r_k) * B(r_k, n)
    })");
  EXPECT_EQ(f.name, "matmul");
  ASSERT_EQ(f.inputs.size(), 2u);
  ASSERT_EQ(f.outputs.size(), 1u);
  EXPECT_EQ(f.outputs[0].name(), "C");
  EXPECT_EQ(shape_of(f.outputs[0]), "(M, N)");
  EXPECT_EQ(f.outputs[0].dtype(), DataType::Float(32));
  // The size K is one variable shared by A and B.
  EXPECT_TRUE(f.inputs[0].shape()[1].same_as(f.inputs[1].shape()[0]));
  auto ops = stages(f);
  ASSERT_EQ(ops.size(), 1u);
  const auto* c = static_cast<const ComputeOpNode*>(ops[0].get());
  ASSERT_EQ(c->reduce_axis.size(), 1u);
  EXPECT_EQ(to_string(c->reduce_axis[0]->dom.extent), "K");
  EXPECT_TRUE(f.checks.empty());  // every read is in bounds by construction
  EXPECT_EQ(f.prepare({{3, 4}, {4, 5}}, nullptr), (std::vector<std::vector<int64_t>>{{3, 5}}));
}

TEST(TcToTe, StridedConvolutionShapes) {
  TcFunction f = one(R"(
    def conv(float(N, C, H, W) I, float(M, C, KH, KW) W1) -> (O) {
      O(n, m, h, w) +=! I(n, c, 2 * h + kh, 2 * w + kw) * W1(m, c, kh, kw)
    })");
  EXPECT_EQ(shape_of(f.outputs[0]),
            "(N, M, (floordiv((H - KH), 2) + 1), (floordiv((W - KW), 2) + 1))");
  EXPECT_EQ(f.prepare({{1, 3, 9, 8}, {4, 3, 3, 2}}, nullptr),
            (std::vector<std::vector<int64_t>>{{1, 4, 4, 4}}));
  EXPECT_NE(value_error_of(f, {{1, 3, 2, 8}, {4, 3, 5, 2}}).find("would have size -1"),
            std::string::npos);
}

TEST(TcToTe, SoftmaxWithTemporaries) {
  TcFunction f = one(R"(
    def softmax(float(N, D) I) -> (O, maxVal, expDistance, expSum) {
      maxVal(n) max=! I(n, d)
      expDistance(n, d) = exp(I(n, d) - maxVal(n))
      expSum(n) +=! expDistance(n, d)
      O(n, d) = expDistance(n, d) / expSum(n)
    })");
  ASSERT_EQ(f.outputs.size(), 4u);
  EXPECT_EQ(f.output_names, (std::vector<std::string>{"O", "maxVal", "expDistance", "expSum"}));
  EXPECT_EQ(shape_of(f.outputs[0]), "(N, D)");
  EXPECT_EQ(shape_of(f.outputs[1]), "(N)");
  EXPECT_EQ(stages(f).size(), 4u);
}

TEST(TcToTe, MaxPoolingWithWhereClauses) {
  TcFunction f = one(R"(
    def maxpool(float(B, C, H, W) I) -> (O) {
      O(b, c, h, w) max=! I(b, c, 2 * h + kh, 2 * w + kw) where kh in 0:2, kw in 0:2
    })");
  EXPECT_EQ(shape_of(f.outputs[0]),
            "(B, C, (floordiv((H - 2), 2) + 1), (floordiv((W - 2), 2) + 1))");
}

TEST(TcToTe, UpdatesOfAnOutputMakeNewStages) {
  // Initialise, then accumulate into the existing values: a reduction stage plus a combine.
  TcFunction f = one(R"(
    def f(float(M, K) A) -> (C) {
      C(m) = 1 where m in 0:M
      C(m) += A(m, k)
    })");
  EXPECT_EQ(f.outputs[0].name(), "C");
  EXPECT_EQ(stages(f).size(), 3u);
  EXPECT_EQ(f.outputs[0].dtype(), DataType::Float(32));  // the constant adopts A's dtype
  // A partial overwrite keeps the earlier values outside its range.
  TcFunction g = one(R"(
    def g(float(N) A) -> (B) {
      B(i) = A(i)
      B(i) = 0 where i in 2:N
    })");
  EXPECT_EQ(stages(g).size(), 2u);
  EXPECT_NE(to_string(static_cast<const ComputeOpNode*>(g.outputs[0].op().get())->body[0])
                .find("if_then_else"),
            std::string::npos);
}

TEST(TcToTe, LiteralsAdoptTheTensorDtype) {
  TcFunction f = one(R"(
    def f(double(N) A, int8(N) B) -> (C, D, E) {
      C(i) = A(i) * 2 + 0.5
      D(i) = B(i) + 1
      E(i) = A(i) / (N * 2)
    })");
  EXPECT_EQ(f.outputs[0].dtype(), DataType::Float(64));
  EXPECT_EQ(f.outputs[1].dtype(), DataType::Int(8));
  EXPECT_EQ(f.outputs[2].dtype(), DataType::Float(64));
  TcFunction g = one("def g() -> (O) { O(i) = i * 2 where i in 0:4 }");
  EXPECT_EQ(g.outputs[0].dtype(), DataType::Int(32));
  EXPECT_EQ(g.prepare({}, nullptr), (std::vector<std::vector<int64_t>>{{4}}));
}

TEST(TcToTe, ZeroCoefficientsDropTheirVariable) {
  // Found by fuzzing: `0 * i` must not leave a term of coefficient 0 for range inference.
  TcFunction f = one("def f(float(N, M) A) -> (B) { B(i) = A(i, 0 * i) + A(i - i, 0) }");
  EXPECT_EQ(shape_of(f.outputs[0]), "(N)");
}

TEST(TcToTe, SeveralDefs) {
  auto fns = compile_tc(R"(
    def relu(float(N) I) -> (O) { O(i) = fmax(I(i), 0) }
    def transpose(float(M, N) I) -> (O) { O(j, i) = I(i, j) }
  )");
  ASSERT_EQ(fns.size(), 2u);
  EXPECT_EQ(fns[1].name, "transpose");
  EXPECT_EQ(shape_of(fns[1].outputs[0]), "(N, M)");
}

TEST(TcToTe, CallTimeSizeChecksNameTheSizeVariable) {
  TcFunction f =
      one("def mm(float(M, K) A, float(K, N) B) -> (C) { C(m, n) +=! A(m, k) * B(k, n) }");
  std::string msg = value_error_of(f, {{3, 4}, {5, 6}});
  EXPECT_NE(msg.find("inconsistent size 'K'"), std::string::npos) << msg;
  EXPECT_NE(value_error_of(f, {{3, 4, 1}, {4, 6}}).find("must have 2 dimension(s)"),
            std::string::npos);
  try {
    f.prepare({{3, 4}}, nullptr);
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kType);
  }
  std::vector<DataType> dts = {DataType::Float(64), DataType::Float(32)};
  try {
    f.prepare({{3, 4}, {4, 5}}, &dts);
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kType);
    EXPECT_NE(std::string(e.what()).find("must be float32"), std::string::npos);
  }
  TcFunction fixed = one("def g(float(3, N) A) -> (B) { B(i, j) = A(i, j) }");
  EXPECT_NE(value_error_of(fixed, {{4, 2}}).find("must have size 3 in dimension 0"),
            std::string::npos);
}

TEST(TcToTe, WhereClausesThatReadOutOfBoundsAreRefusedAtCallTime) {
  TcFunction f = one("def f(float(N) A) -> (B) { B(i) +=! A(i + k) where k in 0:3, i in 0:N }");
  ASSERT_FALSE(f.checks.empty());
  std::string msg = value_error_of(f, {{5}});
  EXPECT_NE(msg.find("out of bounds"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reaches 6"), std::string::npos) << msg;
  EXPECT_NE(msg.find("^"), std::string::npos) << msg;
  // Constant sizes are settled when the source is compiled.
  TCError e = compile_error("def f(float(4) A) -> (B) {\n  B(i) = A(i + 1) where i in 0:4\n}");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.col(), 12);
  EXPECT_NE(e.message().find("out of bounds"), std::string::npos);
}

struct ErrorCase {
  const char* text;
  int line, col;
  const char* message;
};

TEST(TcToTe, SemanticErrorsPointAtTheOffendingToken) {
  const ErrorCase cases[] = {
      // undefined names
      {"def f(float(N) A) -> (B) {\n  B(i) = C(i)\n}", 2, 10, "undefined tensor or function 'C'"},
      {"def f(float(N) A) -> (B) {\n  D(i) = A(i)\n}", 2, 3, "undefined output 'D'"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A(i) where i in 0:Q\n}", 2, 28, "undefined name 'Q'"},
      // wrong number of indices
      {"def f(float(N, M) A) -> (B) {\n  B(i) = A(i)\n}", 2, 10, "wrong number of indices"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A(i)\n  B(i, j) = A(i)\n}", 3, 3,
       "wrong number of indices"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A\n}", 2, 10, "wrong number of indices"},
      // a reduction index without a reduction operator
      {"def f(float(N, M) A) -> (B) {\n  B(i) = A(i, j)\n}", 2, 15, "reduction index"},
      // assignment to an input
      {"def f(float(N) A) -> (B) {\n  A(i) = 1\n}", 2, 3, "cannot assign to input 'A'"},
      // type mismatches
      {"def f(float(N) A, double(N) B) -> (C) {\n  C(i) = A(i) + B(i)\n}", 2, 15, "type mismatch"},
      {"def f(int32(N) A) -> (C) {\n  C(i) = A(i) * 0.5\n}", 2, 15, "cannot use a float constant"},
      {"def f(float(N) A) -> (C) {\n  C(i) = A(i)\n  C(i) += double(A(i))\n}", 3, 8,
       "type mismatch"},
      {"def f(int32(N) A) -> (C) {\n  C(i) = exp(A(i))\n}", 2, 10, "needs a float argument"},
      {"def f(float(N) A) -> (C) {\n  C(i) = A(i) && 1\n}", 2, 15, "must be bool"},
      // ranges that cannot be inferred
      {"def f(float(N) A) -> (B) {\n  B(i) = 0\n}", 2, 5, "add a where clause"},
      {"def f(float(N) A) -> (B) {\n  B(i) +=! A(i + k + j) where k in 0:2\n}", 2, 5,
       "cannot infer the range of index 'i'"},
      // ordering and declarations
      {"def f(float(N) A) -> (B, C) {\n  B(i) = C(i)\n  C(i) = A(i)\n}", 2, 10,
       "read before any statement writes it"},
      {"def f(float(N) A) -> (B, C) {\n  B(i) = A(i)\n}", 1, 26, "'C' is never written"},
      {"def f(float(N) A, float(N) A) -> (B) {\n  B(i) = A(i)\n}", 1, 28, "declared twice"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A(i)\n}\ndef f(float(N) A) -> (B) {\n  B(i) = A(i)\n}",
       4, 5, "defined twice"},
      {"def f(float(N) A) -> (B) {\n  B(i, i) = A(i)\n}", 2, 8, "appears twice"},
      {"def f(float(N) A) -> (B) {\n  B(N) = A(N)\n}", 2, 5, "'N' is a size"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A(k) where k = k + 1\n}", 2, 25, "refers to itself"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A(i) where q in 0:N\n}", 2, 21, "'q' is not an index"},
      {"def f(float(N) A) -> (B) {\n  B(i) +=! A(i + j) where i in 0:j\n}", 2, 34,
       "'j' is an index"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A(i * i)\n}", 2, 14, "multiplied by integer"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A(i / 2)\n}", 2, 14, "divide exactly"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A(A(i))\n}", 2, 12, "must be an integer"},
      {"def f(float(N) A) -> (B) {\n  B(i) = exp(A(i), 1)\n}", 2, 10, "takes 1 argument"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A.1\n}", 2, 10, "no dimension 1"},
      {"def f(int32(N) A) -> (B) {\n  B(i) = A(i) / 0\n}", 2, 15, "division by zero"},
      {"def f(int8(N) A) -> (B) {\n  B(i) = A(i) + 300\n}", 2, 17, "does not fit int8"},
      {"def f(float(N) A) -> (B) {\n  B(i) +=! A(i) > 0\n}", 2, 8, "cannot reduce bool"},
  };
  for (const ErrorCase& c : cases) {
    TCError e = compile_error(c.text);
    EXPECT_EQ(e.line(), c.line) << c.text << "\n" << e.what();
    EXPECT_EQ(e.col(), c.col) << c.text << "\n" << e.what();
    EXPECT_NE(e.message().find(c.message), std::string::npos) << c.text << "\n" << e.what();
  }
}

TEST(TcToTe, HugeWhereBindingExpansionsAreRefused) {
  std::string text = "def f(float(N) A) -> (B) { B(i) = x0 where x0 = A(i)";
  for (int k = 1; k < 40; ++k) {
    text +=
        ", x" + std::to_string(k) + " = x" + std::to_string(k - 1) + " + x" + std::to_string(k - 1);
  }
  text.replace(text.find("= x0 where"), 10, "= x39 where");
  text += " }";
  EXPECT_NE(compile_error(text).message().find("too large"), std::string::npos);
}

}  // namespace
}  // namespace ptb::tc
