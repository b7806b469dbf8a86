-- helper.lua: run by busted before every spec file: make the checkout's modules findable.
package.path = './lua/?.lua;./lua/?/init.lua;./?.lua;' .. package.path
