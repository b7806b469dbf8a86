-- tanh_shrink_spec.lua: nn.TanhShrink, x - tanh(x), against Lua's math.tanh in float64 and its
-- input jacobian with nn.Jacobian, on fresh random inputs.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local util = require 'spec.util'

local peer = require 'spec.nn.peer'

describe('nn.TanhShrink', function()
   before_each(function() torch.setdefaulttensortype('torch.DoubleTensor') end)
   after_each(function() torch.setdefaulttensortype('torch.FloatTensor') end)

   it('computes x - tanh(x) and its gradient tanh(x)^2 * gradOutput', function()
      local m = nn.TanhShrink()
      local x, go = peer.rand(3, 4, 5):mul(3), peer.rand(3, 4, 5)
      local xf, gf = util.flat(x), util.flat(go)
      local want, wgrad = {}, {}
      for i, v in ipairs(xf) do
         want[i] = v - math.tanh(v)
         wgrad[i] = gf[i] * math.tanh(v) ^ 2
      end
      util.assert_close(util.flat(m:forward(x)), want, { atol = 1e-15, rtol = 1e-12 }, 'output')
      util.assert_close(util.flat(m:backward(x, go)), wgrad, { atol = 1e-15, rtol = 1e-12 }, 'gradInput')
      assert.are.equal('nn.Tanh', torch.type(m.tanh)) -- Torch7's field, for its files
   end)

   it('has the input jacobian of its forward', function()
      peer.jac(nn.TanhShrink(), peer.rand(2, 3, 5), 'TanhShrink')
   end)

   it('names itself when the input is not a tensor', function()
      assert.has_error(function() nn.TanhShrink():forward(3) end, 'nn.TanhShrink: expected a tensor input, got number')
   end)
end)
