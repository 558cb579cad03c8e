// The names the hooks give captured tensors: smdebug's naming scheme, in one place. The Python
// hook and the automatic mode (through _core), the LibTorch hook (src/torch) and the C++ Hook
// all take their names from here; the trial tests and the smdebug-compat tests pin them.
//
//   parameter  "<module>_<path>"            "Net_fc1.weight"  (module: the registered module's
//                                                               class name; path: the parameter's
//                                                               dotted path inside it)
//   gradient   "gradient/<parameter>"       "gradient/Net_fc1.weight"
//   output     "<module>_output_<i>"        "relu_output_0", "CrossEntropyLoss_output_0",
//                                           "loss_output_1" (recorded values and losses too)
//   input      "<module>_input_<i>"         "fc1_input_0"
//   scalar     "scalar/<name>"              "scalar/train_loss"
//
// A submodule's name is its dotted path in the registered module ("layer1.0.conv1"), the
// registered module's own name its class name. Saved reductions are named by
// ReductionTensorName (trainscope/reductions.h).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainscope::tensor_names {

inline constexpr std::string_view kGradientPrefix = "gradient/";
inline constexpr std::string_view kScalarPrefix = "scalar/";
inline constexpr std::string_view kInputInfix = "_input_";
inline constexpr std::string_view kOutputInfix = "_output_";
// The name of a loss saved without one (TorchHook::SaveLoss, the automatic mode's losses).
inline constexpr std::string_view kDefaultLossName = "loss";

// "<module>_<path>": parameter `path` ("fc1.weight") of registered module `module` ("Net").
std::string ParameterName(std::string_view module, std::string_view path);
// "gradient/<parameter>".
std::string GradientName(std::string_view parameter);
// "<module>_input_" and "<module>_output_": what every input (output) name of `module` starts
// with (collections match module tensors by it).
std::string InputPrefix(std::string_view module);
std::string OutputPrefix(std::string_view module);
// "<module>_input_<index>", "<module>_output_<index>": the index-th tensor (from 0) of the
// module's flattened inputs (outputs) in one step, or of the values recorded under that name.
std::string InputName(std::string_view module, int64_t index);
std::string OutputName(std::string_view module, int64_t index);
// The module of an input or output name ("encoder.1_input_0" -> "encoder.1"): the part before
// the last "_input_<digits>" or "_output_<digits>"; empty for any other name.
std::string_view ModuleOf(std::string_view tensor_name);
// "scalar/<name>".
std::string ScalarName(std::string_view name);

// A module or parameter path as the user's model has it: FullyShardedDataParallel units nested
// in a model add a "_fsdp_wrapped_module." segment to every path below them, which is removed
// ("_fsdp_wrapped_module.fc1.weight" -> "fc1.weight"). A path that would become empty stays.
std::string UserPath(std::string_view path);

// The class name of a module from its C++ type name (LibTorch's Module::name()): the last
// component outside template arguments, without template arguments and without LibTorch's
// "Impl" suffix ("torch::nn::LinearImpl" -> "Linear", "a::NetImpl<b::C>" -> "Net"). A name
// that would become empty stays as it is.
std::string ModuleClassName(std::string_view type_name);

}  // namespace trainscope::tensor_names
