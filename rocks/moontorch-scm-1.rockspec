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
build = {
   type = "cmake",
   variables = {
      CMAKE_BUILD_TYPE = "Release",
      LUADIR = "$(LUADIR)",
      LIBDIR = "$(LIBDIR)",
      BINDIR = "$(BINDIR)",
      MT_CUDA = "$(MT_CUDA)",
   },
}
