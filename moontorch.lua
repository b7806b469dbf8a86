-- Lets `require 'moontorch'` work from a checkout's root (e.g. `luajit recipes/x.lua`) without
-- installing: puts lua/ on package.path and loads the real module from there.
local root = debug.getinfo(1, 'S').source:match('^@(.*/)') or './'
package.path = root .. 'lua/?.lua;' .. root .. 'lua/?/init.lua;' .. package.path
return dofile(root .. 'lua/moontorch/init.lua')
