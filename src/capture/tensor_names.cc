#include "trainscope/tensor_names.h"

namespace trainscope::tensor_names {
namespace {

constexpr std::string_view kFsdpSegment = "_fsdp_wrapped_module.";

std::string Concat(std::string_view a, std::string_view b) {
  std::string out;
  out.reserve(a.size() + b.size());
  out.append(a);
  out.append(b);
  return out;
}

}  // namespace

std::string ParameterName(std::string_view module, std::string_view path) {
  std::string out;
  out.reserve(module.size() + 1 + path.size());
  out.append(module);
  out.push_back('_');
  out.append(path);
  return out;
}

std::string GradientName(std::string_view parameter) { return Concat(kGradientPrefix, parameter); }

std::string InputPrefix(std::string_view module) { return Concat(module, kInputInfix); }

std::string OutputPrefix(std::string_view module) { return Concat(module, kOutputInfix); }

std::string InputName(std::string_view module, int64_t index) {
  return InputPrefix(module) + std::to_string(index);
}

std::string OutputName(std::string_view module, int64_t index) {
  return OutputPrefix(module) + std::to_string(index);
}

std::string_view ModuleOf(std::string_view tensor_name) {
  size_t digits = tensor_name.size();
  while (digits > 0 && tensor_name[digits - 1] >= '0' && tensor_name[digits - 1] <= '9') --digits;
  if (digits == tensor_name.size()) return {};
  const std::string_view head = tensor_name.substr(0, digits);
  for (std::string_view infix : {kInputInfix, kOutputInfix}) {
    if (head.size() > infix.size() && head.ends_with(infix)) {
      return head.substr(0, head.size() - infix.size());
    }
  }
  return {};
}

std::string ScalarName(std::string_view name) { return Concat(kScalarPrefix, name); }

std::string UserPath(std::string_view path) {
  // Segments are matched on the path with a '.' appended, so that a last component
  // "_fsdp_wrapped_module" goes too.
  std::string dotted = Concat(path, ".");
  if (dotted.find(kFsdpSegment) == std::string::npos) return std::string(path);
  std::string out;
  out.reserve(dotted.size());
  size_t pos = 0;
  for (size_t hit; (hit = dotted.find(kFsdpSegment, pos)) != std::string::npos;
       pos = hit + kFsdpSegment.size()) {
    out.append(dotted, pos, hit - pos);
  }
  out.append(dotted, pos);
  if (!out.empty()) out.pop_back();  // the last character (the '.' appended, or a segment's)
  return out.empty() ? std::string(path) : out;
}

std::string ModuleClassName(std::string_view type_name) {
  // The last component at template depth 0: "a::b<c::d>::E<f>" -> "E<f>".
  size_t begin = 0;
  int depth = 0;
  for (size_t i = 0; i < type_name.size(); ++i) {
    const char c = type_name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ':' && i + 1 < type_name.size() && type_name[i + 1] == ':') {
      begin = i + 2;
    }
  }
  std::string name(type_name.substr(begin));
  if (auto lt = name.find('<'); lt != std::string::npos) name.resize(lt);  // no template args
  constexpr std::string_view kImpl = "Impl";
  if (name.size() > kImpl.size() && name.ends_with(kImpl)) name.resize(name.size() - kImpl.size());
  return name.empty() ? std::string(type_name) : name;
}

}  // namespace trainscope::tensor_names
