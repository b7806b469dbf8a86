-- table_zip_spec.lua: the table.md modules CAddTensorTable, ZipTable, ZipTableOneToMany and
-- MixtureTable: forward against float64 references built element by element on random inputs,
-- gradients by nn.Jacobian through nested table inputs, and the errors for bad input.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local J = nn.Jacobian
local TOL = 1e-6
local R = torch.randn

describe('nn table modules (CAddTensorTable, ZipTable, MixtureTable)', function()
   local saved
   before_each(function()
      saved = torch.getdefaulttensortype()
      torch.setdefaulttensortype('torch.DoubleTensor')
   end)
   after_each(function() torch.setdefaulttensortype(saved) end)

   it('CAddTensorTable adds the tensor to each of the table\'s', function()
      local m = nn.CAddTensorTable()
      local v, list = R(2, 3), { R(2, 3), R(2, 3), R(2, 3) }
      local y = m:forward({ v, list })
      assert.are.equal(3, #y)
      for k = 1, 3 do
         for i = 1, 2 do for j = 1, 3 do assert.are.equal(v[i][j] + list[k][i][j], y[k][i][j]) end end
      end
      local go = { R(2, 3), R(2, 3), R(2, 3) }
      local gi = m:backward({ v, list }, go)
      assert(util.maxdiff(gi[1], go[1] + go[2] + go[3]) < 1e-15)
      for k = 1, 3 do assert.are.equal(0, util.maxdiff(gi[2][k], go[k])) end
      -- a shorter table next time: no stale entries
      assert.are.equal(1, #m:forward({ v, { list[1] } }))
      assert.are.equal(1, #m:backward({ v, { list[1] } }, { go[1] })[2])
      assert(J.testJacobian(nn.CAddTensorTable(), { torch.Tensor(4), { torch.Tensor(4), torch.Tensor(4) } }) < TOL)
      util.assert_error(function() m:forward({ v }) end, 'nn.CAddTensorTable', 'table of tensors')
   end)

   it('ZipTable zips a table of tables, forward and backward', function()
      local m = nn.ZipTable()
      local x = { { R(2), R(3) }, { R(2), R(3) }, { R(2), R(3) } }
      local y = m:forward(x)
      assert.are.equal(2, #y)
      for i = 1, 3 do for j = 1, 2 do assert.are.equal(x[i][j], y[j][i]) end end
      local go = { { R(2), R(2), R(2) }, { R(3), R(3), R(3) } }
      local gi = m:backward(x, go)
      assert.are.equal(3, #gi)
      for i = 1, 3 do for j = 1, 2 do assert.are.equal(go[j][i], gi[i][j]) end end
      assert(J.testJacobian(nn.Sequential():add(nn.ZipTable()):add(nn.MapTable(nn.JoinTable(1))),
         { { torch.Tensor(2), torch.Tensor(3) }, { torch.Tensor(2), torch.Tensor(3) } }) < TOL)
      util.assert_error(function() m:forward({ R(2) }) end, 'nn.ZipTable', 'input[1] must be a table')
   end)

   it('ZipTableOneToMany pairs the element with each, summing its gradients', function()
      local m = nn.ZipTableOneToMany()
      local v, list = R(3), { R(4), R(4), R(4) }
      local y = m:forward({ v, list })
      assert.are.equal(3, #y)
      for i = 1, 3 do
         assert.are.equal(v, y[i][1])
         assert.are.equal(list[i], y[i][2])
      end
      local go = { { R(3), R(4) }, { R(3), R(4) }, { R(3), R(4) } }
      local gi = m:backward({ v, list }, go)
      assert(util.maxdiff(gi[1], go[1][1] + go[2][1] + go[3][1]) < 1e-15)
      for i = 1, 3 do assert.are.equal(go[i][2], gi[2][i]) end
      util.assert_error(function() m:forward({ v }) end, 'nn.ZipTableOneToMany', 'element and a table')
   end)

   -- the float64 mixture: out[b][e] = sum_i g[b][i] * expert_i[b][e], over flat experts
   local function mixture(g, experts)
      local B, n = g:size(1), g:size(2)
      local out = experts[1]:clone():zero()
      local o = out:view(B, -1)
      for b = 1, B do
         for e = 1, o:size(2) do
            local s = 0
            for i = 1, n do s = s + g[b][i] * experts[i]:contiguous():view(B, -1)[b][e] end
            o[b][e] = s
         end
      end
      return out
   end

   it('MixtureTable weights a table of experts by the gater', function()
      local g = torch.rand(4, 3)
      local experts = { R(4, 2, 5), R(4, 2, 5), R(4, 2, 5) }
      local m = nn.MixtureTable()
      local y = m:forward({ g, experts })
      assert(util.maxdiff(y, mixture(g, experts)) < 1e-12)
      local go = R(4, 2, 5)
      local gi = m:backward({ g, experts }, go)
      for i = 1, 3 do
         for b = 1, 4 do
            assert(math.abs(gi[1][b][i] - torch.cmul(go[b], experts[i][b]):sum()) < 1e-12)
            assert(util.maxdiff(gi[2][i][b], go[b] * g[b][i]) < 1e-12)
         end
      end
      assert(J.testJacobian(nn.MixtureTable(), { torch.Tensor(3, 2), { torch.Tensor(3, 4), torch.Tensor(3, 4) } })
         < TOL)
      -- no batch: a gater vector and expert vectors
      local gv, ev = torch.rand(3), { R(6), R(6), R(6) }
      local yv = nn.MixtureTable():forward({ gv, ev })
      assert(util.maxdiff(yv, ev[1] * gv[1] + ev[2] * gv[2] + ev[3] * gv[3]) < 1e-12)
      local ev5 = { torch.Tensor(5), torch.Tensor(5), torch.Tensor(5) }
      assert(J.testJacobian(nn.MixtureTable(), { torch.Tensor(3), ev5 }) < TOL)
      util.assert_error(function() m:forward({ g, { R(4, 2) } }) end, 'nn.MixtureTable', '3 weights, 1 experts')
   end)

   it('MixtureTable takes the experts as one tensor along dim', function()
      local g = torch.rand(4, 3)
      local e = R(4, 3, 5)
      local experts = {}
      for i = 1, 3 do experts[i] = e:select(2, i):clone() end
      local m = nn.MixtureTable(2)
      local y = m:forward({ g, e })
      assert(util.maxdiff(y, mixture(g, experts)) < 1e-12)
      assert(J.testJacobian(nn.MixtureTable(2), { torch.Tensor(2, 3), torch.Tensor(2, 3, 4) }) < TOL)
      -- experts along dim 3 of a 4-d tensor
      local e3 = R(2, 4, 3, 2)
      local ex3 = {}
      for i = 1, 3 do ex3[i] = e3:select(3, i):clone() end
      local g3 = torch.rand(2, 3)
      assert(util.maxdiff(nn.MixtureTable(3):forward({ g3, e3 }), nn.MixtureTable():forward({ g3, ex3 })) < 1e-12)
      assert(J.testJacobian(nn.MixtureTable(3), { torch.Tensor(2, 3), torch.Tensor(2, 4, 3, 2) }) < TOL)
      -- no batch: experts along dim 1
      assert(J.testJacobian(nn.MixtureTable(1), { torch.Tensor(3), torch.Tensor(3, 4) }) < TOL)
      util.assert_error(function() m:forward({ g, R(4, 2, 5) }) end, 'nn.MixtureTable', 'do not match')
   end)
end)
