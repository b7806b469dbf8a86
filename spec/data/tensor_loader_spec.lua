-- tensor_loader_spec.lua: data.TensorLoader, the batches of tensors held in memory. Samples are
-- told apart by an id written into them, so order, coverage, flips and the slices of each rank
-- are checked on the rows delivered.
local torch = require 'moontorch'
local data = require 'moontorch.data'
local util = require 'spec.util'

-- n samples of 1 x 2 x w whose first pixel holds their 1-based id; labels id % 10 + 1
local function samples(n, w, typename)
   local x = torch.FloatTensor(n, 1, 2, w):uniform(0.5, 1)
   for i = 1, n do x[i][1][1][1] = i end
   local y = torch.LongTensor(n)
   for i = 1, n do y[i] = i % 10 + 1 end
   return x:type(typename or 'torch.FloatTensor'), y
end

-- every batch of an epoch: { ids = {...}, x = clone, y = clone }
local function epoch(src, e, first)
   local out = {}
   for x, y, info in src:run(e, first) do
      assert.are.equal(x:size(1), info.count)
      local ids = {}
      for i = 1, info.count do
         -- a flipped sample has its id in the last column instead of the first
         local row = x[i][1][1]
         ids[i] = row[1] >= 1 and row[1] or row[row:size(1)]
      end
      out[#out + 1] = { ids = ids, x = x:clone(), y = y:clone(), count = info.count }
   end
   return out
end

describe('data.TensorLoader', function()
   it('without shuffle gives views of x and y in order, the last batch short unless dropLast', function()
      local n, bs = math.random(20, 40), math.random(3, 7)
      local x, y = samples(n, 5)
      local src = data.TensorLoader(x, y, { batchSize = bs })
      assert.are.equal(math.ceil(n / bs), src:nbatches())
      local b = 0
      for xb, yb, info in src:run(1) do
         b = b + 1
         local len = math.min(bs, n - (b - 1) * bs)
         assert.are.same({ epoch = 1, index = b, nbatches = src:nbatches(), count = len }, info)
         util.assert_close(xb, x:narrow(1, (b - 1) * bs + 1, len), { atol = 0, rtol = 0 }, 'batch ' .. b)
         util.assert_close(yb, y:narrow(1, (b - 1) * bs + 1, len), { atol = 0, rtol = 0 }, 'labels ' .. b)
      end
      assert.are.equal(src:nbatches(), b)
      assert.are.equal(math.floor(n / bs), data.TensorLoader(x, y, { batchSize = bs, dropLast = true }):nbatches())
      assert.are.same({}, src:errors())
   end)

   it('with shuffle draws each epoch\'s order from (seed, epoch) and covers every sample once', function()
      local n, bs, seed = math.random(30, 60), math.random(4, 9), math.random(1, 1000)
      local x, y = samples(n, 6, 'torch.DoubleTensor')
      local src = data.TensorLoader(x, y, { batchSize = bs, shuffle = true, seed = seed })
      local e = math.random(1, 5)
      local batches = epoch(src, e)
      torch.manualSeed(seed * 1000003 + e)
      local perm, k = torch.randperm(n):long(), 0
      for _, b in ipairs(batches) do
         assert.are.equal('torch.DoubleTensor', torch.type(b.x))
         for i, id in ipairs(b.ids) do
            k = k + 1
            assert.are.equal(perm[k], id)
            assert.are.equal(id % 10 + 1, b.y[i]) -- each label stays with its sample
         end
      end
      assert.are.equal(n, k)
      -- the same epoch again, or started at a later batch, gives the same batches
      local first = math.random(2, #batches)
      local again = epoch(src, e, first)
      for i = first, #batches do assert.are.same(batches[i].ids, again[i - first + 1].ids) end
      local other = epoch(src, e + 1)
      assert.are_not.same(batches[1].ids, other[1].ids)
   end)

   it('flips samples along their last dimension, drawn from the generator batch by batch', function()
      local n, bs, w = 64, 16, 7
      local x, y = samples(n, w)
      local src = data.TensorLoader(x, y, { batchSize = bs, shuffle = true, flip = true, seed = 3 })
      local flipped, kept = 0, 0
      local it = src:run(2)
      local state -- the generator before batch 3, as a mid-epoch checkpoint keeps it
      local batches = {}
      for b = 1, src:nbatches() do
         if b == 3 then state = torch.getRNGState() end
         local xb = it()
         batches[b] = xb:clone()
         for i = 1, bs do
            local id = xb[i][1][1][1] >= 1 and xb[i][1][1][1] or xb[i][1][1][w]
            local want = x[id]
            if xb[i][1][1][1] >= 1 then
               kept = kept + 1
               util.assert_close(xb[i], want, { atol = 0, rtol = 0 }, 'kept')
            else
               flipped = flipped + 1
               for c = 1, w do
                  util.assert_close(xb[i]:select(3, c), want:select(3, w + 1 - c), { atol = 0, rtol = 0 }, 'flipped')
               end
            end
         end
      end
      assert.is_true(flipped > 10 and kept > 10, ('%d flipped, %d kept'):format(flipped, kept))
      -- resuming at batch 3 with the generator's state repeats the epoch's flips
      local again = src:run(2, 3)
      torch.setRNGState(state)
      for b = 3, src:nbatches() do
         util.assert_close(again(), batches[b], { atol = 0, rtol = 0 }, 'resumed batch ' .. b)
      end
   end)

   it('gives each of world ranks its slice of every batch, the flips of the whole batch', function()
      local n, bs = math.random(40, 80), math.random(5, 12)
      local x, y = samples(n, 4)
      local function src(rank, world)
         return data.TensorLoader(x, y, { batchSize = bs, shuffle = true, flip = true, seed = 9, dropLast = true,
            rank = rank, world = world })
      end
      local whole = epoch(src(0, 1), 4)
      for _, world in ipairs { 2, 3 } do
         local parts = {}
         for r = 0, world - 1 do parts[r] = epoch(src(r, world), 4) end
         for b, batch in ipairs(whole) do
            local rows = {}
            for r = 0, world - 1 do
               local p = parts[r][b]
               local len = batch.count
               assert.are.equal(math.floor(len * (r + 1) / world) - math.floor(len * r / world), p.count)
               for i = 1, p.count do rows[#rows + 1] = p.x[i] end
            end
            assert.are.equal(batch.count, #rows)
            for i, row in ipairs(rows) do
               local what = ('world %d batch %d row %d'):format(world, b, i)
               util.assert_close(row, batch.x[i], { atol = 0, rtol = 0 }, what)
            end
         end
      end
   end)

   it('refuses what it cannot batch, naming it', function()
      local x, y = samples(10, 3)
      util.assert_error(function() data.TensorLoader(x, y, { batchSze = 4 }) end, 'unknown option "batchSze"')
      util.assert_error(function() data.TensorLoader(x, y:narrow(1, 1, 9)) end, '10 samples but 9 labels')
      util.assert_error(function() data.TensorLoader(x, y, { batchSize = 0 }) end, 'batchSize must be an integer >= 1')
      util.assert_error(function() data.TensorLoader(x, y, { rank = 2, world = 2 }) end, 'rank 2 of 2 ranks')
      util.assert_error(function() data.TensorLoader(x) end, 'expected the samples and labels')
   end)
end)
