# layers.cmake: each folder of csrc/ (and kernels/) is one layer, built as an OBJECT library
# from the explicit source list in its own CMakeLists.txt. The layers are linked into
# libmoontorch.so at the top level; the CPU-only sources are also remembered (a global
# property) so the fuzz build can compile the same files with its own instrumentation.
#
#   mt_layer(cpu SOURCES a.c b.c)          -> OBJECT library mt_cpu
#   mt_layer(cuda SOURCES x.c GPU_ONLY)    -> not part of the CPU-only source set

function(mt_layer name)
  cmake_parse_arguments(L "GPU_ONLY" "" "SOURCES" ${ARGN})
  if(NOT L_SOURCES)
    message(FATAL_ERROR "mt_layer(${name}): empty SOURCES")
  endif()
  add_library(mt_${name} OBJECT ${L_SOURCES})
  target_link_libraries(mt_${name} PRIVATE mt_flags)
  set_property(GLOBAL APPEND PROPERTY MT_LAYERS mt_${name})
  if(NOT L_GPU_ONLY)
    foreach(src ${L_SOURCES})
      get_filename_component(abs ${src} ABSOLUTE)
      set_property(GLOBAL APPEND PROPERTY MT_CPU_SOURCES ${abs})
    endforeach()
  endif()
endfunction()
