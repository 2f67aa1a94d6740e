#include <gtest/gtest.h>

#include "ir/type.h"
#include "support/error.h"

namespace ptb {

TEST(DataType, ParsesEveryUserDtype) {
  EXPECT_EQ(DataType::parse("float32"), DataType::Float(32));
  EXPECT_EQ(DataType::parse("float"), DataType::Float(32));
  EXPECT_EQ(DataType::parse("double"), DataType::Float(64));
  EXPECT_EQ(DataType::parse("bfloat16"), DataType::BFloat16());
  EXPECT_EQ(DataType::parse("bool").bits(), 8);
  EXPECT_EQ(DataType::parse("uint64"), DataType::UInt(64));
}

TEST(DataType, PrintsVectorLanes) {
  EXPECT_EQ(DataType::Float(32, 16).str(), "float32x16");
  EXPECT_EQ(DataType::Int(8).str(), "int8");
}

TEST(DataType, RejectsUnknownNamesAsTypeError) {
  try {
    DataType::parse("complex64");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kType);
    EXPECT_NE(std::string(e.what()).find("complex64"), std::string::npos);
  }
}

}  // namespace ptb
