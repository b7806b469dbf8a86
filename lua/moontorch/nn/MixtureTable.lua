-- nn.MixtureTable([dim]): a mixture of experts. input = { gater, experts }: gater holds the weights,
-- n per sample (batch x n, or n); experts is a table of n tensors of one shape, or one tensor whose
-- dimension dim (default 2, or 1 without a batch) indexes the n experts. The output is the sum of
-- the experts weighted by the gater, expert i's weight broadcast over its non-batch elements.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local T = require 'moontorch.internal'

local MixtureTable, parent = torch.class('nn.MixtureTable', 'nn.Module')

function MixtureTable:__init(dim)
   parent.__init(self)
   if dim ~= nil and (type(dim) ~= 'number' or dim < 1) then
      error('nn.MixtureTable: dim must be a positive number, got ' .. tostring(dim), 3)
   end
   self.dim = dim
   self.gradInput = {}
end

local function sizestr(t) return t:dim() == 0 and 'empty' or table.concat(T.sizes(t), 'x') end

-- gater, experts, whether they are a table, the batch size (nil without a batch), the expert dim
function MixtureTable:_split(input)
   if type(input) ~= 'table' or torch.isTensor(input) or #input ~= 2 then
      error('nn.MixtureTable: input must be a table { gater, experts }', 3)
   end
   local gater, experts = input[1], input[2]
   T.expect_tensor(gater, 'nn.MixtureTable', 'gater (input[1])', 3)
   if gater:dim() ~= 1 and gater:dim() ~= 2 then
      error('nn.MixtureTable: the gater must be 1-d (n) or 2-d (batch x n), got ' .. sizestr(gater), 3)
   end
   local batch = gater:dim() == 2 and gater:size(1) or nil
   local n = gater:size(gater:dim())
   local isTable = type(experts) == 'table' and not torch.isTensor(experts)
   local dim = self.dim or (batch and 2 or 1)
   if isTable then
      if #experts ~= n then
         error(('nn.MixtureTable: one gater weight per expert: %d weights, %d experts'):format(n, #experts), 3)
      end
   else
      T.expect_tensor(experts, 'nn.MixtureTable', 'experts (input[2], or a table)', 3)
      if experts:dim() < dim or experts:size(dim) ~= n or (batch and experts:size(1) ~= batch) then
         error(('nn.MixtureTable: experts %s do not match gater %s along dim %d'):format(sizestr(experts),
            sizestr(gater), dim), 3)
      end
   end
   return gater, experts, isTable, batch, dim
end

-- expert i's weight viewed to broadcast over a tensor of nd dimensions (batch first, if any)
local function gate(gater, i, batch, nd)
   local sizes = {}
   for d = 1, nd do sizes[d] = 1 end
   if batch then sizes[1] = batch end
   return gater:narrow(gater:dim(), i, 1):contiguous():view(torch.LongStorage(sizes))
end

-- the gater viewed to broadcast over the experts tensor: batch, n at dim, ones elsewhere
local function gaterView(gater, experts, batch, dim)
   local sizes = {}
   for d = 1, experts:dim() do sizes[d] = 1 end
   if batch then sizes[1] = batch end
   sizes[dim] = gater:size(gater:dim())
   return gater:contiguous():view(torch.LongStorage(sizes)):expandAs(experts)
end

function MixtureTable:updateOutput(input)
   local gater, experts, isTable, batch, dim = self:_split(input)
   if self.output:type() ~= gater:type() then self.output = gater.new() end
   if isTable then
      self.output:resizeAs(experts[1]):zero()
      for i, e in ipairs(experts) do
         self.output:add(torch.cmul(gate(gater, i, batch, e:dim()):expandAs(e), e))
      end
   else
      local sum = torch.cmul(gaterView(gater, experts, batch, dim), experts):sum(dim)
      self.output:resizeAs(experts:select(dim, 1)):copy(sum:viewAs(experts:select(dim, 1)))
   end
   return self.output
end

function MixtureTable:updateGradInput(input, gradOutput)
   local gater, experts, isTable, batch, dim = self:_split(input)
   local gi = self.gradInput
   gi[1] = nn.utils.recursiveResizeAs(gi[1], gater)
   local rows = batch or 1
   if isTable then
      gi[2] = nn.utils.recursiveResizeAs(gi[2], experts)
      for i, e in ipairs(experts) do
         -- d/d gater_i = sum over a sample's elements of gradOutput * expert i
         local s = torch.cmul(gradOutput, e):contiguous():view(rows, -1):sum(2)
         local col = gi[1]:narrow(gi[1]:dim(), i, 1)
         col:copy(s:viewAs(col))
         gi[2][i]:cmul(gate(gater, i, batch, e:dim()):expandAs(e), gradOutput)
      end
   else
      local go = gradOutput:contiguous():view(torch.LongStorage(
         (function() local s = T.sizes(experts); s[dim] = 1; return s end)())):expandAs(experts)
      -- the expert dim moved next to the batch one, so each (sample, expert) is one row to sum
      local prod = torch.cmul(go, experts):transpose(dim, batch and 2 or 1):contiguous()
      local n = gater:size(gater:dim())
      gi[1]:copy(prod:view(rows * n, -1):sum(2):viewAs(gater))
      gi[2] = nn.utils.recursiveResizeAs(gi[2], experts)
      gi[2]:cmul(gaterView(gater, experts, batch, dim), go)
   end
   return self.gradInput
end
