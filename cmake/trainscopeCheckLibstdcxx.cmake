# cmake -DMODULE=<shared object> -P trainscopeCheckLibstdcxx.cmake
#
# Fails when MODULE holds its own copy of libstdc++ (a compiler whose specs, or whose installation
# without libstdc++.so, link it statically): in the Python process torch has already loaded the
# system's libstdc++, and two copies disagree on the ids of std::locale's facets, so the first
# std::regex the extension compiles calls into the wrong facet and the training crashes (seen with
# a GCC 13 under /opt: a segmentation fault in std::codecvt from std::regex's bracket matcher). A
# clear error at build time instead: build with a compiler that links libstdc++ dynamically, such
# as the distribution's g++. -DTRAINSCOPE_ALLOW_STATIC_LIBSTDCXX=ON skips the check.
if(NOT MODULE)
  message(FATAL_ERROR "trainscopeCheckLibstdcxx.cmake: pass -DMODULE=<shared object>")
endif()
find_program(TS_READELF readelf)
if(NOT TS_READELF)
  message(WARNING "trainscope: no readelf to check how ${MODULE} links libstdc++; not checked")
  return()
endif()
execute_process(COMMAND "${TS_READELF}" -d "${MODULE}" OUTPUT_VARIABLE dynamic
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(WARNING "trainscope: readelf could not read ${MODULE}; how it links libstdc++ is not checked")
  return()
endif()
# The extension uses the C++ library throughout (std::string at least), so a module that does not
# name a shared C++ library (libstdc++, or libc++ under -stdlib=libc++) holds a copy of one.
if(NOT dynamic MATCHES "NEEDED[^\n]*lib(stdc|c)\\+\\+\\.so")
  message(FATAL_ERROR
    "trainscope: ${MODULE} links its own copy of libstdc++ (statically): loaded beside torch, "
    "which uses the system's, it crashes in std::regex. Build with a compiler that links "
    "libstdc++ dynamically, e.g. CXX=/usr/bin/g++ pip install ... (the compiler used: "
    "${COMPILER}); -DTRAINSCOPE_ALLOW_STATIC_LIBSTDCXX=ON builds it anyway.")
endif()
