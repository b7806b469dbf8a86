-- help.lua: one-line help for moontorch's functions and tensor methods, used by the REPL's
-- help(x) and ?name. Each line of the table below is  name :: signature :: what it does.
-- Names are torch.* paths; tensor methods are listed as torch.Tensor.<method>. nn.* and optim.*
-- follow (nn's from the module files' headers).
-- Dims and indices are 1-based; [res,] is Torch7's optional result tensor.
local M = {}

local TEXT = [==[
torch.Tensor :: torch.Tensor([sizes... | table | tensor]) :: new tensor of the default type: uninitialised sizes, a copy of a nested table, or sharing another tensor's storage
torch.FloatTensor :: torch.FloatTensor(...) :: like torch.Tensor, float32 (also Double, Half, BFloat16, Int, Long, Byte, Bool)
torch.DoubleTensor :: torch.DoubleTensor(...) :: like torch.Tensor, float64
torch.HalfTensor :: torch.HalfTensor(...) :: like torch.Tensor, float16
torch.BFloat16Tensor :: torch.BFloat16Tensor(...) :: like torch.Tensor, bfloat16
torch.IntTensor :: torch.IntTensor(...) :: like torch.Tensor, int32
torch.LongTensor :: torch.LongTensor(...) :: like torch.Tensor, int64 (index tensors are LongTensors)
torch.ByteTensor :: torch.ByteTensor(...) :: like torch.Tensor, uint8 (masks, comparison results)
torch.BoolTensor :: torch.BoolTensor(...) :: like torch.Tensor, bool
torch.CudaTensor :: torch.CudaTensor(...) :: float32 tensor on the current CUDA device (also CudaDoubleTensor, CudaHalfTensor, ...)
torch.LongStorage :: torch.LongStorage(n | table | ...) :: a storage of int64 (as torch.FloatStorage), which also stands for sizes
torch.zeros :: torch.zeros([res,] sizes...) :: tensor of the given sizes filled with 0 (default tensor type)
torch.ones :: torch.ones([res,] sizes...) :: tensor of the given sizes filled with 1
torch.zerosLike :: torch.zerosLike(t) :: zeros with t's sizes, type and device
torch.onesLike :: torch.onesLike(t) :: ones with t's sizes, type and device
torch.emptyLike :: torch.emptyLike(t) :: uninitialised tensor with t's sizes, type and device
torch.range :: torch.range([res,] from, to [, step]) :: 1-d tensor from..to inclusive by step (default 1)
torch.arange :: torch.arange([from,] to [, step]) :: 1-d tensor from..to, end exclusive (PyTorch's)
torch.linspace :: torch.linspace([res,] from, to [, n=100]) :: n evenly spaced values from..to inclusive
torch.logspace :: torch.logspace([res,] from, to [, n=100]) :: n values 10^x for x evenly spaced from..to
torch.eye :: torch.eye([res,] n [, m]) :: n x m identity matrix
torch.rand :: torch.rand([res,] sizes...) :: uniform random numbers in [0, 1)
torch.randn :: torch.randn([res,] sizes...) :: standard normal random numbers
torch.randperm :: torch.randperm(n) :: random permutation of 1..n (default tensor type)
torch.uniform :: torch.uniform([a=0, b=1]) :: one uniform random number in [a, b) (t:uniform fills a tensor)
torch.normal :: torch.normal([mean=0, std=1]) :: one normal random number (t:normal fills a tensor)
torch.bernoulli :: torch.bernoulli([p=0.5]) :: 1 with probability p, else 0 (t:bernoulli fills a tensor)
torch.manualSeed :: torch.manualSeed(seed) :: seed the default random generator (same seed, same numbers on CPU and CUDA)
torch.seed :: torch.seed() :: seed the generator from the clock; returns the seed
torch.initialSeed :: torch.initialSeed() :: the seed the generator was last seeded with
torch.getRNGState :: torch.getRNGState([gen]) :: a copy of the generator state (a ByteTensor)
torch.setRNGState :: torch.setRNGState([gen,] state) :: restore a state from torch.getRNGState() (returns state)
torch.setdefaulttensortype :: torch.setdefaulttensortype(name) :: type for torch.Tensor, zeros, rand...: e.g. 'torch.FloatTensor'
torch.getdefaulttensortype :: torch.getdefaulttensortype() :: name of the default tensor type
torch.isTensor :: torch.isTensor(x) :: true when x is a moontorch tensor
torch.typename :: torch.typename(x) :: 'torch.FloatTensor'-style name of a tensor, or nil
torch.type :: torch.type(x) :: torch.typename(x) for tensors, type(x) otherwise
torch.setnumthreads :: torch.setnumthreads(n) :: number of CPU threads used by tensor ops
torch.getnumthreads :: torch.getnumthreads() :: number of CPU threads used by tensor ops
torch.convBackend :: torch.convBackend([mode]) :: float32 CPU convolutions by 'native' kernels (default), 'onednn' (blocked layouts), 'onednn_nchw' or 'auto' (each timed once per shape, the fastest kept; not bit-reproducible); returns the previous mode
torch.hasOneDNN :: torch.hasOneDNN() :: true when moontorch was built with oneDNN (libdnnl-dev)
torch.memoryStats :: torch.memoryStats() :: CPU tensor memory: {allocated=, reserved=, peak=, peakReserved=, allocs=}
torch.version :: torch.version :: moontorch's version string
torch.setprintoptions :: torch.setprintoptions{precision=, threshold=, edgeitems=, linewidth=} :: how tensors print (true restores the defaults)
torch.getprintoptions :: torch.getprintoptions() :: the current print options as a table
torch.cat :: torch.cat([res,] a, b [, dim]) or torch.cat([res,] {t1, t2, ...} [, dim]) :: concatenate along dim (default: the last)
torch.Tensor.size :: t:size([dim]) :: sizes as a LongStorage, or the size of one dim
torch.Tensor.stride :: t:stride([dim]) :: strides (in elements) as a LongStorage, or one dim's
torch.Tensor.dim :: t:dim() :: number of dimensions (also t:nDimension())
torch.Tensor.nDimension :: t:nDimension() :: number of dimensions
torch.Tensor.nElement :: t:nElement() :: number of elements (also t:numel())
torch.Tensor.numel :: t:numel() :: number of elements
torch.Tensor.isContiguous :: t:isContiguous() :: true when elements are laid out densely in row-major order
torch.Tensor.storageOffset :: t:storageOffset() :: 1-based offset of the first element in the storage
torch.Tensor.type :: t:type([name]) :: type name, or a copy converted to that type (self if unchanged)
torch.Tensor.typeAs :: t:typeAs(u) :: t converted to u's type
torch.Tensor.dtype :: t:dtype() :: the C dtype id (a value of enum mt_dtype in csrc/moontorch.h: MT_F32, MT_F64, ...)
torch.Tensor.device :: t:device() :: device id of the tensor: -1 on the CPU, 0-based on CUDA
torch.Tensor.free :: t:free() :: release the tensor's memory now; later use raises 'tensor was freed'
torch.Tensor.data :: t:data() :: raw FFI pointer to the first element (CPU tensors)
torch.Tensor.totable :: t:totable() :: nested Lua table of the values
torch.Tensor.float :: t:float() :: as float32 (self if already); also double, half, bfloat16, int, long, byte, bool
torch.Tensor.double :: t:double() :: as float64 (self if already)
torch.Tensor.half :: t:half() :: as float16 (self if already)
torch.Tensor.real :: t:real() :: as the default tensor type, torch.getdefaulttensortype() (self if already)
torch.Tensor.bfloat16 :: t:bfloat16() :: as bfloat16 (self if already)
torch.Tensor.int :: t:int() :: as int32 (self if already)
torch.Tensor.long :: t:long() :: as int64 (self if already)
torch.Tensor.byte :: t:byte() :: as uint8 (self if already)
torch.Tensor.bool :: t:bool() :: as bool (self if already)
torch.Tensor.view :: t:view(sizes...) :: view with new sizes sharing storage; one size may be -1 (inferred)
torch.Tensor.viewAs :: t:viewAs(u) :: view with u's sizes
torch.Tensor.reshape :: t:reshape(sizes...) :: view when possible, else a contiguous copy (also torch.reshape([res,] t, sizes))
torch.Tensor.narrow :: t:narrow(dim, start, len) :: view of len indices of dim from start
torch.Tensor.select :: t:select(dim, i) :: view with dim removed at index i
torch.Tensor.sub :: t:sub(s1, e1 [, s2, e2, ...]) :: view of index ranges s..e per dim (negative ends count from the end)
torch.Tensor.transpose :: t:transpose(d1, d2) :: view with two dims swapped
torch.Tensor.t :: t:t() :: transpose of a 2-d tensor (view)
torch.Tensor.permute :: t:permute(dims...) :: view with dims reordered
torch.Tensor.expand :: t:expand(sizes...) :: view repeating size-1 dims (stride 0), no copy
torch.Tensor.expandAs :: t:expandAs(u) :: t expanded to u's sizes
torch.Tensor.squeeze :: t:squeeze([dim]) :: view without size-1 dims (or only dim); one element gives the number
torch.Tensor.unsqueeze :: t:unsqueeze(dim) :: view with a size-1 dim inserted at dim
torch.Tensor.unfold :: t:unfold(dim, size, step) :: view of sliding windows of size along dim, as a new last dim
torch.Tensor.contiguous :: t:contiguous() :: self if contiguous, else a contiguous copy
torch.Tensor.clone :: t:clone() :: contiguous copy with the same type and device
torch.Tensor.copy :: t:copy(src) :: copy src's values into t (any type or device; same number of elements)
torch.Tensor.resize :: t:resize(sizes...) :: change sizes in place (reallocates when it grows)
torch.Tensor.resizeAs :: t:resizeAs(u) :: resize to u's sizes
torch.Tensor.set :: t:set(u) :: make t share u's storage, sizes and strides
torch.Tensor.isSameSizeAs :: t:isSameSizeAs(u) :: true when sizes are equal
torch.Tensor.equal :: t:equal(u) :: true when sizes and every element are equal (torch.equal(a, b))
torch.Tensor.isSize :: t:isSize(sizes) :: true when t's sizes equal a LongStorage or table
torch.Tensor.isSetTo :: t:isSetTo(u) :: true when t and u view the same elements
torch.Tensor.storage :: t:storage() :: the storage holding t's elements, sharing its memory
torch.Tensor.apply :: t:apply(fn) :: t[i] = fn(t[i]) for every element in order (CPU)
torch.Tensor.map :: t:map(u, fn) :: t[i] = fn(t[i], u[i]) for every element (CPU)
torch.Tensor.map2 :: t:map2(u, v, fn) :: t[i] = fn(t[i], u[i], v[i]) for every element (CPU)
torch.Tensor.index :: t:index(dim, idx) :: new tensor of the entries idx (LongTensor) along dim; also torch.index([res,] t, dim, idx)
torch.Tensor.indexSelect :: t:indexSelect(dim, idx) :: same as t:index(dim, idx)
torch.Tensor.indexCopy :: t:indexCopy(dim, idx, src) :: t's entries idx along dim = src's slices, in place
torch.Tensor.indexAdd :: t:indexAdd(dim, idx, src) :: add src's slices to t's entries idx along dim (repeats accumulate)
torch.Tensor.indexFill :: t:indexFill(dim, idx, v) :: fill t's entries idx along dim with v
torch.Tensor.gather :: t:gather(dim, idx) :: out[i][j] = t[i][idx[i][j]] for dim 2 (out sized like idx); also torch.gather([res,] t, dim, idx)
torch.Tensor.scatter :: t:scatter(dim, idx, src | v) :: t[i][idx[i][j]] = src[i][j] (dim 2) or v, in place
torch.Tensor.maskedFill :: t:maskedFill(mask, v) :: set elements where the ByteTensor mask is 1 to v, in place
torch.Tensor.maskedSelect :: t:maskedSelect(mask) :: 1-d tensor of the elements where mask is 1
torch.Tensor.fill :: t:fill(v) :: set every element to v, in place
torch.Tensor.zero :: t:zero() :: set every element to 0, in place
torch.Tensor.add :: t:add([v,] b) / torch.add([res,] a, [v,] b) :: t = t + v*b (b a tensor or number), in place; torch.add returns a new tensor
torch.Tensor.csub :: t:csub([v,] b) / torch.csub([res,] a, [v,] b) :: t = t - v*b, in place (subtraction; t:sub is a view)
torch.Tensor.mul :: t:mul(v) / torch.mul([res,] a, v) :: multiply by a number, in place
torch.Tensor.div :: t:div(v) / torch.div([res,] a, v) :: divide by a number, in place (integers truncate)
torch.Tensor.cmul :: t:cmul(b) / torch.cmul([res,] a, b) :: elementwise product, in place (broadcasting)
torch.Tensor.cdiv :: t:cdiv(b) / torch.cdiv([res,] a, b) :: elementwise quotient, in place (broadcasting)
torch.Tensor.pow :: t:pow(v) / torch.pow([res,] a, v) :: elementwise power by a number, in place
torch.Tensor.cpow :: t:cpow(b | v) / torch.cpow([res,] a, b | v) :: elementwise power a^b with a tensor or number exponent
torch.Tensor.addcmul :: t:addcmul([v,] a, b) :: t = t + v*a*b elementwise, in place
torch.Tensor.addcdiv :: t:addcdiv([v,] a, b) :: t = t + v*a/b elementwise, in place
torch.Tensor.exp :: t:exp() / torch.exp([res,] a) :: e^x elementwise (method: in place; torch.exp: new tensor)
torch.Tensor.log :: t:log() / torch.log([res,] a) :: natural logarithm elementwise
torch.Tensor.log1p :: t:log1p() / torch.log1p([res,] a) :: log(1 + x) elementwise, accurate near 0
torch.Tensor.expm1 :: t:expm1() / torch.expm1([res,] a) :: e^x - 1 elementwise, accurate near 0
torch.Tensor.sqrt :: t:sqrt() / torch.sqrt([res,] a) :: square root elementwise
torch.Tensor.rsqrt :: t:rsqrt() / torch.rsqrt([res,] a) :: 1 / sqrt(x) elementwise
torch.Tensor.abs :: t:abs() / torch.abs([res,] a) :: absolute value elementwise
torch.Tensor.sign :: t:sign() / torch.sign([res,] a) :: -1, 0 or 1 elementwise
torch.Tensor.neg :: t:neg() / torch.neg([res,] a) :: -x elementwise
torch.Tensor.floor :: t:floor() / torch.floor([res,] a) :: round down elementwise
torch.Tensor.ceil :: t:ceil() / torch.ceil([res,] a) :: round up elementwise
torch.Tensor.round :: t:round() / torch.round([res,] a) :: round to nearest elementwise
torch.Tensor.tanh :: t:tanh() / torch.tanh([res,] a) :: hyperbolic tangent elementwise
torch.Tensor.sigmoid :: t:sigmoid() / torch.sigmoid([res,] a) :: 1 / (1 + e^-x) elementwise
torch.Tensor.sin :: t:sin() / torch.sin([res,] a) :: sine elementwise
torch.Tensor.cos :: t:cos() / torch.cos([res,] a) :: cosine elementwise
torch.Tensor.square :: t:square() / torch.square([res,] a) :: x^2 elementwise
torch.Tensor.cinv :: t:cinv() / torch.cinv([res,] a) :: 1 / x elementwise (also reciprocal)
torch.Tensor.reciprocal :: t:reciprocal() / torch.reciprocal([res,] a) :: 1 / x elementwise (same as cinv)
torch.Tensor.relu :: t:relu() / torch.relu([res,] a) :: max(x, 0) elementwise
torch.Tensor.clamp :: t:clamp(min, max) / torch.clamp([res,] a, min, max) :: limit values to [min, max], in place
torch.Tensor.cmax :: t:cmax(b | v) / torch.cmax([res,] a, b | v) :: elementwise maximum with a tensor or number
torch.Tensor.cmin :: t:cmin(b | v) / torch.cmin([res,] a, b | v) :: elementwise minimum with a tensor or number
torch.Tensor.fmod :: t:fmod(v) / torch.fmod([res,] a, v) :: remainder with the sign of the dividend
torch.Tensor.atan2 :: t:atan2(b) / torch.atan2([res,] a, b) :: atan(a/b) elementwise, in the right quadrant
torch.Tensor.lerp :: t:lerp(b, w) / torch.lerp([res,] a, b, w) :: a + w*(b - a) elementwise (numbers a, b: a number)
torch.Tensor.eq :: t:eq(b | v) / torch.eq([res,] a, b | v) :: ByteTensor of a == b elementwise (the == operator compares identity)
torch.Tensor.ne :: t:ne(b | v) / torch.ne([res,] a, b | v) :: ByteTensor of a ~= b elementwise
torch.Tensor.lt :: t:lt(b | v) / torch.lt([res,] a, b | v) :: ByteTensor of a < b elementwise
torch.Tensor.le :: t:le(b | v) / torch.le([res,] a, b | v) :: ByteTensor of a <= b elementwise
torch.Tensor.gt :: t:gt(b | v) / torch.gt([res,] a, b | v) :: ByteTensor of a > b elementwise
torch.Tensor.ge :: t:ge(b | v) / torch.ge([res,] a, b | v) :: ByteTensor of a >= b elementwise
torch.Tensor.uniform :: t:uniform([a=0, b=1]) :: fill with uniform random numbers in [a, b), in place
torch.Tensor.normal :: t:normal([mean=0, std=1]) :: fill with normal random numbers, in place
torch.Tensor.bernoulli :: t:bernoulli([p=0.5]) :: fill with 1 (probability p) or 0, in place
torch.Tensor.random :: t:random([a,] [b]) / torch.random([a,] [b]) :: integers uniform in [a, b] ([1, b] with one bound), in place; torch.random returns one number
torch.Tensor.sum :: t:sum([dim]) / torch.sum([res,] t, dim) :: sum of all elements (a number), or along dim (kept as size 1)
torch.Tensor.prod :: t:prod([dim]) / torch.prod([res,] t, dim) :: product of all elements, or along dim
torch.Tensor.mean :: t:mean([dim]) / torch.mean([res,] t, dim) :: mean of all elements, or along dim
torch.Tensor.var :: t:var([dim] [, biased]) :: variance, unbiased (N-1) unless biased is true
torch.Tensor.std :: t:std([dim] [, biased]) :: standard deviation, unbiased (N-1) unless biased is true
torch.Tensor.norm :: t:norm([p=2] [, dim]) :: p-norm of all elements (a number), or along dim
torch.Tensor.max :: t:max([dim]) / torch.max([resv, resi,] t, dim) :: largest element, or values and 1-based indices along dim
torch.Tensor.min :: t:min([dim]) / torch.min([resv, resi,] t, dim) :: smallest element, or values and 1-based indices along dim
torch.Tensor.argmax :: t:argmax([dim]) :: 1-based position of the largest element (flat), or LongTensor along dim
torch.Tensor.argmin :: t:argmin([dim]) :: 1-based position of the smallest element (flat), or LongTensor along dim
torch.Tensor.any :: t:any() :: true when any element of a ByteTensor is nonzero
torch.Tensor.all :: t:all() :: true when every element of a ByteTensor is nonzero
torch.Tensor.sort :: t:sort([dim] [, descending]) / torch.sort([resv, resi,] t, [dim], [desc]) :: sorted values and 1-based indices along dim (default last), stable
torch.Tensor.topk :: t:topk(k, [dim], [dir], [sort]) :: k smallest (Torch7's default) or largest (dir true) along dim: values, indices
torch.Tensor.cumsum :: t:cumsum(dim) / torch.cumsum([res,] t, dim) :: running sum along dim
torch.Tensor.cumprod :: t:cumprod(dim) / torch.cumprod([res,] t, dim) :: running product along dim
torch.Tensor.mm :: res:mm(a, b) / torch.mm([res,] a, b) :: matrix product of 2-d a (n x k) and b (k x m)
torch.Tensor.bmm :: res:bmm(a, b) / torch.bmm([res,] a, b) :: batched matrix product of 3-d tensors
torch.Tensor.addmm :: t:addmm([beta,] [alpha,] a, b) / torch.addmm([res,] [beta,] M, [alpha,] a, b) :: beta*M + alpha*(a @ b)
torch.Tensor.baddbmm :: t:baddbmm([beta,] [alpha,] a, b) / torch.baddbmm([res,] [beta,] M, [alpha,] a, b) :: batched beta*M + alpha*(a @ b)
torch.Tensor.addbmm :: torch.addbmm([res,] [beta,] M, [alpha,] a, b) :: beta*M + alpha * sum over the batch of a[i] @ b[i]
torch.Tensor.addmv :: t:addmv([beta,] [alpha,] m, v) / torch.addmv([res,] [beta,] y, [alpha,] m, v) :: beta*y + alpha*(m @ v)
torch.Tensor.mv :: res:mv(m, v) / torch.mv([res,] m, v) :: matrix-vector product
torch.Tensor.dot :: a:dot(b) / torch.dot(a, b) :: inner product of two tensors with the same number of elements (a number)
torch.Tensor.addr :: t:addr([beta,] [alpha,] u, v) / torch.addr([res,] [beta,] M, [alpha,] u, v) :: beta*M + alpha * outer(u, v)
torch.Tensor.ger :: res:ger(u, v) / torch.ger([res,] u, v) :: outer product of two 1-d tensors
torch.Tensor.cat :: t:cat(u [, dim]) :: torch.cat(t, u, dim)
torch.Tensor.cuda :: t:cuda([device]) :: copy to a CUDA device, same type (self if already there)
torch.Tensor.cpu :: t:cpu() :: copy to the CPU (self if already there)
torch.Tensor.isCuda :: t:isCuda() :: true for tensors on a CUDA device
torch.Tensor.getDevice :: t:getDevice() :: 1-based CUDA device of the tensor (0 on the CPU)
torch.Tensor.pin :: t:pin() :: copy in page-locked host memory (self if pinned) for asynchronous copies to a GPU
torch.Tensor.isPinned :: t:isPinned() :: true for tensors in page-locked host memory
torch.pinnedTensor :: torch.pinnedTensor([typename,] sizes...) :: uninitialised tensor in page-locked host memory
torch.cuda.isAvailable :: torch.cuda.isAvailable() :: true when moontorch was built with CUDA and a GPU is present
torch.cuda.isCompiled :: torch.cuda.isCompiled() :: true when this build has the CUDA backend
torch.cuda.deviceCount :: torch.cuda.deviceCount() :: number of CUDA devices (0 without CUDA)
torch.cuda.getDeviceCount :: torch.cuda.getDeviceCount() :: number of CUDA devices (cutorch's name for deviceCount)
torch.cuda.getDeviceName :: torch.cuda.getDeviceName([device]) :: name of a CUDA device
torch.cuda.setDevice :: torch.cuda.setDevice(device) :: current CUDA device (1-based) for new CUDA tensors
torch.cuda.getDevice :: torch.cuda.getDevice() :: current CUDA device (1-based)
torch.cuda.synchronize :: torch.cuda.synchronize([device]) :: wait for all queued GPU work to finish
torch.cuda.memoryStats :: torch.cuda.memoryStats([device]) :: GPU memory: {allocated=, reserved=, peak=, peakReserved=, allocs=, systemAllocs=}
torch.cuda.resetPeakMemoryStats :: torch.cuda.resetPeakMemoryStats([device]) :: restart peak tracking
torch.cuda.emptyCache :: torch.cuda.emptyCache() :: return cached free GPU memory to the driver
torch.cuda.allowTF32 :: torch.cuda.allowTF32([on]) :: let float32 GEMMs and convolutions use TF32 tensor cores (off by default); returns the previous setting
torch.cuda.convAlgorithm :: torch.cuda.convAlgorithm([mode [, workspaceMB]]) :: cuDNN algorithm choice, 'heuristic' or 'search' (timed, cached per shape), and its workspace limit; returns the previous ones
torch.cuda.channelsLast :: torch.cuda.channelsLast(t) :: t:channelsLast() under its earlier name
torch.Tensor.channelsLast :: t:channelsLast() :: the 4-d tensor stored channels-last (NHWC strides; a copy unless it already is), any device; convolutions, pooling, activations and pointwise ops keep that layout
torch.Tensor.isChannelsLast :: t:isChannelsLast() :: true for a 4-d tensor stored channels-last
help :: help([x]) :: one-line help for a moontorch function or name ('torch.zeros'); help() for the REPL's help
torch.Timer :: torch.Timer() :: a timer counting from now: t:time() -> {real=, user=, sys=} seconds; t:stop(), t:resume(), t:reset()
torch.Timer.time :: timer:time() :: {real=, user=, sys=} seconds counted so far (stopped spans excluded)
torch.Timer.stop :: timer:stop() :: stop counting, keeping the time so far
torch.Timer.resume :: timer:resume() :: count again, adding to the time so far
torch.Timer.reset :: timer:reset() :: zero the time (a running timer keeps running)
torch.tic :: torch.tic() :: a real-time stamp for torch.toc
torch.toc :: torch.toc(t) :: seconds since torch.tic() returned t
torch.CmdLine :: torch.CmdLine([argsep [, keysep]]) :: command-line parser: cmd:option('-lr', 0.1, 'help'), cmd:argument, cmd:text, cmd:parse(arg)
torch.CmdLine.option :: cmd:option('-name', default, help [, type | {choices=, range='[lo, hi)', integer=}]) :: an option typed by its default (booleans flip when given bare), checked against its choices and range
torch.CmdLine.argument :: cmd:argument('-name', help [, 'number']) :: a required positional argument
torch.CmdLine.text :: cmd:text([line]) :: a line of the help text
torch.CmdLine.parse :: cmd:parse([arg]) :: the params table; -h prints the help and calls cmd.exit(0); bad input is an error naming the option
torch.CmdLine.check :: cmd:check(params) :: params, after checking the values it holds against their options' choices and ranges
torch.CmdLine.string :: cmd:string(prefix, params [, ignore]) :: a run name from the non-default options: 'exp,lr=0.5,seed=2'
torch.CmdLine.log :: cmd:log(file, params) :: print() also writes to file (name or open file), starting with the params
torch.CmdLine.addTime :: cmd:addTime([name [, format]]) :: stamp each log-file line with os.date(format) and [name]
torch.CmdLine.silent :: cmd:silent() :: after log(), print() writes only to the log file
torch.Tester :: torch.Tester() :: unit-test runner: tester:add(suite); tester:eq(a, b [, tol] [, msg]); tester:run([names])
torch.TestSuite :: torch.TestSuite() :: a table of test functions that refuses a second test of the same name
torch.Tester.add :: tester:add(f, name | suite) :: add a test function (or _setUp/_tearDown) or a table of tests
torch.Tester.run :: tester:run([names]) :: run the tests (or those matching names), print a report, error on any failure
torch.Tester.eq :: tester:eq(got, expected [, tolerance] [, message]) :: deep equality of numbers, tables, tensors within tolerance
torch.Tester.ne :: tester:ne(got, unexpected [, tolerance] [, message]) :: deep inequality (eq negated)
torch.Tester.assert :: tester:assert(cond [, message]) :: cond must be true
torch.Tester.assertError :: tester:assertError(f [, message]) :: f() must raise an error (also assertNoError, assertErrorMsg, assertErrorPattern)
torch.Tester.disable :: tester:disable(names) :: skip these tests (reported as SKIP)
torch.pointer :: torch.pointer(obj) :: an integer address: the C tensor of a tensor, the C storage of a storage, the object's own otherwise
torch.isequal :: torch.isequal(a, b) :: true for the same table or the same C tensor
torch.getenv :: torch.getenv(obj) :: the environment table of a function, userdata, thread or tensor
torch.setenv :: torch.setenv(obj, table) :: set the environment table of a function, userdata, thread or tensor
torch.getconstructortable :: torch.getconstructortable(name) :: the constructor of a type name (torch.FloatTensor, nn.Linear), or nil
torch.typename2id :: torch.typename2id(name) :: a unique id (table) of a type, or nil
torch.id :: torch.id(obj) :: the type id of an object (torch.typename2id(torch.typename(obj)))
torch.setheaptracking :: torch.setheaptracking(bool) :: accepted for Torch7 code; tensor memory already drives the GC
torch.updateerrorhandlers :: torch.updateerrorhandlers() :: accepted for Torch7 code; C errors already come back as Lua errors
torch.gesv :: torch.gesv([resb, resa,] B, A) :: X, LU: solves A X = B (A square); results column-major
torch.trtrs :: torch.trtrs([resb, resa,] B, A [, 'U'|'L'] [, 'N'|'T'] [, 'N'|'U']) :: X solving the triangular system A X = B (or A^T X = B)
torch.gels :: torch.gels([resb, resa,] B, A) :: least squares (m >= n) or least norm (m < n) solution in the first n rows; rows after n hold the residual
torch.inverse :: torch.inverse([res,] x) :: inverse of a square matrix (column-major)
torch.potrf :: torch.potrf([res,] A [, 'U'|'L']) :: Cholesky factor U (A = U^T U) or L (A = L L^T)
torch.potrs :: torch.potrs([res,] B, chol [, 'U'|'L']) :: solves A X = B from A's Cholesky factor
torch.potri :: torch.potri([res,] chol [, 'U'|'L']) :: inverse of A from its Cholesky factor
torch.pstrf :: torch.pstrf([res, piv,] A [, 'U'|'L'] [, tol]) :: pivoted Cholesky: P^T A P = U^T U, piv an IntTensor (1-based)
torch.qr :: torch.qr([q, r,] x) :: thin QR: q (m x k, orthonormal columns), r (k x n, upper triangular)
torch.geqrf :: torch.geqrf([m, tau,] a) :: LAPACK's QR as R and elementary reflectors (m) with their scales (tau)
torch.orgqr :: torch.orgqr([q,] m, tau) :: the Q of geqrf's reflectors (m x k)
torch.ormqr :: torch.ormqr([res,] m, tau, mat [, 'L'|'R'] [, 'N'|'T']) :: Q*mat, Q^T*mat ('L') or mat*Q, mat*Q^T ('R') with geqrf's Q
torch.eig :: torch.eig([rese, resv,] a [, 'N'|'V']) :: eigenvalues (n x 2: real, imaginary) and with 'V' right eigenvectors of a general square matrix
torch.symeig :: torch.symeig([rese, resv,] a [, 'N'|'V'] [, 'U'|'L']) :: ascending eigenvalues and with 'V' eigenvectors of a symmetric matrix (one triangle read)
torch.svd :: torch.svd([resu, ress, resv,] a [, 'S'|'A']) :: U, S, V with a = U diag(S) V^T; 'S' thin, 'A' full
torch.cross :: torch.cross([res,] a, b [, dim]) :: cross product of 3-vectors along dim (default: the first dimension of size 3)
torch.diag :: torch.diag([res,] x [, k]) :: a vector's matrix with x on diagonal k, or a matrix's diagonal k as a vector
torch.tril :: torch.tril([res,] x [, k]) :: the matrix with the elements above diagonal k set to 0
torch.triu :: torch.triu([res,] x [, k]) :: the matrix with the elements below diagonal k set to 0
torch.renorm :: torch.renorm([res,] x, p, dim, maxnorm) / x:renorm(p, dim, maxnorm) :: slices along dim scaled down to p-norm maxnorm where larger
torch.Tensor.cross :: a:cross(b [, dim]) / res:cross(a, b [, dim]) :: cross product along dim, as torch.cross
torch.Tensor.diag :: x:diag([k]) / res:diag(x [, k]) :: diagonal matrix or diagonal k, as torch.diag
torch.Tensor.tril :: x:tril([k]) / res:tril(x [, k]) :: lower triangle, as torch.tril
torch.Tensor.triu :: x:triu([k]) / res:triu(x [, k]) :: upper triangle, as torch.triu
torch.Tensor.renorm :: x:renorm(p, dim, maxnorm) :: renorm in place, as torch.renorm
torch.conv2 :: torch.conv2([res,] x, k [, 'V' or 'F']) :: 2-d convolution (kernel flipped) of 2-d x 2-d, 3-d x 3-d (plane by plane) or 3-d x 4-d (planes summed) tensors; valid (default) or full
torch.xcorr2 :: torch.xcorr2([res,] x, k [, 'V' or 'F']) :: 2-d cross-correlation, same forms as torch.conv2
torch.conv3 :: torch.conv3([res,] x, k [, 'V' or 'F']) :: 3-d convolution of 3-d x 3-d, 4-d x 4-d or 4-d x 5-d tensors
torch.xcorr3 :: torch.xcorr3([res,] x, k [, 'V' or 'F']) :: 3-d cross-correlation, same forms as torch.conv3
torch.Tensor.conv2 :: x:conv2(k [, 'V' or 'F']) / res:conv2(x, k [, vf]) :: as torch.conv2
torch.Tensor.xcorr2 :: x:xcorr2(k [, 'V' or 'F']) / res:xcorr2(x, k [, vf]) :: as torch.xcorr2
torch.Tensor.conv3 :: x:conv3(k [, 'V' or 'F']) / res:conv3(x, k [, vf]) :: as torch.conv3
torch.Tensor.xcorr3 :: x:xcorr3(k [, 'V' or 'F']) / res:xcorr3(x, k [, vf]) :: as torch.xcorr3
torch.kthvalue :: torch.kthvalue([resval, resind,] x, k [, dim]) :: k-th smallest value along dim (default last), dim kept with size 1, and its 1-based index
torch.median :: torch.median([resval, resind,] x [, dim]) :: median along dim (the lower one for an even count), and its index
torch.mode :: torch.mode([resval, resind,] x [, dim]) :: most frequent value along dim (the smallest among ties), and the index of its last occurrence
torch.nonzero :: torch.nonzero([res,] x) :: N x dim LongTensor of the 1-based subscripts of x's nonzero elements, row-major
torch.histc :: torch.histc([res,] x [, nbins, min, max]) :: histogram of x in nbins (100) equal bins over [min, max] (0, 0: x's range)
torch.bhistc :: torch.bhistc([res,] x [, nbins, min, max]) :: one histogram per row of a matrix, over a common range
torch.Tensor.kthvalue :: x:kthvalue(k [, dim]) :: as torch.kthvalue
torch.Tensor.median :: x:median([dim]) :: as torch.median
torch.Tensor.mode :: x:mode([dim]) :: as torch.mode
torch.Tensor.nonzero :: x:nonzero() / res:nonzero(x) :: as torch.nonzero
torch.Tensor.histc :: x:histc([nbins, min, max]) :: as torch.histc
torch.Tensor.bhistc :: x:bhistc([nbins, min, max]) :: as torch.bhistc
torch.Tensor.maskedCopy :: t:maskedCopy(mask, src) :: copy src's first elements, in order, into the elements where the ByteTensor mask is 1, in place
torch.save :: torch.save(filename, obj [, format='binary'|'ascii' [, referenced=true]]) :: write obj in Torch7's .t7 format (tensors, storages, tables, Lua functions, torch.class objects), atomically
torch.load :: torch.load(filename [, format='binary'|'ascii'|'b32'|'b64' [, {allowCode = true}]]) :: read a .t7 file safely: Lua functions only with allowCode (trusted files only: their code runs), classes not defined here are refused, CUDA tensors load on the CPU
torch.serialize :: torch.serialize(obj [, format]) :: obj in Torch7's .t7 format, as a string
torch.deserialize :: torch.deserialize(str [, format [, {allowCode = true}]]) :: the object a torch.serialize string holds (read as safely as torch.load)
torch.serializeToStorage :: torch.serializeToStorage(obj [, format]) :: torch.serialize's bytes in a torch.CharStorage
torch.deserializeFromStorage :: torch.deserializeFromStorage(storage [, format [, {allowCode = true}]]) :: the object a serializeToStorage CharStorage holds
torch.FloatStorage :: torch.FloatStorage([n | table | storage [, offset [, size]] | file [, shared [, size]]]) :: a storage (also Byte, Char, Short, Int, Long, Double, Half, ...): n zeros, a table's values, a view sharing another's memory, or a file mapped to memory (shared = true writes through)
torch.Storage :: torch.Storage(...) :: a storage of the default tensor type's element type
torch.isStorage :: torch.isStorage(x) :: true for storages and for t:size()'s size objects
torch.Storage.size :: s:size() :: number of elements (also #s); s[i] reads and writes element i
torch.Storage.resize :: s:resize(n) :: resize in place, keeping the first elements; tensors on the storage see it
torch.Storage.fill :: s:fill(v) :: set every element to v
torch.Storage.copy :: s:copy(src) :: copy a storage of any type and the same size, converting
torch.Storage.totable :: s:totable() :: the elements as a Lua table
torch.Storage.string :: s:string([str]) :: a Byte/CharStorage's bytes as a string, or set them from one
torch.Storage.elementSize :: s:elementSize() :: bytes per element
torch.Storage.data :: s:data() :: typed FFI pointer to the first element (CPU)
torch.Storage.kind :: s:kind() :: 'memory', 'view' (of another storage) or 'file' (a mapped file)
torch.File :: torch.File :: abstract file: readT()/readT(n)/readT(storage), writeT(x | storage) for T = Byte, Char, Short, Int, Long, Float, Double, Half, ...; readString, writeString, readObject, writeObject
torch.File.binary :: f:binary() / f:ascii() :: numbers as bytes in memory order, or as text (the default)
torch.File.autoSpacing :: f:autoSpacing() / f:noAutoSpacing() :: in ascii, spaces between numbers and a newline after each write (default)
torch.File.readString :: f:readString('*a' | '*l' | n) :: the rest of the file, the next line (without its newline), or n bytes
torch.File.writeString :: f:writeString(str) :: write str's bytes; returns how many were written
torch.File.readObject :: f:readObject([{allowCode = true}]) :: the next object written by writeObject (moontorch.io.serialize's Torch7 format); Lua functions only with allowCode
torch.File.writeObject :: f:writeObject(obj [, debugname [, hook]]) :: write an object in Torch7's serialization format; hook(x) replaces each object written
torch.File.seek :: f:seek(pos) :: go to byte pos (1-based); f:seekEnd() goes to the end, f:position() tells where
torch.File.quiet :: f:quiet() / f:pedantic() :: read and write errors set f:hasError() instead of raising (f:clearError() resets)
torch.File.longSize :: f:longSize(n) :: longs take n bytes in binary (0: native 8, 4: files from 32-bit longs)
torch.File.close :: f:close() :: close the file; later use is an error
torch.DiskFile :: torch.DiskFile(path [, 'r' | 'w' | 'rw' [, quiet]]) :: a file on disk (ascii by default); nil instead of an error when quiet
torch.DiskFile.bigEndianEncoding :: f:bigEndianEncoding() :: binary numbers big endian (also littleEndianEncoding, nativeEndianEncoding)
torch.MemoryFile :: torch.MemoryFile([storage,] [mode]) :: a file in memory, over a NUL-terminated CharStorage; f:storage() returns it
torch.PipeFile :: torch.PipeFile(command [, 'r' | 'w' [, quiet]]) :: read a command's output or write its input
torch.split :: torch.split([result,] x, size [, dim]) :: a table of views of x, `size` long along dim (default 1), the last one shorter
torch.Tensor.split :: x:split(size [, dim]) :: torch.split(x, size, dim)
torch.chunk :: torch.chunk([result,] x, n [, dim]) :: x cut into n views of about equal size along dim (default 1)
torch.Tensor.chunk :: x:chunk(n [, dim]) :: torch.chunk(x, n, dim)
torch.repeatTensor :: torch.repeatTensor([res,] x, sizes...) :: x tiled sizes[i] times along dim i (more sizes than dims: leading dims of 1)
torch.Tensor.repeatTensor :: x:repeatTensor(sizes...) :: a new tensor of x tiled sizes[i] times along dim i
torch.trace :: torch.trace(x) :: the sum of matrix x's diagonal (a number)
torch.Tensor.trace :: x:trace() :: the sum of matrix x's diagonal (a number)
torch.dist :: torch.dist(x, y [, p]) :: the p-norm (default 2) of x - y (a number)
torch.Tensor.dist :: x:dist(y [, p]) :: the p-norm (default 2) of x - y (a number)
torch.CharTensor :: torch.CharTensor(...) :: like torch.Tensor, int8
torch.ShortTensor :: torch.ShortTensor(...) :: like torch.Tensor, int16
torch.Tensor.char :: t:char() :: as int8 (self if already)
torch.Tensor.short :: t:short() :: as int16 (self if already)
torch.getmetatable :: torch.getmetatable('torch.FloatTensor') :: the type's own method table (add methods for that type only; its new is t.new: t:new() a tensor on t's storage, t.new() an empty one, t.new(2, 3) a 2x3 one), or a torch.class class
torch.Generator :: torch.Generator() :: a random generator with its own seed and stream; pass it first to manualSeed, seed, initialSeed, getRNGState, setRNGState, random, uniform, normal, bernoulli, rand, randn, randperm and t:uniform(gen, ...)
torch.Tensor.range :: t:range(a, b [, step]) :: t filled with a, a+step, ..., up to b (inclusive), like torch.range(t, a, b, step); resized to a vector only when its element count differs
torch.Tensor.linspace :: t:linspace(a, b [, n]) :: t filled with n points evenly from a to b (resized to a vector when it holds not n)
torch.Tensor.logspace :: t:logspace(a, b [, n]) :: t resized to n points 10^x, x evenly from a to b
torch.Tensor.elementSize :: t:elementSize() :: bytes per element of t's type
torch.Tensor.acos :: t:acos() / torch.acos([res,] a) :: arc cosine elementwise (floating dtypes)
torch.Tensor.asin :: t:asin() / torch.asin([res,] a) :: arc sine elementwise (floating dtypes)
torch.Tensor.atan :: t:atan() / torch.atan([res,] a) :: arc tangent elementwise (floating dtypes)
torch.Tensor.tan :: t:tan() / torch.tan([res,] a) :: tangent elementwise (floating dtypes)
torch.Tensor.sinh :: t:sinh() / torch.sinh([res,] a) :: hyperbolic sine elementwise (floating dtypes)
torch.Tensor.cosh :: t:cosh() / torch.cosh([res,] a) :: hyperbolic cosine elementwise (floating dtypes)
torch.Tensor.trunc :: t:trunc() / torch.trunc([res,] a) :: round toward zero elementwise (floating dtypes)
torch.Tensor.frac :: t:frac() / torch.frac([res,] a) :: fractional part x - trunc(x) elementwise (floating dtypes)
torch.Tensor.remainder :: t:remainder(v) / torch.remainder([res,] a, v) :: remainder with the sign of the divisor (Lua's %); integer x % 0 is an error
torch.Tensor.cremainder :: t:cremainder(b) / torch.cremainder([res,] a, b) :: elementwise remainder with the sign of the divisor
torch.Tensor.cfmod :: t:cfmod(b) / torch.cfmod([res,] a, b) :: elementwise remainder with the sign of the dividend (C fmod)
torch.Tensor.bitand :: t:bitand(v) / torch.bitand([res,] a, v) :: bitwise and with a number (integer dtypes)
torch.Tensor.cbitand :: t:cbitand(b) / torch.cbitand([res,] a, b) :: elementwise bitwise and (integer dtypes)
torch.Tensor.bitor :: t:bitor(v) / torch.bitor([res,] a, v) :: bitwise or with a number (integer dtypes)
torch.Tensor.cbitor :: t:cbitor(b) / torch.cbitor([res,] a, b) :: elementwise bitwise or (integer dtypes)
torch.Tensor.bitxor :: t:bitxor(v) / torch.bitxor([res,] a, v) :: bitwise xor with a number (integer dtypes)
torch.Tensor.cbitxor :: t:cbitxor(b) / torch.cbitxor([res,] a, b) :: elementwise bitwise xor (integer dtypes)
torch.Tensor.lshift :: t:lshift(n) / torch.lshift([res,] a, n) :: shift bits left by n (floating dtypes: times 2^n)
torch.Tensor.clshift :: t:clshift(b) / torch.clshift([res,] a, b) :: elementwise left shift (floating dtypes: times 2^b)
torch.Tensor.rshift :: t:rshift(n) / torch.rshift([res,] a, n) :: logical right shift by n (floating dtypes: divided by 2^n)
torch.Tensor.crshift :: t:crshift(b) / torch.crshift([res,] a, b) :: elementwise logical right shift (floating dtypes: divided by 2^b)
torch.Tensor.logNormal :: t:logNormal([mean, stdv]) :: fill with exp of normal draws of that mean and stdv (defaults 1, 2), in place
torch.logNormal :: torch.logNormal([mean, stdv]) :: one log-normal number (mean, stdv of the underlying normal)
torch.Tensor.multinomial :: p:multinomial(n [, replacement]) / torch.multinomial([res,] p, n [, replacement]) :: LongTensor of n 1-based indices per row drawn from the weights in p (1-d or 2-d)
torch.multinomialAliasSetup :: torch.multinomialAliasSetup(probs [, state]) :: alias tables {J, q} for fast repeated draws from probs
torch.multinomialAlias :: torch.multinomialAlias(output, state) :: fill the 1-d LongTensor output with draws from an alias state
torch.Tensor.zeros :: x:zeros(sizes...) :: x resized to sizes and zero-filled (torch.zeros's method form)
torch.Tensor.ones :: x:ones(sizes...) :: x resized to sizes and filled with ones
torch.Tensor.rand :: x:rand([gen,] sizes...) :: x resized and filled with uniform draws in [0, 1)
torch.Tensor.randn :: x:randn([gen,] sizes...) :: x resized and filled with standard normal draws
torch.Tensor.eye :: x:eye(n [, m]) :: x resized to n x m with ones on the diagonal
torch.Tensor.randperm :: x:randperm([gen,] n) :: x resized to n and filled with a random permutation of 1..n
torch.Tensor.cdata :: x:cdata() :: the C tensor (mt_tensor* cdata) for FFI code
torch.Tensor.mod :: x:mod(value) :: Torch7's older name of fmod
torch.Tensor.cmod :: x:cmod(y) :: Torch7's older name of cfmod
torch.Tensor.exponential :: x:exponential([gen,] [lambda=1]) :: in place: exponential draws, density lambda*exp(-lambda*x)
torch.Tensor.cauchy :: x:cauchy([gen,] [median=0, sigma=1]) :: in place: Cauchy draws
torch.Tensor.geometric :: x:geometric([gen,] [p=0.5]) :: in place: integers i >= 1 with P(i) = (1-p) p^(i-1)
torch.exponential :: torch.exponential([gen,] [lambda=1]) :: one exponential random number
torch.cauchy :: torch.cauchy([gen,] [median=0, sigma=1]) :: one Cauchy random number
torch.geometric :: torch.geometric([gen,] [p=0.5]) :: one geometric random integer >= 1
torch.numel :: torch.numel(x) :: x's number of elements (also torch.nDimension, torch.resize, torch.storage, torch.storageOffset, torch.data, torch.cdata, torch.byte, ... as x:f())
torch.mod :: torch.mod([res,] x, value) :: Torch7's older name of torch.fmod (torch.cmod: of torch.cfmod)
]==]

-- torch.* functions that share a method's text (torch.add has t:add's line, ...)
local ALSO_TORCH = {
   'add', 'csub', 'mul', 'div', 'cmul', 'cdiv', 'pow', 'addcmul', 'addcdiv', 'exp', 'log', 'log1p', 'expm1',
   'sqrt', 'rsqrt', 'abs', 'sign', 'neg', 'floor', 'ceil', 'round', 'tanh', 'sigmoid', 'sin', 'cos', 'square',
   'cinv', 'clamp', 'cmax', 'cmin', 'fmod', 'atan2', 'lerp', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'sum', 'prod',
   'mean', 'var', 'std', 'norm', 'max', 'min', 'argmax', 'argmin', 'sort', 'topk', 'cumsum', 'cumprod', 'mm',
   'bmm', 'addmm', 'baddbmm', 'addbmm', 'addmv', 'mv', 'dot', 'addr', 'ger', 'index', 'gather', 'reshape',
   'maskedSelect', 'clone', 'squeeze', 'unsqueeze', 'transpose', 'permute', 'narrow', 'select', 'view', 'expand',
   'all', 'any', 'bernoulli', 'normal', 'uniform', 'random', 'contiguous', 'cpow', 'expandAs', 'viewAs', 'fill',
   'zero', 'indexSelect', 'isSameSizeAs', 'equal', 'isSetTo', 'reciprocal', 'relu', 'scatter', 't', 'unfold', 'sub',
}

local entries, names = {}, {}
for line in TEXT:gmatch('[^\n]+') do
   local name, sig, desc = line:match('^(%S+) :: (.-) :: (.*)$')
   assert(name, 'help.lua: malformed line: ' .. line)
   entries[name] = { sig = sig, desc = desc }
   names[#names + 1] = name
end
for _, m in ipairs(ALSO_TORCH) do
   local e = entries['torch.Tensor.' .. m]
   if e and not entries['torch.' .. m] then
      entries['torch.' .. m] = e
      names[#names + 1] = 'torch.' .. m
   end
end
table.sort(names)
M.entries, M.names = entries, names

---------------------------------------------------------------------------------------------
-- nn and optim. Each nn class's file opens with its one-line documentation, `-- nn.Name(args):
-- what it does. More...`; that header is its help, so the two cannot drift apart. The optim
-- functions' headers are paragraphs, not signatures, so they are written here, as are the nn
-- classes that live in another class's file (or whose header has another form).
local LIB_TEXT = [==[
nn.Jacobian :: nn.Jacobian.testJacobian(m, input [, minval, maxval, perturbation]) :: Torch7's derivative checker: the largest difference between a module's backward and finite differences (also testJacobianParameters, testJacobianUpdateParameters, testIO)
nn.SparseJacobian :: nn.SparseJacobian.testJacobian(m, input [, minval, maxval]) :: nn.Jacobian for modules whose input is nnz x 2 (index, value) rows: perturbs the values column only (also testJacobianParameters, testAllUpdate, testIO)
nn.SpatialDilatedConvolution :: nn.SpatialDilatedConvolution(nIn, nOut, kW, kH, dW, dH, padW, padH [, dilW=1, dilH=dilW]) :: 2-d convolution with holes: kernel taps dilW, dilH pixels apart
nn.SpatialAdaptiveAveragePooling :: nn.SpatialAdaptiveAveragePooling(W, H) :: average pooling to a W x H output whatever the input size
optim.sgd :: x, {f} = optim.sgd(feval, x [, config [, state]]) :: SGD as Torch7's: learningRate, learningRateDecay, weightDecay, momentum, dampening, nesterov, learningRates/weightDecays tensors
optim.nag :: x, {f} = optim.nag(feval, x [, config [, state]]) :: SGD with Nesterov's accelerated gradient (Sutskever et al.): learningRate, momentum (0.9), weightDecay
optim.adam :: x, {f} = optim.adam(feval, x [, config [, state]]) :: Adam (Kingma & Ba): learningRate (1e-3), beta1 (0.9), beta2 (0.999), epsilon (1e-8), weightDecay as L2
optim.adamw :: x, {f} = optim.adamw(feval, x [, config [, state]]) :: Adam with decoupled weight decay (Loshchilov & Hutter): weightDecay (1e-2) shrinks x before the step
optim.adamax :: x, {f} = optim.adamax(feval, x [, config [, state]]) :: Adam with the infinity norm: learningRate (0.002), beta1, beta2, epsilon
optim.adagrad :: x, {f} = optim.adagrad(feval, x [, config [, state]]) :: per-element step lr / sqrt(sum of squared gradients): learningRate (1e-3), learningRateDecay, weightDecay
optim.adadelta :: x, {f} = optim.adadelta(feval, x [, config [, state]]) :: Adadelta (Zeiler), no learning rate: rho (0.9), eps (1e-6), weightDecay
optim.rmsprop :: x, {f} = optim.rmsprop(feval, x [, config [, state]]) :: RMSprop: learningRate (1e-2), alpha (0.99), epsilon (1e-8), weightDecay
optim.rprop :: x, {f} = optim.rprop(feval, x [, config [, state]]) :: Rprop: a step size per element, grown by etaplus (1.2) while the gradient keeps its sign, shrunk by etaminus (0.5)
optim.asgd :: x, {f}, ax = optim.asgd(feval, x [, config [, state]]) :: averaged SGD (Bottou): eta0, lambda, alpha, t0; ax is the averaged x
optim.cg :: x, {f...} = optim.cg(feval, x [, config [, state]]) :: nonlinear conjugate gradients with a Wolfe line search: maxIter, maxEval, rho, sig
optim.lbfgs :: x, {f...} = optim.lbfgs(feval, x [, config [, state]]) :: limited-memory BFGS (minFunc's): maxIter (20), nCorrection, tolFun, tolX, learningRate, lineSearch
optim.lars :: x, {f} = optim.lars(feval, x [, config [, state]]) :: layer-wise adaptive rate scaling (You et al.): SGD with momentum whose rate per layer is eta*||w||/||g||; config.layers from optim.layerSegments
optim.lamb :: x, {f} = optim.lamb(feval, x [, config [, state]]) :: LAMB (You et al. 2019): Adam's update scaled per layer by ||w||/||u||; config.layers from optim.layerSegments
optim.lswolfe :: f, g, x, t, evals = optim.lswolfe(opfunc, x, t, d, f, g, gtd [, options]) :: line search along d meeting the strong Wolfe conditions (lbfgs's lineSearch)
optim.polyinterp :: t = optim.polyinterp(points [, xminBound, xmaxBound]) :: minimiser of the cubic through two points {x, f, f'} (the line searches' step)
optim.layerSegments :: layers, exclude = optim.layerSegments(model, x) :: {offset, length} of each parameter tensor in the flat x, and the 1-d ones (biases, BN weights) LARS/LAMB leave unadapted
optim.stateToCheckpoint :: tensors, values = optim.stateToCheckpoint(state [, prefix]) :: an optimizer state as checkpoint tensors by name and plain values
optim.stateFromCheckpoint :: state = optim.stateFromCheckpoint(tensors, values [, prefix]) :: the optimizer state stateToCheckpoint saved
optim.ConfusionMatrix :: optim.ConfusionMatrix(nclasses [, classes]) :: counts of (target, prediction) pairs: cm:add(p, t), cm:batchAdd(P, T), cm:updateValids(), cm.totalValid, print(cm)
optim.Logger :: optim.Logger(filename [, timestamp]) :: rows of numbers to a text file as Torch7's: log:setNames{...}, log:add{...}, log:plot() (SVG)
optim.GradScaler :: optim.GradScaler{initScale=, growthFactor=2, backoffFactor=0.5, growthInterval=2000, dynamic=, clip=} :: dynamic loss scaling for float16: scaler:scale(gradOutput), scaler:step(optim.sgd, feval, x, config, state)
optim.schedule :: optim.schedule.NAME(...) :: learning-rate schedules, functions of a step t from 0: config.learningRate = sched(t)
optim.schedule.constant :: optim.schedule.constant(lr) :: lr at every step
optim.schedule.step :: optim.schedule.step(lr, stepSize [, gamma]) :: lr * gamma^floor(t / stepSize)
optim.schedule.multistep :: optim.schedule.multistep(lr, milestones [, gamma]) :: lr * gamma^(number of milestones <= t)
optim.schedule.cosine :: optim.schedule.cosine(lr, tMax [, minLr]) :: cosine annealing from lr to minLr over tMax steps, then minLr
optim.schedule.polynomial :: optim.schedule.polynomial(lr, tMax [, power, minLr]) :: minLr + (lr - minLr) * (1 - t/tMax)^power, then minLr
optim.schedule.warmup :: optim.schedule.warmup(n, sched) :: linear warm-up over n steps, then sched starting from its step 0
optim.schedule.warmupOver :: optim.schedule.warmupOver(n, sched) :: linear warm-up over sched's own first n steps (its step decays stay where they were)
]==]

local function add(name, sig, desc)
   if entries[name] then return end
   entries[name] = { sig = sig, desc = desc }
   names[#names + 1] = name
end

for line in LIB_TEXT:gmatch('[^\n]+') do
   local name, sig, desc = line:match('^(%S+) :: (.-) :: (.*)$')
   assert(name, 'help.lua: malformed line: ' .. line)
   add(name, sig, desc)
end

-- 'nn.Linear(inputSize, outputSize[, bias = true])', 'y = W x + b for ...' from the header of the
-- file that defines nn.<name>, or nil when it does not open with `-- nn.<name>`
local function header_help(name, path)
   local f = io.open(path, 'r')
   if not f then return nil end
   local parts = {}
   for line in f:lines() do
      local text = line:match('^%-%-%s?(.*)$')
      if not text or text:match('^%s') then break end -- the code, or an indented example
      parts[#parts + 1] = text
   end
   f:close()
   local text = table.concat(parts, ' ')
   local full = 'nn.' .. name
   if text:sub(1, #full) ~= full or text:sub(#full + 1, #full + 1):match('[%w_]') then return nil end
   local sig, rest = full, text:sub(#full + 1)
   if rest:sub(1, 1) == '(' then
      local args = rest:match('^%b()')
      if not args then return nil end
      sig, rest = full .. args, rest:sub(#args + 1)
   end
   rest = rest:gsub('^[:,]?%s*', '')
   -- the first sentence: up to a full stop before a capital letter, or the end
   local stop = rest:find('%.%s+%u')
   local desc = stop and rest:sub(1, stop - 1) or rest:gsub('%.%s*$', '')
   if desc == '' then desc = 'see ' .. path:match('[^/]+/[^/]+$') end
   -- a long sentence is cut at its last clause break that fits: the help stays one line
   local MAX = 150
   if #desc > MAX then
      local head = desc:sub(1, MAX)
      local cut = head:match('^(.*); ') or head:match('^(.*), ') or head:match('^(.*) ') or head
      desc = cut .. ' ...'
   end
   return sig, desc
end

-- The nn classes (each from its file's header) are added the first time help is looked up with
-- moontorch.nn loaded: help.lua itself loads without the library (moontorch -h).
local lib_done = false
function M.load_library()
   local nn = package.loaded['moontorch.nn']
   if lib_done or type(nn) ~= 'table' then return end
   lib_done = true
   for name, cls in pairs(nn) do
      if type(name) == 'string' and name:match('^%u') and type(cls) == 'table' then
         local path = package.searchpath('moontorch.nn.' .. name, package.path)
         local sig, desc
         if path then sig, desc = header_help(name, path) end
         if sig then add('nn.' .. name, sig, desc) end
      end
   end
   table.sort(names)
end

-- Canonical key for a name a user types: 'torch.zeros', 'zeros', 'Tensor.add', 't:add', 'add'.
function M.find(name)
   if type(name) ~= 'string' then return nil end
   M.load_library()
   name = name:gsub('^%s+', ''):gsub('%s+$', ''):gsub('%(%)$', '')
   if entries[name] then return name end
   local cands = {}
   local method = name:match('^[%w_]+:([%w_]+)$') or name:match('^Tensor[.:]([%w_]+)$')
      or name:match('^torch%.Tensor:([%w_]+)$')
   if method then cands[#cands + 1] = 'torch.Tensor.' .. method end
   if not name:find('[.:]') then
      cands[#cands + 1] = 'torch.' .. name
      cands[#cands + 1] = 'torch.Tensor.' .. name
      cands[#cands + 1] = 'torch.cuda.' .. name
      cands[#cands + 1] = 'nn.' .. name
      cands[#cands + 1] = 'optim.' .. name
   end
   if name:match('^cuda%.') then cands[#cands + 1] = 'torch.' .. name end
   for _, c in ipairs(cands) do if entries[c] then return c end end
   return nil
end

-- The one-line text for a key: 'signature  --  description'.
function M.line(key)
   M.load_library()
   local e = entries[key]
   if not e then return nil end
   return e.sig .. '  --  ' .. e.desc
end

-- Keys under a prefix ('torch.cuda.'), for help(torch.cuda).
function M.under(prefix)
   M.load_library()
   local r = {}
   for _, n in ipairs(names) do
      if n:sub(1, #prefix) == prefix and not n:find('.', #prefix + 1, true) then r[#r + 1] = n end
   end
   return r
end

return M
