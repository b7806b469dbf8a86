-- rgc_accumulate_spec.lua: residual gradient compression's accumulation pass
-- (mt_dist_rgc_accumulate, csrc/cpu/dist_rgc.c) against a float64 reference on fresh random
-- inputs: d = g + wd p, u = m u + d, v += u (Nesterov: v += d + m u), for every combination of
-- momentum, Nesterov and weight decay, on one thread's length and on a parallel one; bad
-- arguments are refused by name and leave v as it was.
local torch = require 'moontorch'

describe('dist.rgc accumulate', function()
   local T = require 'moontorch.internal'
   local D = require('moontorch.dist.lib').C
   local maxdiff = require('spec.util').maxdiff

   local function accumulate(v, u, g, p, m, nesterov, wd)
      T.check(D.mt_dist_rgc_accumulate(v.h, u and u.h or nil, g.h, p and p.h or nil, m, nesterov and 1 or 0, wd),
         'dist.rgc')
   end

   for _, n in ipairs({ 7, 200003 }) do
      for _, case in ipairs({ { m = 0, wd = 0 }, { m = 0, wd = 1e-2 }, { m = 0.9, wd = 0 }, { m = 0.9, wd = 5e-3 },
         { m = 0.9, wd = 0, nesterov = true }, { m = 0.5, wd = 1e-2, nesterov = true } }) do
         it(('matches float64 (n %d, momentum %g%s, weight decay %g)'):format(n, case.m,
            case.nesterov and ' Nesterov' or '', case.wd), function()
            local v, g, p = torch.randn(n):float(), torch.randn(n):float(), torch.randn(n):float()
            local u = case.m > 0 and torch.randn(n):float() or nil
            -- the reference, from the same float32 inputs
            local v64, g64, p64 = v:double(), g:double(), p:double()
            local d = g64:clone():add(case.wd, p64)
            local u64
            if u then
               u64 = u:double():mul(case.m):add(d)
               if case.nesterov then v64:add(d):add(case.m, u64) else v64:add(u64) end
            else
               v64:add(d)
            end
            accumulate(v, u, g, case.wd > 0 and p or nil, case.m, case.nesterov, case.wd)
            local scale = v64:clone():abs():max()
            assert.is_true(maxdiff(v, v64) <= 1e-6 * scale, ('v is off by %g'):format(maxdiff(v, v64)))
            if u then assert.is_true(maxdiff(u, u64) <= 1e-6 * u64:clone():abs():max(), 'u is off') end
            assert.is_true(v:ne(v):sum() == 0, 'NaN in v')
         end)
      end
   end

   it('refuses bad arguments by name and leaves v as it was', function()
      local n = 100
      local v, u, g, p = torch.randn(n):float(), torch.randn(n):float(), torch.randn(n):float(), torch.randn(n):float()
      local before = v:clone()
      assert.error_matches(function() accumulate(v, nil, torch.randn(n + 1):float(), nil, 0, false, 0) end,
         'dist.rgc.accumulate: g has 101 elements but v 100')
      assert.error_matches(function() accumulate(v, nil, g, nil, 0.9, false, 0) end,
         'momentum > 0 needs the velocity u')
      assert.error_matches(function() accumulate(v, u, g, nil, 0, false, 0) end, 'u is given but momentum is 0')
      assert.error_matches(function() accumulate(v, nil, g, nil, 0, true, 0) end, 'Nesterov needs momentum > 0')
      assert.error_matches(function() accumulate(v, nil, g, nil, 0, false, 0.1) end,
         'weight decay needs the parameters p')
      assert.error_matches(function() accumulate(v, nil, g:double(), nil, 0, false, 0) end, 'g must be float32')
      assert.error_matches(function() accumulate(v, nil, v, nil, 0, false, 0) end, 'v must not be u, g or p')
      assert.error_matches(function() accumulate(v, u, g, p, -1, false, 0) end, 'must be finite and >= 0')
      assert.equal(0, maxdiff(v, before))
   end)
end)
