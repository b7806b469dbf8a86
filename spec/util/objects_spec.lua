-- objects_spec.lua: utility.md's object utilities that are not the class system: pointer,
-- isequal, getenv/setenv, getconstructortable, typename2id/id, setheaptracking, and the
-- documented behaviour of torch.type/typename/isTensor.
local ffi = require 'ffi'
local torch = require 'moontorch'
require 'spec.util'

describe('torch utilities', function()
   it('pointer: the C tensor of a tensor, the address of other objects', function()
      local a, b = torch.FloatTensor(3), torch.FloatTensor(3)
      local pa = torch.pointer(a)
      assert.are.equal('number', type(pa))
      assert.are.equal(pa, torch.pointer(a))
      assert.are_not.equal(pa, torch.pointer(b))
      assert.are.equal(tonumber(ffi.cast('uintptr_t', a.h)), pa) -- the handle, as Torch7 gave THTensor*
      local p = ffi.cast('double *', ffi.new('double[4]'))
      assert.are.equal(tonumber(ffi.cast('uintptr_t', p)), torch.pointer(p))
      local t = {}
      assert.are.equal(tonumber(tostring(t):match('0x%x+')), torch.pointer(t))
      local shy = setmetatable({}, { __tostring = function() return 'no address here' end })
      assert.are.equal(torch.pointer(shy), torch.pointer(shy))
      assert.are_not.equal(torch.pointer(shy), torch.pointer(t))
      local fn = function() end
      assert.are.equal(tonumber(tostring(fn):match('0x%x+')), torch.pointer(fn))
      assert.are.equal('number', type(torch.pointer(print))) -- a builtin prints no address; it has one
      assert.are.equal('number', type(torch.pointer(coroutine.create(function() end))))
      assert.has_error(function() torch.pointer(5) end,
         'torch.pointer: expected a tensor, cdata, table, function, thread, userdata or string, got number')
      assert.has_error(function() torch.pointer(ffi.new('int64_t', 3)) end)
   end)

   it('isequal: the same table or the same C tensor, never equal contents', function()
      local a = torch.DoubleTensor{ math.random() }
      local t = {}
      assert.is_true(torch.isequal(a, a))
      assert.is_false(torch.isequal(a, a:clone()))
      assert.is_true(torch.isequal(t, t))
      assert.is_false(torch.isequal(t, {}))
      assert.is_false(torch.isequal(1, 1))
   end)

   it('getenv/setenv: a function runs in the table set; a tensor keeps its own table', function()
      local f = loadstring('return marker')
      assert.are.equal(_G, torch.getenv(f))
      local v = math.random()
      torch.setenv(f, { marker = v })
      assert.are.equal(v, f())
      assert.are.equal(v, torch.getenv(f).marker)
      local u = newproxy()
      local e = {}
      torch.setenv(u, e)
      assert.are.equal(e, torch.getenv(u))
      local x, y = torch.FloatTensor(2), torch.FloatTensor(2)
      local ex = torch.getenv(x)
      ex.tag = v
      assert.are.equal(ex, torch.getenv(x))
      assert.is_nil(torch.getenv(y).tag)
      torch.setenv(y, { tag = 1 })
      assert.are.equal(1, torch.getenv(y).tag)
      assert.has_error(function() torch.getenv({}) end,
         'torch.getenv: expected a function, userdata, thread or cdata (a tensor), got table')
      assert.has_error(function() torch.setenv(f, 3) end, 'torch.setenv: expected a table as argument 2, got number')
   end)

   it('getconstructortable, typename2id, id', function()
      local nn = require 'moontorch.nn'
      assert.are.equal(torch.FloatTensor, torch.getconstructortable('torch.FloatTensor'))
      assert.are.equal(torch.Timer, torch.getconstructortable('torch.Timer'))
      assert.are.equal(nn.Linear, torch.getconstructortable('nn.Linear'))
      assert.is_nil(torch.getconstructortable('nn.NoSuchModule'))
      assert.is_nil(torch.getconstructortable('torch.Nothing'))
      assert.has_error(function() torch.getconstructortable(3) end,
         'torch.getconstructortable: expected a type name, got number')
      local timer, cmd = torch.Timer(), torch.CmdLine()
      assert.are.equal(torch.typename2id('torch.Timer'), torch.id(timer))
      assert.are_not.equal(torch.id(timer), torch.id(cmd))
      assert.are.equal(torch.typename2id('torch.DoubleTensor'), torch.id(torch.DoubleTensor(1)))
      assert.are_not.equal(torch.id(torch.FloatTensor(1)), torch.id(torch.DoubleTensor(1)))
      assert.is_nil(torch.id({}))
      assert.is_nil(torch.typename2id('no.Such'))
   end)

   it('setheaptracking takes a boolean (recorded; the GC already sees tensor memory)', function()
      torch.setheaptracking(false)
      assert.is_false(torch._heaptracking)
      torch.setheaptracking(true)
      assert.is_true(torch._heaptracking)
      assert.has_error(function() torch.setheaptracking('yes') end,
         'torch.setheaptracking: expected a boolean, got string')
      torch.updateerrorhandlers()
      torch.updatethreadlocals()
      assert.is_true(torch._heaptracking)
   end)

   it('type, typename and isTensor behave as utility.md says', function()
      assert.are.equal(torch.getdefaulttensortype(), torch.type(torch.Tensor()))
      assert.are.equal('table', torch.type({}))
      assert.are.equal('number', torch.type(7))
      assert.are.equal('torch.Tester', torch.type(torch.Tester()))
      assert.are.equal('torch.DoubleTensor', torch.typename(torch.DoubleTensor()))
      assert.is_nil(torch.typename({}))
      assert.is_nil(torch.typename(7))
      assert.is_true(torch.isTensor(torch.IntTensor(1)))
      assert.is_false(torch.isTensor({}))
   end)
end)
