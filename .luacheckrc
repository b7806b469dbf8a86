-- .luacheckrc: luacheck over lua/, recipes/, bench/, spec/ (the ctest test `luacheck`).
std = 'luajit'
max_line_length = 120
max_string_line_length = false -- help texts and messages are data, not code
unused_args = false -- modules implement Torch7's interfaces; unused parameters are part of them
-- Torch7 code calls table.unpack; lua/moontorch/init.lua gives LuaJIT that 5.2 name
read_globals = { table = { fields = { 'unpack' } } }
files['lua/moontorch/init.lua'] = { globals = { table = { fields = { 'unpack' } } } }
files['spec'] = { std = '+busted' }
-- Torch7-style test files run by bin/moontorch, which defines the global torch as Torch7 did
files['spec/fixtures/torch7_style*.lua'] = { read_globals = { 'torch' } }
