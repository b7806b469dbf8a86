# gen_cdefs.cmake: run the public header through the C preprocessor (so the FFI block's list
# expansions, e.g. enum mt_dtype from MT_DTYPES, come out as plain C), cut out the block
# between MT_FFI_BEGIN and MT_FFI_END and wrap it as a Lua module returning the string for
# ffi.cdef. MT_CDEF_GEN keeps the system headers out; -C keeps the comments (and the markers).
# Arguments: -DCC=<C compiler> -DHEADER=<moontorch.h> -DOUT=<cdefs.lua>
if(NOT CC)
  message(FATAL_ERROR "gen_cdefs: pass the C compiler as -DCC=...")
endif()
execute_process(COMMAND ${CC} -E -P -C -DMT_CDEF_GEN -x c ${HEADER}
                OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gen_cdefs: preprocessing ${HEADER} failed:\n${err}")
endif()
string(FIND "${text}" "/* MT_FFI_BEGIN */" begin)
string(FIND "${text}" "/* MT_FFI_END */" end)
if(begin EQUAL -1 OR end EQUAL -1)
  message(FATAL_ERROR "gen_cdefs: ${HEADER} lacks the MT_FFI_BEGIN/MT_FFI_END markers")
endif()
math(EXPR begin "${begin} + 18")
math(EXPR len "${end} - ${begin}")
string(SUBSTRING "${text}" ${begin} ${len} block)
if(block MATCHES "#")
  message(FATAL_ERROR "gen_cdefs: the FFI block of ${HEADER} must not contain preprocessor lines")
endif()
file(WRITE ${OUT}.tmp "-- Generated from csrc/moontorch.h by cmake/gen_cdefs.cmake; do not edit.\nreturn [==[\n${block}]==]\n")
file(RENAME ${OUT}.tmp ${OUT})
