-- t7_bytes.lua: Torch7's binary serialization format, little-endian as on x86, written by hand
-- for the nn specs that read files Torch7 saved: objects with their class version and fields,
-- tables, numbers, strings, booleans, DoubleTensors with their storages. The builders return
-- nodes; M.encode(node) writes them, numbering the objects and tables in the order they are
-- written, as Torch7's writer does (its reader expects that order).
local ffi = require 'ffi'
local T = require 'moontorch.internal'
local util = require 'spec.util'

local M = {}

local function pack(ctype, v, n) return ffi.string(ffi.new(ctype .. '[1]', v), n) end
local function int(v) return pack('int32_t', v, 4) end
local function long(v) return pack('int64_t', v, 8) end
local function chars(s) return int(#s) .. s end

-- leaves without an index: plain bytes
function M.number(v) return int(1) .. pack('double', v, 8) end
function M.string_(s) return int(2) .. chars(s) end
function M.boolean(b) return int(5) .. int(b and 1 or 0) end

-- a torch.class object: its class name, then its body (a node: a table for nn modules, or bytes
-- that may hold one more object, a tensor's storage)
function M.object(class, ...) return { kind = 'object', class = class, parts = { ... } } end

-- a table of { key, value } node pairs
function M.table_(kvs) return { kind = 'table', kvs = kvs } end

-- fields given as { name, value node } pairs: a table with string keys
function M.fields(list)
   local kvs = {}
   for k, f in ipairs(list) do kvs[k] = { M.string_(f[1]), f[2] } end
   return M.table_(kvs)
end

-- a contiguous DoubleTensor with a storage of its own, or an empty one when t is nil
function M.dtensor(t)
   if not t then return M.object('torch.DoubleTensor', int(0) .. long(1) .. int(0)) end
   local sizes, strides = T.sizes(t), {}
   local s = 1
   for d = #sizes, 1, -1 do strides[d], s = s, s * sizes[d] end
   local out = { int(#sizes) }
   for _, v in ipairs(sizes) do out[#out + 1] = long(v) end
   for _, v in ipairs(strides) do out[#out + 1] = long(v) end
   out[#out + 1] = long(1)
   local vals = { long(t:nElement()) }
   for _, v in ipairs(util.flat(t)) do vals[#vals + 1] = pack('double', v, 8) end
   return M.object('torch.DoubleTensor', table.concat(out), M.object('torch.DoubleStorage', table.concat(vals)))
end

function M.encode(node)
   local out, count = {}, 0
   local function write(n)
      if type(n) == 'string' then
         out[#out + 1] = n
         return
      end
      count = count + 1
      if n.kind == 'object' then
         out[#out + 1] = int(4) .. int(count) .. chars('V 1') .. chars(n.class)
         for _, p in ipairs(n.parts) do write(p) end
      else
         out[#out + 1] = int(3) .. int(count) .. int(#n.kvs)
         for _, kv in ipairs(n.kvs) do
            write(kv[1])
            write(kv[2])
         end
      end
   end
   write(node)
   return table.concat(out)
end

return M
