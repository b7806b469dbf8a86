-- moontorch-scm-1.rockspec: `luarocks --lua-version=5.1 make rocks/moontorch-scm-1.rockspec` from the
-- repository root (or `make install`). CMake installs the Lua modules with the generated cdefs.lua
-- beside them, libmoontorch.so into the rock's lib dir (deployed onto package.cpath) and the
-- `moontorch` command. Add MT_CUDA=OFF (or ON) to the command line to choose the CUDA backend;
-- without it CUDA is used when a toolkit is found.
rockspec_format = "3.0"
package = "moontorch"
version = "scm-1"
source = {
   url = "git+file://.",
}
description = {
   summary = "Torch7-style tensors on CPU and CUDA: a C11 core driven from LuaJIT through FFI",
   license = "UNLICENSED (no license has been chosen yet)",
   detailed = [[
moontorch gives LuaJIT Torch7's tensor API (local torch = require 'moontorch') over a plain C
library with CPU (OpenMP, OpenBLAS) and CUDA backends.
]],
}
dependencies = {
   "lua == 5.1", -- LuaJIT: the library is reached through its FFI
}
-- The C libraries CMakeLists.txt requires, with Debian's -dev packages, so that a missing one is
-- named before the build starts. OpenBLAS is found by its library: Debian's cblas.h lives in a
-- multiarch include folder (/usr/include/x86_64-linux-gnu) LuaRocks does not search. Open MPI
-- (libopenmpi-dev) is optional (MT_MPI=AUTO) and a rockspec cannot declare an optional one:
-- without it libmoontorch_dist.so is built as the one-process stub.
external_dependencies = {
   OPENBLAS = { library = "openblas" },          -- libopenblas-dev
   CJSON = { header = "cjson/cJSON.h" },         -- libcjson-dev
   JPEG = { header = "jpeglib.h" },              -- libjpeg62-turbo-dev
   PNG = { header = "png.h" },                   -- libpng-dev
   ZLIB = { header = "zlib.h" },                 -- zlib1g-dev
}
build = {
   type = "cmake",
   variables = {
      CMAKE_BUILD_TYPE = "Release",
      LUADIR = "$(LUADIR)",
      LIBDIR = "$(LIBDIR)",
      BINDIR = "$(BINDIR)",
      MT_CUDA = "$(MT_CUDA)",
      -- where LuaRocks found them (JPEG_DIR=/opt/x on the command line moves one): CMake's
      -- find_library and find_path look there first
      CMAKE_INCLUDE_PATH = "$(CJSON_INCDIR);$(JPEG_INCDIR);$(PNG_INCDIR);$(ZLIB_INCDIR)",
      CMAKE_LIBRARY_PATH = "$(OPENBLAS_LIBDIR);$(CJSON_LIBDIR);$(JPEG_LIBDIR);$(PNG_LIBDIR);$(ZLIB_LIBDIR)",
   },
}
