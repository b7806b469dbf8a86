-- tensor_random.lua: the default generator and random draws with Torch7's API.
--
-- The generator is counter-based (Philox, csrc/core/philox.h): its state is just
-- {seed, offset}; a draw of n elements uses counters offset .. offset+n-1 and then advances
-- offset by n. So a seed gives the same numbers on the CPU and on CUDA, whatever the thread
-- count, and torch.getRNGState()/setRNGState() are exact.
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods, is_tensor = T.C, T.check, T.methods, T.is_tensor
   local floor = math.floor

   local gen = ffi.new('mt_generator')
   torch._generator = gen
   local initial_seed = 0
   local TWO53 = 2 ^ 53

   local function is_int(x) return type(x) == 'number' and x == floor(x) and x > -TWO53 and x < TWO53 end

   -- seeds/offsets as Lua numbers when exact, else as uint64 cdata
   local function as_lua(u64)
      if u64 < TWO53 then return tonumber(u64) end
      return ffi.new('uint64_t', u64)
   end
   local function to_u64(op, v, what)
      if type(v) == 'cdata' then return ffi.cast('uint64_t', v) end
      if not is_int(v) then error(('%s: %s must be an integer, got %s'):format(op, what, tostring(v)), 3) end
      return ffi.cast('uint64_t', ffi.cast('int64_t', v)) -- negative seeds wrap, like a C long would
   end

   function torch.manualSeed(seed)
      gen.seed = to_u64('manualSeed', seed, 'the seed')
      gen.offset = 0
      initial_seed = seed
   end

   -- a fresh seed from the OS (or the clock), set and returned
   function torch.seed()
      local s
      local f = io.open('/dev/urandom', 'rb')
      if f then
         local bytes = f:read(6)
         f:close()
         if bytes and #bytes == 6 then
            s = 0
            for i = 1, 6 do s = s * 256 + bytes:byte(i) end
         end
      end
      s = s or (os.time() * 1000 + floor(os.clock() * 1000)) % TWO53
      torch.manualSeed(s)
      return s
   end

   function torch.initialSeed() return initial_seed end

   function torch.getRNGState() return { seed = as_lua(gen.seed), offset = as_lua(gen.offset) } end

   function torch.setRNGState(state)
      if type(state) ~= 'table' or state.seed == nil or state.offset == nil then
         error('setRNGState: expected a table {seed=, offset=} from getRNGState, got ' .. type(state), 2)
      end
      gen.seed = to_u64('setRNGState', state.seed, 'seed')
      gen.offset = to_u64('setRNGState', state.offset, 'offset')
   end

   ------------------------------------------------------------------------------------------
   -- in-place draws
   function methods.uniform(t, a, b)
      a, b = a or 0, b or 1
      if type(a) ~= 'number' or type(b) ~= 'number' then error('uniform: bounds must be numbers', 2) end
      check(C.mt_random_uniform(T.h(t, 'uniform'), gen, a, b))
      return t
   end

   function methods.normal(t, mean, std)
      mean, std = mean or 0, std or 1
      if type(mean) ~= 'number' or type(std) ~= 'number' then error('normal: mean and std must be numbers', 2) end
      check(C.mt_random_normal(T.h(t, 'normal'), gen, mean, std))
      return t
   end

   -- t:bernoulli(p): 1 with probability p (a number, or a tensor of probabilities like t)
   function methods.bernoulli(t, p)
      local h = T.h(t, 'bernoulli')
      p = p == nil and 0.5 or p
      if is_tensor(p) then
         local u = T.new(C.mt_tensor_dtype(p.h), C.mt_tensor_device(h), T.sizes(t))
         check(C.mt_random_uniform(u.h, gen, 0, 1))
         local m = T.empty(T.BYTE, C.mt_tensor_device(h))
         check(C.mt_binary(C.MT_LT, m.h, u.h, p.h, 1))
         check(C.mt_copy(h, m.h))
         return t
      end
      if type(p) ~= 'number' then error('bernoulli: probability must be a number or a tensor, got ' .. type(p), 2) end
      check(C.mt_random_bernoulli(h, gen, p))
      return t
   end

   -- t:random(a, b): integers uniform in [a, b]; t:random(b): [1, b]; t:random(): [1, 2^32]
   function methods.random(t, a, b)
      local h = T.h(t, 'random')
      if a == nil then a, b = 1, 2 ^ 32
      elseif b == nil then a, b = 1, a end
      if not is_int(a) or not is_int(b) or a > b then
         error(('random: bounds must be integers with a <= b, got %s and %s'):format(tostring(a), tostring(b)), 2)
      end
      check(C.mt_random_uniform(h, gen, a, b + 1))
      if C.mt_dtype_is_floating(C.mt_tensor_dtype(h)) == 1 then check(C.mt_unary(C.MT_FLOOR, h, h, 0, 0)) end
      return t
   end

   ------------------------------------------------------------------------------------------
   -- factories: torch.rand([res,] sizes...), torch.randn([res,] sizes...)
   local function size_args(op, a, ...)
      local s = a
      if type(a) == 'number' then s = { a, ... }
      elseif type(a) ~= 'table' then error(op .. ': expected sizes, got ' .. type(a), 3) end
      local r = {}
      for i = 1, #s do r[i] = s[i] end
      return r
   end
   local function factory(op, draw)
      return function(a, ...)
         local res
         if is_tensor(a) then
            res = a
            check(C.mt_tensor_resize(res.h, T.sizes_buf(size_args(op, ...))))
         else
            res = T.new(T.default_dtype(), T.CPU, size_args(op, a, ...))
         end
         draw(res)
         return res
      end
   end
   torch.rand = factory('rand', function(t) check(C.mt_random_uniform(t.h, gen, 0, 1)) end)
   torch.randn = factory('randn', function(t) check(C.mt_random_normal(t.h, gen, 0, 1)) end)

   -- torch.randperm([res,] n): a random permutation of 1..n (the default tensor type, as
   -- Torch7), Fisher-Yates driven by the generator (n draws)
   function torch.randperm(res, n)
      if not is_tensor(res) then res, n = nil, res end
      if not is_int(n) or n < 0 then error('randperm: n must be a non-negative integer, got ' .. tostring(n), 2) end
      local perm = T.new(T.LONG, T.CPU, { n })
      if n > 0 then
         local u = T.new(T.DOUBLE, T.CPU, { n })
         check(C.mt_random_uniform(u.h, gen, 0, 1))
         local up = ffi.cast('double*', C.mt_tensor_data(u.h))
         local p = ffi.cast('int64_t*', C.mt_tensor_data(perm.h))
         for i = 0, n - 1 do p[i] = i + 1 end
         for i = n - 1, 1, -1 do
            local j = floor(up[i] * (i + 1))
            p[i], p[j] = p[j], p[i]
         end
      end
      if res == nil then res = T.new(T.default_dtype(), T.CPU, { n }) end
      check(C.mt_tensor_resize(res.h, T.sizes_buf { n }))
      check(C.mt_copy(res.h, perm.h))
      return res
   end

   ------------------------------------------------------------------------------------------
   -- single numbers: torch.uniform([a, b]), torch.normal([mean, std]), torch.bernoulli([p]),
   -- torch.random([a,] [b])
   local one = T.new(T.DOUBLE, T.CPU, { 1 })
   local onep = ffi.cast('double*', C.mt_tensor_data(one.h))
   function torch.uniform(a, b)
      methods.uniform(one, a, b)
      return onep[0]
   end
   function torch.normal(mean, std)
      methods.normal(one, mean, std)
      return onep[0]
   end
   function torch.bernoulli(p)
      methods.bernoulli(one, p)
      return onep[0]
   end
   function torch.random(a, b)
      methods.random(one, a, b)
      return onep[0]
   end

   torch.seed()
end
