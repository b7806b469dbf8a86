-- write_object_spec.lua: what Torch7's File.lua writes beyond data (lua/moontorch/io/serialize.lua):
-- Lua functions with their upvalues (read back only with allowCode), writeObject's hook, objects
-- of classes defined with torch.class (torch.Generator included), and the CharStorage forms
-- torch.serializeToStorage / torch.deserializeFromStorage.
local torch = require 'moontorch'
local util = require 'spec.util'
local ffi = require 'ffi'

local tmp = util.tmp_namer()
local CODE = { allowCode = true }

-- obj written to a binary MemoryFile (with hook) and read back (with opts)
local function through_file(obj, hook, opts)
   local f = torch.MemoryFile('rw'):binary()
   f:writeObject(obj, nil, hook)
   f:seek(1)
   local back = f:readObject(opts)
   f:close()
   return back
end

describe('Lua functions', function()
   for _, mode in ipairs { 'binary', 'ascii' } do
      it('round-trip with their upvalues, nil ones included, when code is allowed (' .. mode .. ')', function()
         local a, b, c = math.random(), nil, math.random(1, 1e6)
         local s = tostring(math.random(1, 9))
         local function f(x)
            if b then return a end
            return tonumber(x .. s) * c + a
         end
         local g = torch.deserialize(torch.serialize(f, mode), mode, CODE)
         assert.are_not.equal(f, g)
         local x = tostring(math.random(1, 99))
         assert.are.equal(f(x), g(x))
         -- the same through a file, and through torch.save / torch.load
         local path = tmp('f.t7')
         torch.save(path, { fn = f, n = c }, mode)
         local back = torch.load(path, mode, CODE)
         assert.are.equal(c, back.n)
         assert.are.equal(f(x), back.fn(x))
      end)
   end

   it('keep recursion and upvalues shared between closures', function()
      local depth = math.random(5, 40)
      local count
      count = function(n) if n == 1 then return 1 end return 1 + count(n - 1) end
      local i, j = math.random(1, 100), math.random(1, 100)
      local fs = { inc = function() i = i + 1; j = j + 2 end, get_i = function() return i end,
         get_j = function() return j end, count = count }
      local back = through_file(fs, nil, CODE)
      assert.are.equal(depth, back.count(depth))
      assert.are.equal(i, back.get_i())
      back.inc()
      assert.are.equal(i + 1, back.get_i()) -- the copies share their upvalues as the originals do
      assert.are.equal(j + 2, back.get_j())
      assert.are.equal(i, fs.get_i()) -- and not with the originals
   end)

   it('are refused by default, with an error that says how to load them', function()
      local v = math.random()
      local bytes = torch.serialize({ x = v, f = function() return v end })
      for _, load in ipairs {
         function() return torch.deserialize(bytes) end,
         function() return torch.deserializeFromStorage(torch.CharStorage():string(bytes)) end,
         function()
            local f = torch.MemoryFile('rw'):binary()
            f:writeString(bytes)
            f:seek(1)
            return f:readObject()
         end,
      } do
         util.assert_error(load, 'functions are not loaded', 'allowCode = true')
      end
      util.assert_error(function() torch.deserialize(bytes, nil, { allowcode = true }) end, 'unknown option allowcode')
      util.assert_error(function() torch.deserialize(bytes, nil, { allowCode = 1 }) end,
         'allowCode must be true or false')
      util.assert_error(function() torch.deserialize(bytes, nil, 'yes') end, 'options must be a table')
      assert.are.equal(v, torch.deserialize(bytes, nil, CODE).f())
   end)

   it('refuses C functions and FFI data, naming where they are as Torch7 does', function()
      local inner = { baz = function() return torch.somefunc() end } -- its upvalue torch holds C functions
      local outer = { theinner = inner }
      local function evil() outer.prop = math.random(); return outer end
      util.assert_error(function() torch.serialize(evil) end, 'torch.serialize', 'at <?>.outer.theinner.baz.torch.')
      util.assert_error(function() torch.serialize({ p = print }) end, 'C function', '<?>.p')
      util.assert_error(function() torch.serialize({ q = ffi.new('int[1]') }) end, '<?>.q')
   end)

   it('load legacy tag 6 and 7 files (upvalue values listed alone)', function()
      local k = math.random(1, 1e6)
      local code = string.dump(function() return k end)
      local function int(v) return ffi.string(ffi.new('int32_t[1]', v), 4) end
      local function num(v) return ffi.string(ffi.new('double[1]', v), 8) end
      -- { k }: a table (reference index i) of one pair
      local function ups(i) return int(3) .. int(i) .. int(1) .. int(1) .. num(1) .. int(1) .. num(k) end
      local six = int(6) .. int(#code) .. code .. ups(1) -- tag 6 has no reference index
      local seven = int(7) .. int(1) .. int(#code) .. code .. ups(2)
      assert.are.equal(k, torch.deserialize(six, nil, CODE)())
      assert.are.equal(k, torch.deserialize(seven, nil, CODE)())
      util.assert_error(function() torch.deserialize(int(6) .. int(3) .. 'abc' .. ups(1), nil, CODE) end,
         'bytecode does not load')
   end)
end)

describe('writeObject hook', function()
   it('writes what the hook returns, keeping references to the objects given', function()
      local ns, id = {}, math.random(1, 1e9)
      local From = torch.class('spec_hook.From' .. id, ns) -- the constructors are ns.From<id>, ns.To<id>
      local To = torch.class('spec_hook.To' .. id, ns)
      function To:test() return self.v end
      local s = ns['From' .. id]()
      local v = math.random()
      local hook = function(o)
         if getmetatable(o) == From then local t = ns['To' .. id](); t.v = v; return t end
         if o == 'replace me' then return 'replaced' end
         return o
      end
      local obj = { s1 = s, s2 = s, w = 'replace me', n = v }
      local back = through_file(obj, hook)
      assert.are.equal(To, getmetatable(back.s1))
      assert.are.equal(v, back.s1:test())
      assert.are.equal(back.s1, back.s2) -- one object, written once
      assert.are.equal('replaced', back.w)
      assert.are.equal(v, back.n)
      local plain = through_file(obj) -- without the hook the objects stay as they were
      assert.are.equal(From, getmetatable(plain.s1))
      util.assert_error(function() torch.MemoryFile('rw'):binary():writeObject(obj, nil, 'no') end,
         'hook must be a function')
   end)
end)

describe('torch.class objects', function()
   it('load when the class is defined, and name the class when it is not', function()
      local ns, id = {}, math.random(1, 1e9)
      local name = 'spec-cls.C' .. id -- any printable name: Torch7's tests use 'class.<uuid>'
      local Cls = torch.class(name, ns)
      local o = ns['C' .. id]()
      o.t = torch.rand(3, math.random(1, 5))
      o.x = math.random()
      local back = torch.deserialize(torch.serialize({ o, o }))
      assert.are.equal(Cls, getmetatable(back[1]))
      assert.are.equal(back[1], back[2])
      assert.are.equal(o.x, back[1].x)
      util.assert_close(back[1].t, o.t, { atol = 0, rtol = 0 }, 'field tensor')
      local bytes = torch.serialize(o):gsub(name:gsub('%p', '%%%0'), (name:gsub('C(%d)', 'D%1')))
      util.assert_error(function() torch.deserialize(bytes) end, 'class spec-cls.D', 'not defined')
   end)

   it('torch.Generator keeps its state', function()
      local g = torch.Generator()
      torch.manualSeed(g, math.random(1, 1e9))
      torch.random(g) -- move it along
      local back = torch.deserialize(torch.serialize(g))
      assert.are.equal(torch.initialSeed(g), torch.initialSeed(back))
      for _ = 1, 3 do assert.are.equal(torch.random(g), torch.random(back)) end
      local x, y = torch.DoubleTensor(5):uniform(g, 0, 1), torch.DoubleTensor(5):uniform(back, 0, 1)
      util.assert_close(y, x, { atol = 0, rtol = 0 }, 'draws')
      -- a damaged generator names what is wrong
      local no_state = torch.serialize(g):gsub('state', 'stale')
      util.assert_error(function() torch.deserialize(no_state) end, 'cannot rebuild a torch.Generator', 'setRNGState')
      local no_seed = torch.serialize(g):gsub('initial', 'initiaX')
      util.assert_error(function() torch.deserialize(no_seed) end, 'cannot rebuild a torch.Generator', 'initial seed')
   end)
end)

describe('torch.serializeToStorage / deserializeFromStorage', function()
   it('hold the bytes of torch.serialize in a CharStorage, as big as the file torch.save writes', function()
      local obj = { t = torch.randn(math.random(1, 6), 3), s = 'x' .. math.random(), n = math.random() }
      local st = torch.serializeToStorage(obj)
      assert.are.equal('torch.CharStorage', torch.typename(st))
      assert.are.equal(torch.serialize(obj), st:string())
      local path = tmp('s.t7')
      torch.save(path, obj)
      assert.are.equal(#util.read_bytes(path), st:size())
      local back = torch.deserializeFromStorage(st)
      util.assert_close(back.t, obj.t, { atol = 0, rtol = 0 }, 'tensor')
      assert.are.equal(obj.s, back.s)
      assert.are.equal(obj.n, back.n)
      util.assert_error(function() torch.deserializeFromStorage(st:string()) end, 'expected a torch.CharStorage')
   end)
end)
