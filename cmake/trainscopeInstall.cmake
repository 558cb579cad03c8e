# Installing the C++ library: `cmake --install build [--prefix DIR] [--component trainscope_dev]`
# puts every module's public headers (src/<module>/include/trainscope/) into include/trainscope/,
# the static module libraries into the library folder, a CMake package (find_package(trainscope)
# with targets trainscope::core, ::store, ::capture, ::profiler, ::rules, ::actions, ::supervisor and
# trainscope::trainscope, all of them) and a pkg-config file (trainscope.pc). Only component trainscope_dev; `pip install .` installs the
# `python` component alone. The LibTorch module is not installed (its header needs LibTorch).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TRAINSCOPE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/trainscope")

# Modules in link order (a module before the modules it needs), the order of trainscope.pc's Libs.
set(_ts_install_modules)
foreach(m supervisor rules actions capture profiler store core)
  if(TARGET ts_${m})
    list(APPEND _ts_install_modules ${m})
  endif()
endforeach()

set(_ts_install_targets)
set(_ts_pc_libs)
foreach(m IN LISTS _ts_install_modules)
  # Exported as trainscope::<module>, the alias the build tree uses.
  set_target_properties(ts_${m} PROPERTIES EXPORT_NAME ${m})
  list(APPEND _ts_install_targets ts_${m})
  string(APPEND _ts_pc_libs " -lts_${m}")
endforeach()

install(TARGETS ${_ts_install_targets} EXPORT trainscopeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT trainscope_dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Each module's public headers (src/<module>/include/trainscope/) go into one include/trainscope/.
foreach(m IN LISTS _ts_install_modules)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/${m}/include/trainscope
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT trainscope_dev
    FILES_MATCHING PATTERN "*.h")
endforeach()
install(EXPORT trainscopeTargets NAMESPACE trainscope::
  DESTINATION ${TRAINSCOPE_INSTALL_CMAKEDIR} COMPONENT trainscope_dev)

# The package's modules, for trainscopeConfig.cmake's umbrella target.
list(TRANSFORM _ts_install_modules PREPEND "trainscope::"
  OUTPUT_VARIABLE TRAINSCOPE_EXPORTED_TARGETS)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/trainscopeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/trainscopeConfig.cmake
  INSTALL_DESTINATION ${TRAINSCOPE_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/trainscopeConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/trainscopeConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/trainscopeConfigVersion.cmake
  DESTINATION ${TRAINSCOPE_INSTALL_CMAKEDIR} COMPONENT trainscope_dev)

# trainscope.pc finds the prefix from its own folder (${pcfiledir}), so a package installed with
# `cmake --install build --prefix DIR` (another prefix than the configured one) still works.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(TRAINSCOPE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(TRAINSCOPE_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  string(REGEX REPLACE "[^/]+" ".." _ts_up "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  set(TRAINSCOPE_PC_PREFIX "\${pcfiledir}/${_ts_up}")
  set(TRAINSCOPE_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(TRAINSCOPE_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(TRAINSCOPE_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(TRAINSCOPE_PC_LIBS "${_ts_pc_libs}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/trainscope.pc.in ${PROJECT_BINARY_DIR}/trainscope.pc
  @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/trainscope.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT trainscope_dev)
