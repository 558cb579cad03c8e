// A shared object linked with -static-libstdc++ (python/CMakeLists.txt): what
// cmake/trainscopeCheckLibstdcxx.cmake must refuse, as it refuses such a build of the extensions.
#include <regex>
#include <string>

int StaticLibstdcxxProbe(const char* pattern) {
  const std::regex re(pattern);
  return std::regex_match(std::string("probe"), re) ? 1 : 0;
}
