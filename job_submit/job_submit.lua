--[[
job_submit.lua: slurm-hetsched admission shim, loaded by slurmctld (JobSubmitPlugins=lua).

slurmctld runs this for every submission and modification, holding its locks, one call at a time, and
rejects the job if Lua raises. So the shim is thin and defensive:

  1. copy a whitelist of job_desc fields into one versioned JSON request (protocol 1, see
     slurm_plugin/daemon/protocol.py);
  2. send it over a Unix socket to the hetsched daemon with a hard total timeout (default 50 ms);
  3. apply the answer (partition, features, qos, site_factor = priority band, comment; with right-sizing on,
     cpus_per_task/min_cpus/pn_min_cpus/min_mem_per_cpu/min_mem_per_node) after checking every field, and
     tell the user why with slurm.log_user;
  4. if the daemon is absent, hung, slow or answers garbage: accept the job unchanged and log one line
     (fail = "open", the default) or refuse it with a message (fail = "closed").

No fork, no io.popen; every step runs under pcall, so no Lua error ever reaches slurmctld.
Works with the Lua 5.1 of Slurm 22.05 and the Lua of 24.11 (only 5.1 features are used).

Settings: hetsched-shim.json next to this file (slurmctld loads job_submit.lua from slurm.conf's directory):
  {"version": 1, "socket": "/run/hetsched/hetsched.sock", "timeout_ms": 50, "fail": "open", "site": "demo"}
It is re-read at most every CONFIG_TTL seconds, so edits apply without touching this script.
A stand-alone Lua may set the global HETSCHED_SHIM_CONFIG to another path before loading this file (tests).
--]]

local PROTOCOL = 1
local DEFAULTS = { socket = "/run/hetsched/hetsched.sock", timeout_ms = 50, fail = "open" }
local CONFIG_TTL = 10            -- seconds between re-reads of hetsched-shim.json
local MAX_REPLY = 65536          -- bytes; a longer reply is garbage
local MAX_SEND_STRING = 4096     -- longer job strings are left out of the request (daemon limit)
local MAX_SET_STRING = 1024      -- longest value the shim will write into job_desc
local NO_VAL = 4294967294        -- Slurm's NO_VAL/INFINITE (32-bit): "not set"
local NO_VAL16 = 65534           -- the same for 16-bit fields (cpus_per_task)

-- job_desc fields sent as strings (tres_per_node goes out as "gres").
local STRING_FIELDS = { "partition", "features", "qos", "account", "name", "comment", "wckey", "array_inx",
                        "licenses", "req_nodes", "tres_per_job" }
-- job_desc numeric fields: request key -> { job_desc field, largest valid value }
local NUMBER_FIELDS = {
  min_cpus = { "min_cpus", NO_VAL - 1 }, cpus_per_task = { "cpus_per_task", NO_VAL16 - 1 },
  num_tasks = { "num_tasks", NO_VAL - 1 }, min_nodes = { "min_nodes", NO_VAL - 1 },
  max_nodes = { "max_nodes", NO_VAL - 1 }, time_limit = { "time_limit", NO_VAL - 1 },
  user_id = { "user_id", NO_VAL - 1 }, mem_per_node_mb = { "min_mem_per_node", NO_VAL - 1 },
  mem_per_cpu_mb = { "min_mem_per_cpu", NO_VAL - 1 },
  ntasks_per_node = { "ntasks_per_node", NO_VAL16 - 1 }, pn_min_cpus = { "pn_min_cpus", NO_VAL16 - 1 },
}
-- What a reply may set, and the Lua type each value must have. Nothing else is ever written.
local SETTABLE = { partition = "string", features = "string", qos = "string", comment = "string",
                   site_factor = "number", cpus_per_task = "number", min_cpus = "number", pn_min_cpus = "number",
                   min_mem_per_cpu = "number", min_mem_per_node = "number" }
-- Range of each number a reply may set (right-sizing only ever sets positive counts and MB).
-- site_factor: band x 4000 (+ level x 100 from the ranker); Slurm keeps it offset by 2^31 in a uint32.
local NUMBER_RANGE = { site_factor = { -1000000000, 1000000000 }, cpus_per_task = { 1, NO_VAL16 - 1 },
                       min_cpus = { 1, NO_VAL - 1 }, pn_min_cpus = { 1, NO_VAL16 - 1 },
                       min_mem_per_cpu = { 1, NO_VAL - 1 }, min_mem_per_node = { 1, NO_VAL - 1 } }
-- Characters allowed in values written to partition/features/qos (comment: any printable text).
local NAME_CHARS = "^[%w%-%._:|&,%[%]%(%)%*!]*$"

local socket_ok, socket = pcall(require, "socket")
local unix_ok, unix = pcall(require, "socket.unix")
local json_ok, cjson = pcall(require, "cjson.safe")

-- ---------------------------------------------------------------------------------------------- logging
-- Call slurm.<name>("%s", msg) if slurmctld provides it; never raises.
local function slurm_log(name, msg)
  local ok, fn = pcall(function() return slurm[name] end)
  if ok and type(fn) == "function" then pcall(fn, "%s", msg) end
end

local function log_info(msg)
  slurm_log("log_info", "hetsched shim: " .. msg)
end

local function log_user(msg)
  slurm_log("log_user", msg)
end

local function rc_success()
  local ok, rc = pcall(function() return slurm.SUCCESS end)
  return (ok and type(rc) == "number") and rc or 0
end

local function rc_error()
  local ok, rc = pcall(function() return slurm.ERROR end)
  return (ok and type(rc) == "number") and rc or -1
end

-- ------------------------------------------------------------------------------------------------ config
local function script_dir()
  local src = debug.getinfo(1, "S").source
  if type(src) == "string" and src:sub(1, 1) == "@" then
    return src:sub(2):match("^(.*)/[^/]*$") or "."
  end
  return "."
end

local CONFIG_PATH = HETSCHED_SHIM_CONFIG or (script_dir() .. "/hetsched-shim.json")
local config, config_read_at = nil, -math.huge

local function read_config()
  local cfg = { socket = DEFAULTS.socket, timeout_ms = DEFAULTS.timeout_ms, fail = DEFAULTS.fail }
  local f = io.open(CONFIG_PATH, "r")
  if not f then
    return cfg, "no " .. CONFIG_PATH .. ": using defaults"
  end
  local text = f:read("*a")
  f:close()
  local doc = json_ok and cjson.decode(text or "") or nil
  if type(doc) ~= "table" or doc.version ~= PROTOCOL then
    return cfg, CONFIG_PATH .. " is not a version-1 shim config: using defaults"
  end
  if type(doc.socket) == "string" and #doc.socket > 0 and #doc.socket < 108 then cfg.socket = doc.socket end
  if type(doc.timeout_ms) == "number" and doc.timeout_ms >= 1 and doc.timeout_ms <= 5000 then
    cfg.timeout_ms = doc.timeout_ms
  end
  if doc.fail == "open" or doc.fail == "closed" then cfg.fail = doc.fail end
  return cfg, nil
end

local function current_config()
  local now = os.time()
  if not config or now - config_read_at >= CONFIG_TTL then
    local ok, cfg, warning = pcall(read_config)
    config = ok and cfg or { socket = DEFAULTS.socket, timeout_ms = DEFAULTS.timeout_ms, fail = DEFAULTS.fail }
    config_read_at = now
    if not ok then log_info("reading the config failed: " .. tostring(cfg)) elseif warning then log_info(warning) end
  end
  return config
end

-- ----------------------------------------------------------------------------------------------- request
local function index(tbl, name)
  return tbl[name]
end

local function read_field(job_desc, name)
  local ok, value = pcall(index, job_desc, name)
  if ok then return value end
  return nil
end

local function job_fields(job_desc)
  local job = {}
  for _, name in ipairs(STRING_FIELDS) do
    local v = read_field(job_desc, name)
    if type(v) == "string" and #v > 0 and #v <= MAX_SEND_STRING then job[name] = v end
  end
  local gres = read_field(job_desc, "tres_per_node")
  if type(gres) == "string" and #gres > 0 and #gres <= MAX_SEND_STRING then job.gres = gres end
  for key, spec in pairs(NUMBER_FIELDS) do
    local v = read_field(job_desc, spec[1])
    if type(v) == "number" and v >= 0 and v <= spec[2] and v == math.floor(v) then job[key] = v end
  end
  return job
end

-- ------------------------------------------------------------------------------------------------ socket
-- The connection to the daemon is kept open between calls (slurmctld keeps this Lua state), which saves a
-- connect/accept per submission. Any failure closes it, so a late reply can never answer a later request.
local conn, conn_path = nil, nil

local function drop()
  if conn then pcall(function() conn:close() end) end
  conn, conn_path = nil, nil
end

-- One request line out, one reply line back, within timeout_ms in total. Returns line or nil, err.
-- A kept connection that the daemon closed meanwhile (restart) is replaced once within the same deadline.
local function exchange(cfg, line)
  if not (socket_ok and unix_ok) then return nil, "luasocket with socket.unix is not installed" end
  local deadline = socket.gettime() + cfg.timeout_ms / 1000
  local function remaining()
    return math.max(deadline - socket.gettime(), 0)
  end
  if conn and conn_path ~= cfg.socket then drop() end
  for _ = 1, 2 do
    local fresh = conn == nil
    if fresh then
      local c = unix()
      c:settimeout(remaining(), "t")
      local ok, err = c:connect(cfg.socket)
      if not ok then c:close(); return nil, "connect: " .. tostring(err) end
      conn, conn_path = c, cfg.socket
    end
    conn:settimeout(remaining(), "t")
    local sent, serr = conn:send(line)
    local reply, rerr
    if sent then
      conn:settimeout(remaining(), "t")
      reply, rerr = conn:receive("*l")
      if reply and #reply <= MAX_REPLY then return reply end
      rerr = rerr or "reply too long"
    end
    drop()
    local why = sent and ("receive: " .. tostring(rerr)) or ("send: " .. tostring(serr))
    if fresh or remaining() <= 0 or (sent and rerr ~= "closed") then return nil, why end
  end
  return nil, "daemon closed the connection twice"
end

-- ------------------------------------------------------------------------------------------------- reply
local function valid_value(key, value)
  if type(value) ~= SETTABLE[key] then return false end
  if SETTABLE[key] == "number" then
    local range = NUMBER_RANGE[key]
    return value == math.floor(value) and value >= range[1] and value <= range[2]
  end
  if #value > MAX_SET_STRING then return false end
  if key == "comment" then return not value:find("%c") end
  return #value > 0 and value:find(NAME_CHARS) ~= nil
end

-- A decoded reply table, checked in full; returns it or nil, why.
local function checked_reply(line)
  if not json_ok then return nil, "lua-cjson is not installed" end
  local decoded, reply = pcall(cjson.decode, line)
  if not decoded or type(reply) ~= "table" then return nil, "reply is not a JSON object" end
  if reply.v ~= PROTOCOL then return nil, "reply has protocol version " .. tostring(reply.v) end
  if reply.ok ~= true then
    return nil, "daemon error: " .. (type(reply.error) == "string" and reply.error:sub(1, 200) or "?")
  end
  if reply.action ~= "accept" and reply.action ~= "reject" then return nil, "reply has no valid action" end
  if reply.reason ~= nil and type(reply.reason) ~= "string" then return nil, "reply reason is not a string" end
  if reply.set ~= nil then
    if type(reply.set) ~= "table" then return nil, "reply 'set' is not an object" end
    for key, value in pairs(reply.set) do
      if type(key) ~= "string" or not SETTABLE[key] then return nil, "reply sets unknown field " .. tostring(key) end
      if not valid_value(key, value) then return nil, "reply value for " .. key .. " is not acceptable" end
    end
  end
  return reply
end

local function assign(tbl, key, value)
  tbl[key] = value
end

local function apply(job_desc, set)
  local applied = {}
  for key, value in pairs(set or {}) do
    local ok, err = pcall(assign, job_desc, key, value)
    if ok then applied[#applied + 1] = key .. "=" .. tostring(value) else log_info("could not set " .. key .. ": " .. tostring(err)) end
  end
  table.sort(applied)
  return applied
end

-- ------------------------------------------------------------------------------------------------ entry
-- The daemon could not answer usefully: accept unchanged (open) or refuse with a message (closed).
local function without_daemon(cfg, what, why)
  if cfg.fail == "closed" then
    log_info(what .. ": " .. why .. "; refusing (fail=closed)")
    log_user("hetsched: job admission is unavailable right now (" .. why .. "); please retry shortly")
    return rc_error()
  end
  log_info(what .. ": " .. why .. "; job accepted unchanged (fail=open)")
  return rc_success()
end

local function decide(job_desc, op, job_id)
  local cfg = current_config()
  if not json_ok then return without_daemon(cfg, op, "lua-cjson is not installed") end
  local request = { v = PROTOCOL, op = op, job = job_fields(job_desc) }
  if job_id then request.job_id = job_id end
  local line, err = cjson.encode(request)
  if not line then return without_daemon(cfg, op, "cannot encode the request: " .. tostring(err)) end
  local answer
  answer, err = exchange(cfg, line .. "\n")
  if not answer then return without_daemon(cfg, op, err) end
  local reply
  reply, err = checked_reply(answer)
  if not reply then
    drop()  -- a peer that answered nonsense is not asked again on this connection
    return without_daemon(cfg, op, err)
  end
  local reason = type(reply.reason) == "string" and reply.reason:sub(1, 1000) or ""
  if reply.action == "reject" then
    log_info(op .. " refused: " .. reason)
    log_user("hetsched: job refused: " .. reason)
    return rc_error()
  end
  if op == "submit" then
    local applied = apply(job_desc, reply.set)
    if #applied > 0 then log_user("hetsched: " .. table.concat(applied, " ") .. " (" .. reason .. ")") end
  end
  return rc_success()
end

-- Entry points called by slurmctld. Nothing below can raise: a failure inside is caught and fails open.
local function guarded(fn, ...)
  local ok, rc = pcall(fn, ...)
  if ok and type(rc) == "number" then return rc end
  pcall(drop)
  local cfg_ok, cfg = pcall(current_config)
  return without_daemon(cfg_ok and cfg or DEFAULTS, "internal", "shim error: " .. tostring(rc))
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  return guarded(decide, job_desc, "submit", nil)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return guarded(function()
    -- Only changes of where/what a job runs on need checking; everything else costs no round trip.
    local touched = read_field(job_desc, "partition") or read_field(job_desc, "features")
      or read_field(job_desc, "tres_per_node")
    if not touched then return rc_success() end
    local job_id = read_field(job_rec, "job_id")
    return decide(job_desc, "modify", type(job_id) == "number" and job_id or nil)
  end)
end

local loaded_ok = pcall(function() log_info("loaded (config " .. CONFIG_PATH .. ")") end)
return loaded_ok and rc_success() or 0
