-- dist/compressors.lua: the one list of dist.DataParallel's gradient compressors, for
-- DataParallel, the recipes' flags and the help. Plain Lua (no library loaded), so a recipe can
-- list its flags on any build.
local M = {}

-- dist.DataParallel's compressors, in the order the help lists them. kind: 'step' (one exchange
-- after backward: rgc), 'bucket' (dist/codec.lua's interface: each bucket compressed and sent
-- as backward produces it), 'auto' (rgc or dense per bucket), 'none'; module: where it lives;
-- momentum: whether
-- it keeps the optimizer's momentum and weight decay itself (then the optimizer runs without)
M.LIST = {
   { name = 'none', kind = 'none', help = 'dense float32 allreduce' },
   { name = 'rgc', kind = 'step', module = 'moontorch.dist.rgc', momentum = true,
      help = 'residual top-k (DGC/RedSync), sgd only' },
   { name = 'powersgd', kind = 'bucket', module = 'moontorch.dist.powersgd',
      help = 'rank -compressRank factors with error feedback' },
   { name = 'onebit', kind = 'bucket', module = 'moontorch.dist.onebit',
      help = 'signs and a scale per chunk, with error feedback' },
   { name = 'fp16', kind = 'bucket', module = 'moontorch.dist.fp16',
      help = 'float16 wire, divided before the sum' },
   { name = 'auto', kind = 'auto', momentum = true, help = 'rgc per bucket where moontorch.perf predicts a gain' },
}
M.BY_NAME = {}
for _, c in ipairs(M.LIST) do M.BY_NAME[c.name] = c end

-- The bytes a rank receives in one collective, by the schedule of the bandwidth-optimal
-- algorithm (a model of the traffic, what the counters' recvBytes report): an allreduce of S
-- bytes (ring: reduce-scatter then allgather) 2 (N - 1) / N S, bounded as N grows; an allgather
-- of a block of B bytes from every rank (N - 1) B, growing with N.
function M.allreduceReceived(bytes, N) return N > 1 and 2 * (N - 1) / N * bytes or 0 end
function M.allgatherReceived(block, N) return (N - 1) * block end

-- dist.topk's selection methods, the default first (dist/lib.lua maps them to csrc's MT_TOPK_*)
M.TOPK_METHODS = { 'sampled', 'exact', 'threshold', 'trimmed' }

return M
