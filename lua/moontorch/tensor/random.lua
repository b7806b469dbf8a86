-- random.lua: the default generator and random draws with Torch7's API.
--
-- The generator is counter-based (Philox, csrc/core/philox.h): its state is just
-- {seed, offset}; a draw of n elements uses counters offset .. offset+n-1 and then advances
-- offset by n. So a seed gives the same numbers on the CPU and on CUDA, whatever the thread
-- count, and torch.getRNGState()/setRNGState() are exact.
local ffi = require 'ffi'

return function(torch, T)
   local C, check, methods, is_tensor = T.clib, T.check, T.tensor_methods, T.is_tensor
   local floor = math.floor

   local TWO53 = 2 ^ 53

   local function is_int(x) return type(x) == 'number' and x == floor(x) and x > -TWO53 and x < TWO53 end

   local function to_u64(op, v, what)
      if type(v) == 'cdata' then return ffi.cast('uint64_t', v) end
      if not is_int(v) then error(('%s: %s must be an integer, got %s'):format(op, what, tostring(v)), 3) end
      return ffi.cast('uint64_t', ffi.cast('int64_t', v)) -- negative seeds wrap, like a C long would
   end

   ------------------------------------------------------------------------------------------
   -- generators: torch.Generator() objects, each with its own (seed, offset) and initial seed;
   -- every function below takes one as optional first argument, else uses the default one.
   local class = require 'moontorch.class'
   local Generator = class.metatable('torch.Generator') -- when moontorch is loaded again
   if Generator then
      torch.Generator = function()
         local o = class.factory('torch.Generator')()
         o:__init()
         return o
      end
   else Generator = class('torch.Generator', nil, torch) end
   function Generator:__init() self.g = ffi.new('mt_generator'); self.initial = 0; torch.seed(self) end
   local function is_gen(x) return type(x) == 'table' and getmetatable(x) == Generator end
   -- torch.save/load (io/serialize.lua): the state as its bytes, since g is FFI data
   function Generator:__t7write() return { state = torch.getRNGState(self), initial = self.initial } end
   function Generator:__t7read(fields)
      if type(fields.initial) ~= 'number' then
         error('a torch.Generator needs its initial seed (a number), got ' .. type(fields.initial), 2)
      end
      self.g = ffi.new('mt_generator')
      torch.setRNGState(self, fields.state)
      self.initial = fields.initial
   end
   local gen = ffi.new('mt_generator') -- the default generator's state
   torch._generator = gen
   local default = setmetatable({ g = gen, initial = 0 }, Generator)
   -- (gen, ...) when the first argument is a generator, else (default, ...)
   local function gen_args(a, ...)
      if is_gen(a) then return a, ... end
      return default, a, ...
   end

   -- A fractional seed is cut toward zero, as Torch7's C cast to long does (nn.test seeds with
   -- 1e5 * torch.tic()); NaN and infinities have no such value.
   local function manual_seed(G, seed)
      if type(seed) == 'number' and seed == seed and seed ~= 1 / 0 and seed ~= -1 / 0 then
         seed = seed < 0 and math.ceil(seed) or floor(seed)
      end
      G.g.seed = to_u64('manualSeed', seed, 'the seed')
      G.g.offset = 0
      G.initial = seed
   end
   function torch.manualSeed(...)
      local G, seed = gen_args(...)
      manual_seed(G, seed)
   end

   -- a fresh seed from the OS (or the clock), set and returned
   function torch.seed(...)
      local G = gen_args(...)
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
      manual_seed(G, s)
      return s
   end

   function torch.initialSeed(...)
      local G = gen_args(...)
      return G.initial
   end

   -- the state as a ByteTensor (Torch7): a copy of the generator's bytes, seed then offset
   local STATE_BYTES = ffi.sizeof('mt_generator')
   function torch.getRNGState(...)
      local G = gen_args(...)
      local st = T.new_tensor(T.BYTE, T.CPU_DEVICE, { STATE_BYTES })
      ffi.copy(C.mt_tensor_data(st.h), G.g, STATE_BYTES)
      return st
   end

   function torch.setRNGState(...)
      local G, state = gen_args(...)
      if type(state) == 'table' and state.seed ~= nil and state.offset ~= nil then -- the older {seed=, offset=}
         G.g.seed = to_u64('setRNGState', state.seed, 'seed')
         G.g.offset = to_u64('setRNGState', state.offset, 'offset')
         return state
      end
      if not is_tensor(state) or state:type() ~= 'torch.ByteTensor' or state:nElement() ~= STATE_BYTES then
         error(('setRNGState: expected the %d-byte torch.ByteTensor from getRNGState, got %s'):format(STATE_BYTES,
            is_tensor(state) and (state:type() .. ' of ' .. state:nElement() .. ' elements') or type(state)), 2)
      end
      local c = state:contiguous()
      ffi.copy(G.g, C.mt_tensor_data(c.h), STATE_BYTES)
      return state
   end

   ------------------------------------------------------------------------------------------
   -- in-place draws
   -- t:uniform([gen,] a, b), t:normal([gen,] mean, std), t:bernoulli([gen,] p),
   -- t:random([gen,] a, b): in place, from gen or the default generator
   function methods.uniform(t, ...)
      local G, a, b = gen_args(...)
      a, b = a or 0, b or 1
      if type(a) ~= 'number' or type(b) ~= 'number' then error('uniform: bounds must be numbers', 2) end
      check(C.mt_random_uniform(T.handle(t, 'uniform'), G.g, a, b))
      return t
   end

   function methods.normal(t, ...)
      local G, mean, std = gen_args(...)
      mean, std = mean or 0, std or 1
      if type(mean) ~= 'number' or type(std) ~= 'number' then error('normal: mean and std must be numbers', 2) end
      check(C.mt_random_normal(T.handle(t, 'normal'), G.g, mean, std))
      return t
   end

   -- t:bernoulli(p): 1 with probability p (a number, or a tensor of probabilities like t)
   function methods.bernoulli(t, ...)
      local G, p = gen_args(...)
      local gstate = G.g
      local h = T.handle(t, 'bernoulli')
      p = p == nil and 0.5 or p
      if is_tensor(p) then
         local u = T.new_tensor(C.mt_tensor_dtype(p.h), C.mt_tensor_device(h), T.sizes(t))
         check(C.mt_random_uniform(u.h, gstate, 0, 1))
         local m = T.empty_tensor(T.BYTE, C.mt_tensor_device(h))
         check(C.mt_binary(C.MT_LT, m.h, u.h, p.h, 1))
         check(C.mt_copy(h, m.h))
         return t
      end
      if type(p) ~= 'number' then error('bernoulli: probability must be a number or a tensor, got ' .. type(p), 2) end
      check(C.mt_random_bernoulli(h, gstate, p))
      return t
   end

   -- t:random(a, b): integers uniform in [a, b]; t:random(b): [1, b]; t:random(): [1, 2^32]
   function methods.random(t, ...)
      local G, a, b = gen_args(...)
      local h = T.handle(t, 'random')
      if a == nil then a, b = 1, 2 ^ 32
      elseif b == nil then a, b = 1, a end
      if not is_int(a) or not is_int(b) or a > b then
         error(('random: bounds must be integers with a <= b, got %s and %s'):format(tostring(a), tostring(b)), 2)
      end
      check(C.mt_random_uniform(h, G.g, a, b + 1))
      if C.mt_dtype_is_floating(C.mt_tensor_dtype(h)) == 1 then check(C.mt_unary(C.MT_FLOOR, h, h, 0, 0)) end
      return t
   end

   ------------------------------------------------------------------------------------------
   -- factories: torch.rand([res,] [gen,] sizes...), torch.randn([res,] [gen,] sizes...)
   local function size_args(op, a, ...)
      local s = T.size_list(a) -- a LongStorage becomes a table
      if type(a) == 'number' then s = { a, ... }
      elseif a == nil or type(s) ~= 'table' then error(op .. ': expected sizes, got ' .. type(a), 3) end
      local r = {}
      for i = 1, #s do r[i] = s[i] end
      return r
   end
   local function factory(op, draw)
      local function sized(res, G, ...)
         if res then check(C.mt_tensor_resize(res.h, T.sizes_buf(size_args(op, ...))))
         else res = T.new_tensor(T.default_dtype(), T.CPU_DEVICE, size_args(op, ...)) end
         draw(res, G.g)
         return res
      end
      return function(a, ...)
         if is_tensor(a) then return sized(a, gen_args(...)) end
         return sized(nil, gen_args(a, ...))
      end
   end
   torch.rand = factory('rand', function(t, g) check(C.mt_random_uniform(t.h, g, 0, 1)) end)
   torch.randn = factory('randn', function(t, g) check(C.mt_random_normal(t.h, g, 0, 1)) end)

   -- torch.randperm([res,] n): a random permutation of 1..n (the default tensor type, as
   -- Torch7), Fisher-Yates driven by the generator (n draws)
   local function randperm(res, G, n)
      local gstate = G.g
      if not is_int(n) or n < 0 then error('randperm: n must be a non-negative integer, got ' .. tostring(n), 2) end
      local perm = T.new_tensor(T.LONG, T.CPU_DEVICE, { n })
      if n > 0 then
         local u = T.new_tensor(T.DOUBLE, T.CPU_DEVICE, { n })
         check(C.mt_random_uniform(u.h, gstate, 0, 1))
         local up = ffi.cast('double*', C.mt_tensor_data(u.h))
         local p = ffi.cast('int64_t*', C.mt_tensor_data(perm.h))
         for i = 0, n - 1 do p[i] = i + 1 end
         for i = n - 1, 1, -1 do
            local j = floor(up[i] * (i + 1))
            p[i], p[j] = p[j], p[i]
         end
      end
      if res == nil then res = T.new_tensor(T.default_dtype(), T.CPU_DEVICE, { n }) end
      check(C.mt_tensor_resize(res.h, T.sizes_buf { n }))
      check(C.mt_copy(res.h, perm.h))
      return res
   end
   function torch.randperm(a, ...)
      if is_tensor(a) then return randperm(a, gen_args(...)) end
      return randperm(nil, gen_args(a, ...))
   end

   ------------------------------------------------------------------------------------------
   -- inverse-CDF draws from uniforms u in [0, 1), computed in float64 on t's device, then copied
   -- into t (any dtype):
   --   t:exponential([gen,] lambda=1)       -log(1 - u) / lambda
   --   t:cauchy([gen,] median=0, sigma=1)   median + sigma * tan(pi * (u - 1/2))
   --   t:geometric([gen,] p=0.5)            floor(log(1 - u) / log(p)) + 1: P(i) = (1-p) p^(i-1)
   local function unary(op, out, a, p1) check(C.mt_unary(op, out.h, a.h, p1 or 0, 0)) end
   local function draw(op, t, G, finish)
      local h = T.handle(t, op)
      local u = T.new_tensor(T.DOUBLE, C.mt_tensor_device(h), T.sizes(t))
      if C.mt_tensor_numel(u.h) > 0 then
         check(C.mt_random_uniform(u.h, G.g, 0, 1))
         finish(u)
         check(C.mt_copy(h, u.h))
      end
      return t
   end
   local function positive(op, what, v, fallback)
      v = v == nil and fallback or v
      if type(v) ~= 'number' or not (v > 0) then -- luacheck: ignore 581 (rejects NaN)
         error(('%s: %s must be a positive number, got %s'):format(op, what, tostring(v)), 3)
      end
      return v
   end
   -- log(1 - u) into u
   local function log1m(u) unary(C.MT_NEG, u, u); unary(C.MT_LOG1P, u, u) end

   function methods.exponential(t, ...)
      local G, lambda = gen_args(...)
      lambda = positive('exponential', 'lambda', lambda, 1)
      return draw('exponential', t, G, function(u) log1m(u); unary(C.MT_MUL_SCALAR, u, u, -1 / lambda) end)
   end

   function methods.cauchy(t, ...)
      local G, median, sigma = gen_args(...)
      median = median == nil and 0 or median
      if type(median) ~= 'number' then error('cauchy: median must be a number, got ' .. type(median), 2) end
      sigma = positive('cauchy', 'sigma', sigma, 1)
      return draw('cauchy', t, G, function(u)
         unary(C.MT_ADD_SCALAR, u, u, -0.5)
         unary(C.MT_MUL_SCALAR, u, u, math.pi)
         unary(C.MT_TAN, u, u)
         unary(C.MT_MUL_SCALAR, u, u, sigma)
         unary(C.MT_ADD_SCALAR, u, u, median)
      end)
   end

   function methods.geometric(t, ...)
      local G, p = gen_args(...)
      p = p == nil and 0.5 or p
      if type(p) ~= 'number' or not (p > 0 and p < 1) then
         error(('geometric: p must satisfy 0 < p < 1, got %s'):format(tostring(p)), 2)
      end
      return draw('geometric', t, G, function(u)
         log1m(u)
         unary(C.MT_MUL_SCALAR, u, u, 1 / math.log(p))
         unary(C.MT_FLOOR, u, u)
         unary(C.MT_ADD_SCALAR, u, u, 1)
      end)
   end

   ------------------------------------------------------------------------------------------
   -- single numbers: torch.uniform([gen,] [a, b]), torch.normal([gen,] [mean, std]),
   -- torch.bernoulli([gen,] [p]), torch.random([gen,] [a,] [b]), torch.exponential([gen,]
   -- [lambda]), torch.cauchy([gen,] [median, sigma]), torch.geometric([gen,] [p])
   local one = T.new_tensor(T.DOUBLE, T.CPU_DEVICE, { 1 })
   local onep = ffi.cast('double*', C.mt_tensor_data(one.h))
   for _, name in ipairs { 'uniform', 'normal', 'bernoulli', 'random', 'exponential', 'cauchy', 'geometric' } do
      local m = methods[name]
      torch[name] = function(...)
         m(one, ...)
         return onep[0]
      end
   end

   torch.seed()
end
