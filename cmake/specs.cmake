# specs.cmake: every spec/<area>/<name>_spec.lua is one ctest test named <area>/<name>, run by
# busted from the repository root. A spec says how it runs in lines of its own header:
#
#   -- ctest: train            the training tier (make test-train, label `train`); without it the
#                              spec is in the fast tier that make test runs after every change
#   -- ctest: ranks 1 2 4      also run under `mpirun -np N` for each N (tests <area>/<name>-npN),
#                              beside the plain run without a launcher
#   -- ctest: noasan: WHY      not run by make test-asan, and why
#
# Every test gets exactly one tier label, `fast` or `train`, so `ctest -L fast` and
# `ctest -L train` split the suite without a list kept anywhere else.

function(mt_add_specs)
  set(env "MOONTORCH_BUILD=${CMAKE_BINARY_DIR};OMP_WAIT_POLICY=PASSIVE")
  # ranks yield their core while they wait (there are more ranks than cores on CI's 2)
  set(rank_env "${env};OMP_NUM_THREADS=1;OMPI_MCA_mpi_yield_when_idle=1")
  set(mpirun ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe)
  set(busted ${LUAJIT} ${BUSTED} --helper=${CMAKE_SOURCE_DIR}/spec/helper.lua)

  file(GLOB_RECURSE specs RELATIVE ${CMAKE_SOURCE_DIR}/spec ${CMAKE_SOURCE_DIR}/spec/*_spec.lua)
  list(SORT specs)
  foreach(rel ${specs})
    set(path ${CMAKE_SOURCE_DIR}/spec/${rel})
    string(REGEX REPLACE "_spec\\.lua$" "" name ${rel})
    if(NOT name MATCHES "/")
      message(FATAL_ERROR "spec/${rel}: specs live in a folder named for what they test (spec/nn/, spec/data/, ...)")
    endif()
    file(STRINGS ${path} directives REGEX "^-- ctest: ")
    set(tier fast)
    set(ranks "")
    set(extra "")
    foreach(d ${directives})
      string(REGEX REPLACE "^-- ctest: " "" d "${d}")
      if(d MATCHES "^train$")
        set(tier train)
      elseif(d MATCHES "^ranks( [1-9])+$")
        string(REGEX MATCHALL "[1-9]" ranks "${d}")
      elseif(d MATCHES "^noasan: .")
        list(APPEND extra noasan)
      else()
        message(FATAL_ERROR "spec/${rel}: unknown directive '-- ctest: ${d}' (train, ranks N..., noasan: WHY)")
      endif()
    endforeach()

    add_test(NAME ${name} COMMAND ${busted} ${path} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    # ctest runs specs side by side: OpenMP workers that spin while idle would steal the cores of
    # the other spec (3x slower on a 2-core machine), so they sleep instead
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}" LABELS "${tier};${extra}" TIMEOUT 900)
    # whole recipe runs start first, so that on a clean build (no timings from an earlier run)
    # the short specs fill the other core around them instead of trailing them
    if(rel MATCHES "^recipes/")
      set_tests_properties(${name} PROPERTIES COST 60)
    endif()
    if(ranks AND NOT (MT_WITH_MPI AND MPIEXEC_EXECUTABLE))
      message(STATUS "spec/${rel}: no MPI, so only the run without a launcher")
    elseif(ranks)
      set_tests_properties(${name} PROPERTIES ENVIRONMENT "${rank_env}")
      foreach(np ${ranks})
        set(labels ${tier} ${extra})
        # 3 and 4 ranks repeat the code paths of 1 and 2 at several times the cost
        if(np GREATER 2)
          list(APPEND labels noasan)
        endif()
        add_test(NAME ${name}-np${np} COMMAND ${mpirun} -np ${np} ${busted} ${path}
                 WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
        set_tests_properties(${name}-np${np} PROPERTIES ENVIRONMENT "${rank_env}" LABELS "${labels}"
                             TIMEOUT 900 PROCESSORS ${np})
      endforeach()
    endif()
  endforeach()
endfunction()
