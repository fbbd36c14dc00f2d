--[[
drive.lua: run the real job_submit.lua outside slurmctld, with a stand-in `slurm` table and job_desc.

  lua5.1 drive.lua SHIM CONFIG once   JOB_JSON     -- one slurm_job_submit call, prints a JSON result
  lua5.1 drive.lua SHIM CONFIG modify JOB_JSON     -- one slurm_job_modify call (JOB_JSON may hold job_id, or
                                                   -- job_rec: the job record's fields)
  lua5.1 drive.lua SHIM CONFIG bench  RATE SECONDS JOB_JSON
                                                   -- calls at a steady RATE per second for SECONDS, prints
                                                   -- {"latencies_us": [...], "rc": {...}, "sets": n}

The stand-in job_desc behaves like slurmctld's: unset strings read as nil, unset numbers as NO_VAL, and
writes are recorded (and visible to later reads). Used by tests/unit/shim and `hetsched bench submit`.
--]]

local socket = require("socket")
local cjson = require("cjson")

local shim, config, mode = arg[1], arg[2], arg[3]
HETSCHED_SHIM_CONFIG = config

local NO_VAL = 4294967294
local NUMBERS = { min_cpus = 1, cpus_per_task = 65534, num_tasks = NO_VAL, min_nodes = NO_VAL, max_nodes = NO_VAL,
                  time_limit = NO_VAL, user_id = 0, site_factor = NO_VAL, priority = NO_VAL }

local logs, user_msgs = {}, {}
slurm = {
  SUCCESS = 0, ERROR = -1, FAILURE = -1,
  log_info = function(fmt, ...) logs[#logs + 1] = string.format(fmt, ...) end,
  log_user = function(fmt, ...) user_msgs[#user_msgs + 1] = string.format(fmt, ...) end,
}
slurm.log_error, slurm.log_debug, slurm.log_verbose = slurm.log_info, slurm.log_info, slurm.log_info

local function make_job_desc(fields)
  local data, writes = {}, {}
  for k, v in pairs(NUMBERS) do data[k] = v end
  for k, v in pairs(fields) do data[k] = v end
  local desc = setmetatable({}, {
    __index = function(_, k) return data[k] end,
    __newindex = function(_, k, v) data[k] = v; writes[k] = v end,
  })
  return desc, writes
end

local loaded = dofile(shim)

-- microseconds this process has waited, runnable, for a CPU (Linux schedstat; 0 elsewhere): a timeout cannot
-- fire while the process is off the CPU, so timing tests add this to their bounds
local function run_queue_us()
  local f = io.open("/proc/self/schedstat")
  if not f then return 0 end
  local line = f:read("*l") or ""
  f:close()
  local _, waited = line:match("^(%d+)%s+(%d+)")
  return (tonumber(waited) or 0) / 1000
end

local function call(op, fields)
  logs, user_msgs = {}, {}
  local rec = fields.job_rec or { job_id = fields.job_id or 1 }  -- a modification's job record (strings, numbers)
  fields.job_rec = nil
  local desc, writes = make_job_desc(fields)
  local w0 = run_queue_us()
  local t0 = socket.gettime()
  local rc
  if op == "modify" then
    rc = slurm_job_modify(desc, rec, {}, 0)
  else
    rc = slurm_job_submit(desc, {}, 0)
  end
  return rc, writes, (socket.gettime() - t0) * 1e6, run_queue_us() - w0
end

if mode == "once" or mode == "modify" then
  local rc, writes, us, waited = call(mode == "modify" and "modify" or "submit", cjson.decode(arg[4] or "{}"))
  local w = next(writes) and writes or cjson.decode("{}")
  print(cjson.encode({ rc = rc, set = w, user = user_msgs, log = logs, elapsed_us = us, waited_us = waited,
                       loaded = loaded }))
elseif mode == "bench" then
  local rate, seconds, fields = tonumber(arg[4]), tonumber(arg[5]), cjson.decode(arg[6] or "{}")
  local n, period = math.floor(rate * seconds), 1 / rate
  local lat, rcs, sets = {}, {}, 0
  local start = socket.gettime()
  for i = 0, n - 1 do
    local due = start + i * period
    local wait = due - socket.gettime()
    if wait > 0 then socket.sleep(wait) end
    local rc, writes, us = call("submit", fields)
    lat[#lat + 1] = math.floor(us + 0.5)
    rcs[tostring(rc)] = (rcs[tostring(rc)] or 0) + 1
    if next(writes) then sets = sets + 1 end
  end
  local elapsed = socket.gettime() - start
  print(cjson.encode({ latencies_us = lat, rc = rcs, sets = sets, elapsed_s = elapsed, log_sample = logs }))
else
  io.stderr:write("usage: drive.lua SHIM CONFIG once|modify|bench ...\n")
  os.exit(2)
end
