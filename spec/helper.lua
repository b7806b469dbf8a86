-- helper.lua: run by busted before every spec file: make the checkout's modules findable.
package.path = './lua/?.lua;./lua/?/init.lua;./?.lua;./?/init.lua;' .. package.path
-- Load once here, before busted snapshots package.loaded: ffi.metatype can only be set once per
-- process, so reloading moontorch per spec file would leave tensors with a stale method table.
require 'moontorch'
