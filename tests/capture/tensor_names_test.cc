#include "trainscope/tensor_names.h"

#include <gtest/gtest.h>

namespace trainscope::tensor_names {
namespace {

// smdebug's names, as its trials hold them (reference/smdebug.md, section 2).
TEST(TensorNamesTest, SmdebugScheme) {
  EXPECT_EQ(ParameterName("Net", "fc1.weight"), "Net_fc1.weight");
  EXPECT_EQ(ParameterName("Sequential", "0.bias"), "Sequential_0.bias");
  EXPECT_EQ(GradientName("Net_fc1.weight"), "gradient/Net_fc1.weight");
  EXPECT_EQ(OutputName("CrossEntropyLoss", 0), "CrossEntropyLoss_output_0");
  EXPECT_EQ(OutputName("relu", 12), "relu_output_12");
  EXPECT_EQ(OutputName(kDefaultLossName, 1), "loss_output_1");
  EXPECT_EQ(InputName("layer1.0.conv1", 0), "layer1.0.conv1_input_0");
  EXPECT_EQ(InputPrefix("fc1"), "fc1_input_");
  EXPECT_EQ(OutputPrefix("fc1"), "fc1_output_");
  EXPECT_EQ(ScalarName("train_loss"), "scalar/train_loss");
  // Every input (output) name starts with its prefix: collections match module tensors by it.
  EXPECT_TRUE(OutputName("act", 3).starts_with(OutputPrefix("act")));
  EXPECT_TRUE(InputName("act", 3).starts_with(InputPrefix("act")));
}

TEST(TensorNamesTest, ModuleOfInputsAndOutputs) {
  EXPECT_EQ(ModuleOf(InputName("encoder.1", 0)), "encoder.1");
  EXPECT_EQ(ModuleOf(OutputName("layer1.0.relu", 12)), "layer1.0.relu");
  EXPECT_EQ(ModuleOf("a_input_1_output_0"), "a_input_1");  // the last infix counts
  for (const char* other : {"Net_fc1.weight", "gradient/Net_fc1.weight", "scalar/loss", "_input_0",
                            "relu_input_", "relu_input_x", "loss"}) {
    EXPECT_EQ(ModuleOf(other), "") << other;
  }
}

TEST(TensorNamesTest, UserPathDropsFsdpSegments) {
  EXPECT_EQ(UserPath("fc1.weight"), "fc1.weight");
  EXPECT_EQ(UserPath("_fsdp_wrapped_module.fc1.weight"), "fc1.weight");
  EXPECT_EQ(UserPath("layer._fsdp_wrapped_module.0._fsdp_wrapped_module.weight"), "layer.0.weight");
  EXPECT_EQ(UserPath("layer._fsdp_wrapped_module"), "layer");           // the last component
  EXPECT_EQ(UserPath("_fsdp_wrapped_module"), "_fsdp_wrapped_module");  // never empty
  EXPECT_EQ(UserPath(""), "");
  EXPECT_EQ(UserPath("my_fsdp_wrapped_module_x.w"), "my_fsdp_wrapped_module_x.w");
}

TEST(TensorNamesTest, ModuleClassNameFromCppTypeNames) {
  EXPECT_EQ(ModuleClassName("torch::nn::LinearImpl"), "Linear");
  EXPECT_EQ(ModuleClassName("TinyNetImpl"), "TinyNet");
  EXPECT_EQ(ModuleClassName("a::b<c::d>::NetImpl<e::f>"), "Net");
  EXPECT_EQ(ModuleClassName("ns::Fn(x::y)"), "Fn(x::y)");
  EXPECT_EQ(ModuleClassName("Impl"), "Impl");  // would become empty
  EXPECT_EQ(ModuleClassName(""), "");
}

}  // namespace
}  // namespace trainscope::tensor_names
