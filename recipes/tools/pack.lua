-- pack.lua: pack an ImageFolder into shards (many images per file: fewer, larger reads, and a
-- CRC-32 on every record), read back with data.Shards(dir).
--   luajit recipes/tools/pack.lua SRC DST [-shardSize 1024] [-extensions jpg,jpeg,png] [-verify]
-- SRC is an ImageFolder root (SRC/<class>/<image>) -> DST/classes.txt + DST/shard-00000.mts ...;
-- or it holds split folders (train/, val/, test/), each an ImageFolder -> DST/<split>/...
-- File i of the sorted listing goes to shard floor(i / shardSize), so a rerun after an
-- interruption keeps every shard that opens, holds the expected files and passes its CRCs,
-- and rewrites the rest. Unreadable files are skipped, each named, and counted at the end.
-- -verify re-reads every record of DST afterwards and checks its CRC (exit status 1 on errors).
local torch = require 'moontorch' -- the repository root's loader: lua/ on the path
local ffi = require 'ffi'
local dataset = require 'moontorch.data.dataset'
local fs = require 'moontorch.io.fs'
local now = require('moontorch.util.progress').now
local int = require('moontorch.train.flags').int
local C = require('moontorch.internal').clib -- the shard reader and writer's C API

local cmd = torch.CmdLine()
cmd.name = 'pack'
cmd:text('pack.lua: pack an ImageFolder (or its train/, val/, test/) into shards')
cmd:argument('-src', 'ImageFolder root, or a folder of split folders')
cmd:argument('-dst', 'where the shards go')
cmd:text('Options:')
cmd:option('-shardSize', 1024, 'records per shard', int '[1, inf)')
cmd:option('-extensions', 'jpg,jpeg,png', 'extensions of the files to pack (comma-separated, any case)')
cmd:option('-verify', false, 'afterwards, re-read every record of DST and check its CRC')
cmd:option('-quiet', false, 'no progress line')
local SPLITS = { 'train', 'val', 'test' }

local function lasterr() return ffi.string(C.mt_last_error()) end
local line_open = false -- a progress line without its newline is on the terminal
local function warn(msg)
   if line_open then io.stderr:write('\n') end
   line_open = false
   io.stderr:write('pack: warning: ', msg, '\n')
end

----------------------------------------------------------------------------------------------
-- progress

local Progress = {}
Progress.__index = Progress
local function progress(label, quiet)
   return setmetatable({ label = label, quiet = quiet, files = 0, bytes = 0, t0 = now(), last = 0 }, Progress)
end
function Progress:add(files, bytes)
   self.files, self.bytes = self.files + files, self.bytes + bytes
end
function Progress:show(shard, nshards, total, final)
   local t = now()
   if self.quiet or (not final and t - self.last < 0.5) then return end
   self.last = t
   local dt = math.max(t - self.t0, 1e-6)
   io.stderr:write(('\r%s: shard %d/%d, %d/%d files, %.0f files/s, %.1f MB/s  '):format(self.label, shard, nshards,
      self.files, total, self.files / dt, self.bytes / dt / 1e6), final and '\n' or '')
   io.stderr:flush()
   line_open = not final
end

----------------------------------------------------------------------------------------------
-- one split

local entry_len, entry_label, entry_name = ffi.new('uint32_t[1]'), ffi.new('int32_t[1]'), ffi.new('const char *[1]')
local readbuf, readcap = nil, 0

local function open_shard(path)
   local sp = ffi.new('mt_shard *[1]')
   if C.mt_shard_open(sp, path) ~= 0 then return nil, lasterr() end
   return ffi.gc(sp[0], C.mt_shard_close)
end

-- read every record of an open shard (CRC-checked); calls each(r, length) after each good one.
-- Returns nil or the first error.
local function read_all(s, each)
   for r = 0, tonumber(C.mt_shard_count(s)) - 1 do
      if C.mt_shard_entry(s, r, nil, entry_len, entry_label, entry_name) ~= 0 then return lasterr() end
      local len = entry_len[0]
      if len > readcap then
         readcap = math.max(len, 2 * readcap)
         readbuf = ffi.new('uint8_t[?]', readcap)
      end
      if C.mt_shard_read(s, r, readbuf, readcap) ~= 0 then return lasterr() end
      if each then
         local err = each(r, len)
         if err then return err end
      end
   end
end

-- Does the shard at path hold files lo..hi of ds (in order, same labels, CRCs good)? Files
-- missing from it must still be unreadable (they were skipped when it was written).
-- Returns true, records, bytes, skipped names; or false and the reason.
local function shard_matches(path, ds, lo, hi, relname)
   local s, err = open_shard(path)
   if not s then return false, err end
   local i, bytes, missing = lo, 0, {}
   err = read_all(s, function(r, len)
      local name, label = ffi.string(entry_name[0]), entry_label[0]
      while i <= hi and relname(i) ~= name do
         missing[#missing + 1] = i
         i = i + 1
      end
      if i > hi then return ('record %d (%s) is not one of the files assigned to this shard'):format(r, name) end
      if ds:sample(i) - 1 ~= label then return ('record %d (%s) has label %d, expected %d'):format(r, name, label + 1,
         ds:sample(i)) end
      i, bytes = i + 1, bytes + len
   end)
   local count = tonumber(C.mt_shard_count(s))
   C.mt_shard_close(ffi.gc(s, nil))
   if err then return false, err end
   for k = i, hi do missing[#missing + 1] = k end
   local skipped = {}
   for _, k in ipairs(missing) do
      local ok, rerr = pcall(ds.read, ds, k)
      if ok then return false, ('%s was skipped when the shard was written but is readable now'):format(relname(k)) end
      skipped[#skipped + 1] = rerr
   end
   return true, count, bytes, skipped
end

-- write files lo..hi of ds into a new shard at path; unreadable files are skipped and named
local function write_shard(path, ds, lo, hi, relname, prog)
   local wp = ffi.new('mt_shard_writer *[1]')
   if C.mt_shard_writer_open(wp, path) ~= 0 then error(lasterr(), 0) end
   local w, skipped = wp[0], 0
   local ok, err = pcall(function()
      for i = lo, hi do
         local rok, bytes = pcall(ds.read, ds, i)
         if rok then
            local n = bytes:nElement()
            if C.mt_shard_writer_add(w, bytes:data(), n, ds:sample(i) - 1, relname(i)) ~= 0 then error(lasterr(), 0) end
            prog:add(1, n)
         else
            warn('skipping unreadable file: ' .. tostring(bytes))
            skipped = skipped + 1
         end
      end
   end)
   if not ok then
      C.mt_shard_writer_abort(w) -- also on an interrupt: no temporary file is left behind
      error(err, 0)
   end
   if C.mt_shard_writer_commit(w) ~= 0 then error(lasterr(), 0) end
   return skipped
end

local function shard_name(k) return ('shard-%05d.mts'):format(k) end

local function pack_split(src, dst, opt, label)
   local ds = dataset.ImageFolder(src, { extensions = opt.extensions })
   for _, w in ipairs(ds:warnings()) do warn(w) end
   local n, S = ds:size(), opt.shardSize
   if n == 0 then error(('%s: no files with extensions %s to pack'):format(src, opt.extensions), 0) end
   for _, c in ipairs(ds:classes()) do
      if c:find('[\r\n]') then error(('%s: class folder %q has a line break in its name, which classes.txt cannot hold')
         :format(src, c), 0) end
   end
   fs.mkdir_p(dst)
   local classes = table.concat(ds:classes(), '\n') .. '\n'
   local f = io.open(dst .. '/classes.txt', 'rb')
   local old = f and f:read('*a')
   if f then f:close() end
   if old ~= classes then fs.write_atomic(dst .. '/classes.txt', classes) end

   local prefix = src:gsub('(.)/+$', '%1') .. '/'
   local function relname(i)
      local _, name = ds:sample(i)
      return name:sub(1, #prefix) == prefix and name:sub(#prefix + 1) or name
   end
   local nshards = math.ceil(n / S)
   local prog = progress(label, opt.quiet)
   local kept, written, skipped = 0, 0, 0
   for k = 0, nshards - 1 do
      local lo, hi = k * S + 1, math.min((k + 1) * S, n)
      local path = dst .. '/' .. shard_name(k)
      local ok, count, bytes, why = shard_matches(path, ds, lo, hi, relname)
      if ok then
         kept, skipped = kept + 1, skipped + #why
         for _, msg in ipairs(why) do warn('skipping unreadable file: ' .. msg) end
         prog:add(count, bytes)
      else
         local existing = io.open(path, 'rb')
         if existing then
            existing:close()
            warn(('rewriting %s: %s'):format(path, count))
         end
         skipped = skipped + write_shard(path, ds, lo, hi, relname, prog)
         written = written + 1
      end
      prog:show(k + 1, nshards, n, false)
   end
   prog:show(nshards, nshards, n, true)
   -- shards past the end (the source shrank) and temporary files of an interrupted run
   for _, name in ipairs(fs.list(dst) or {}) do
      local idx = tonumber(name:match('^shard%-(%d+)%.mts$'))
      if (idx and idx >= nshards) or name:match('^shard%-%d+%.mts%.tmp%.%d+$')
         or name:match('^classes%.txt%.tmp%.%d+$') then
         print(('%s: removing stale %s'):format(label, name))
         os.remove(dst .. '/' .. name)
      end
   end
   print(('%s: %d files in %d shards (%d kept, %d written) -> %s'):format(label, n - skipped, nshards, kept,
      written, dst))
   return skipped
end

----------------------------------------------------------------------------------------------
-- -verify

local function verify_split(dst, label)
   local names, err = fs.list(dst)
   if not names then return 1, err end
   local shards, records, bytes, errors = 0, 0, 0, 0
   local ok, derr = pcall(dataset.Shards, dst) -- classes.txt present and covering every label
   if not ok then
      io.stderr:write('pack: verify: ', tostring(derr), '\n')
      errors = errors + 1
   end
   for _, name in ipairs(names) do
      if name:match('%.mts$') then
         shards = shards + 1
         local s, oerr = open_shard(dst .. '/' .. name)
         local rerr = oerr or read_all(s, function(_, len) records, bytes = records + 1, bytes + len end)
         if rerr then
            io.stderr:write('pack: verify: ', rerr, '\n')
            errors = errors + 1
         end
      end
   end
   print(('%s: verified %d records in %d shards (%.1f MB): %d error%s'):format(label, records, shards, bytes / 1e6,
      errors, errors == 1 and '' or 's'))
   return errors
end

----------------------------------------------------------------------------------------------
-- main

local function main(args)
   local opt = cmd:parse(args)
   local src, dst = opt.src:gsub('(.)/+$', '%1'), opt.dst:gsub('(.)/+$', '%1')
   if not fs.isdir(src) then error(('cannot open the source folder %s'):format(src), 0) end
   local jobs = {}
   for _, s in ipairs(SPLITS) do
      if fs.isdir(src .. '/' .. s) then jobs[#jobs + 1] = { src .. '/' .. s, dst .. '/' .. s, s } end
   end
   if #jobs == 0 then jobs[1] = { src, dst, 'pack' } end
   local skipped = 0
   for _, j in ipairs(jobs) do skipped = skipped + pack_split(j[1], j[2], opt, j[3]) end
   if skipped > 0 then
      warn(('%d unreadable file%s skipped (named above)'):format(skipped, skipped == 1 and ' was' or 's were'))
   end
   local errors = 0
   if opt.verify then
      for _, j in ipairs(jobs) do errors = errors + verify_split(j[2], j[3]) end
   end
   return errors == 0 and 0 or 1
end

local ok, rc = pcall(main, arg or {})
if not ok then
   -- library errors carry the Lua position of the call; the message itself says what failed
   io.stderr:write('pack: ', (tostring(rc):gsub('^[^:\n]+%.lua:%d+: ', ''):gsub('^pack: ', '')), '\n')
   os.exit(1)
end
os.exit(rc)
