-- csvlog.lua: a CSV log, one row per call, flushed at once so a killed run keeps its rows.
--   local log = logger.new('run/log.csv', { 'epoch', 'train_loss', 'test_acc' }, { append = true })
--   log:add{ epoch = 1, train_loss = 0.41, test_acc = 0.88 }
-- With `append` and an existing file with the same columns, earlier rows are kept (and
-- returned by :rows()), so a resumed run extends its log instead of starting over.
local logger = {}
logger.__index = logger

local function split(line)
   local out = {}
   for field in (line .. ','):gmatch('([^,]*),') do out[#out + 1] = field end
   return out
end

local function fmt(v)
   if type(v) == 'number' then
      if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ('%d'):format(v) end
      return ('%.6g'):format(v)
   end
   v = tostring(v == nil and '' or v)
   if v:find('[,"\n]') then v = '"' .. v:gsub('"', '""') .. '"' end
   return v
end

-- Read a CSV written by this logger: columns, rows (tables keyed by column, numbers as numbers).
function logger.read(path)
   local f = io.open(path, 'r')
   if not f then return nil end
   local header = f:read('*l')
   if not header then f:close() return nil end
   local cols, rows = split(header), {}
   for line in f:lines() do
      if line ~= '' then
         local vals, row = split(line), {}
         for j, c in ipairs(cols) do row[c] = tonumber(vals[j]) or vals[j] end
         rows[#rows + 1] = row
      end
   end
   f:close()
   return cols, rows
end

function logger.new(path, columns, opts)
   opts = opts or {}
   local self = setmetatable({ path = path, columns = columns, _rows = {} }, logger)
   local keep = false
   if opts.append then
      local cols, rows = logger.read(path)
      if cols and table.concat(cols, ',') == table.concat(columns, ',') then
         keep = true
         -- drop rows past `upto` (e.g. epochs after the checkpoint being resumed)
         for _, r in ipairs(rows) do
            if not opts.keep or opts.keep(r) then self._rows[#self._rows + 1] = r end
         end
      end
   end
   local f, err = io.open(path, 'w')
   if not f then error('logger: cannot write ' .. tostring(path) .. ': ' .. tostring(err), 2) end
   self.file = f
   f:write(table.concat(columns, ','), '\n')
   if keep then for _, r in ipairs(self._rows) do self:_write(r) end end
   f:flush()
   return self
end

function logger:_write(row)
   local vals = {}
   for j, c in ipairs(self.columns) do vals[j] = fmt(row[c]) end
   self.file:write(table.concat(vals, ','), '\n')
end

function logger:add(row)
   self._rows[#self._rows + 1] = row
   self:_write(row)
   self.file:flush()
end

function logger:rows() return self._rows end

function logger:close()
   if self.file then self.file:close() self.file = nil end
end

return logger
