-- runs.lua: running a recipe as its users do, for the recipe specs: a command line in a child
-- process (alone or under mpirun), its output and exit status.
local M = {}

-- the ImageNet recipe's tiny run: ResNet-18 on 32x32 crops, 2 batches of 4 per epoch, one
-- trainer and one decode thread so runs are comparable
M.IMAGENET_TINY = '-depth 18 -cropSize 32 -batchSize 4 -nEpochs 2 -limitBatches 2 -device cpu -threads 1 '
   .. '-nThreads 1 -quiet'

-- the launcher of n ranks on this machine; they yield their core while they wait
function M.mpirun(n)
   return ('OMP_WAIT_POLICY=PASSIVE OMPI_MCA_mpi_yield_when_idle=1 mpirun --allow-run-as-root --oversubscribe '
      .. '-np %d'):format(n)
end

-- run `luajit recipes/<recipe>.lua args` (under `launcher` when given); returns its output
-- (stdout and stderr) and exit status
function M.run(recipe, args, launcher)
   local cmd = ('%s luajit recipes/%s.lua %s 2>&1; echo "exit status $?"'):format(launcher or '', recipe, args)
   local p = io.popen(cmd)
   local out = p:read('*a')
   p:close()
   local code = tonumber(out:match('exit status (%d+)%s*$'))
   return (out:gsub('exit status %d+%s*$', '')), code
end

function M.finite(v) return type(v) == 'number' and v == v and math.abs(v) ~= math.huge end

return M
