-- demo.lua: a first look at moontorch (`make run` shows it when no other recipe is present).
local torch = require 'moontorch'
torch.manualSeed(42)

local a = torch.randn(3, 4)              -- normal(0, 1) entries
local b = torch.rand(4, 2)               -- uniform [0, 1) entries
local c = torch.mm(a, b)                 -- matrix product: 3x2
print('a:') print(a)
print('b:') print(b)
print('a @ b:') print(c)
print('column sums of a @ b:') print(c:sum(1))
print(('sum %.4f   max of a %.4f   mean of b %.4f'):format(c:sum(), a:max(), b:mean()))
if torch.cuda and torch.cuda.isAvailable() then
   print('a @ b on the GPU:') print(torch.mm(a:cuda(), b:cuda()):float())
end
