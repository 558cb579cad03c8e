# trainscope_python_torch(<python> <out_version> <out_cmake_prefix>): the torch that <python>
# imports: its torch.__version__ and torch.utils.cmake_prefix_path (LibTorch's CMake package),
# both empty when it imports none. pip's build isolation (a plain `pip install .`) hides the
# environment's own packages from the build through PYTHONPATH; the interpreter run with -I
# (isolated mode: no PYTHON* variables, no user site) sees that environment's site-packages again,
# so the torch found is the torch of the environment trainscope is being installed into.
function(trainscope_python_torch python out_version out_prefix)
  set(version "")
  set(prefix "")
  foreach(mode IN ITEMS plain isolated)
    set(flags "")
    if(mode STREQUAL "isolated")
      set(flags "-I")
    endif()
    execute_process(
      COMMAND "${python}" ${flags} -c
              "import torch, torch.utils; print(torch.__version__); print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE out OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0)
      string(REPLACE "\n" ";" out "${out}")
      list(LENGTH out n)
      if(n EQUAL 2)
        list(GET out 0 version)
        list(GET out 1 prefix)
        break()
      endif()
    endif()
  endforeach()
  set(${out_version} "${version}" PARENT_SCOPE)
  set(${out_prefix} "${prefix}" PARENT_SCOPE)
endfunction()
