-- The one way recipes and scripts in a checkout find the library without installing it:
-- `require 'moontorch'` from the repository root (e.g. `luajit recipes/x.lua`) lands here,
-- which puts lua/ (the library) and the root itself (`require 'recipes.imagenet.opts'`) on
-- package.path and loads the real module.
local root = debug.getinfo(1, 'S').source:match('^@(.*/)') or './'
package.path = root .. 'lua/?.lua;' .. root .. 'lua/?/init.lua;' .. root .. '?.lua;' .. root .. '?/init.lua;' ..
   package.path
return dofile(root .. 'lua/moontorch/init.lua')
