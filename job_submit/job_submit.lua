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
  4. if the daemon is absent, hung, slow, answers garbage or cannot be trusted: accept the job (fail = "open",
     the default), routing a GPU/NPU request that names no partition by the static "fallback" table so
     Slurm does not refuse it, and log one line; or refuse it with a message (fail = "closed").

Trust (docs/trust.md): before each new connection the shim checks, with lua-posix's stat, that only root
or the daemon's uid could have created the socket: the socket file is owned by root, slurmctld's own uid
or the configured "daemon_uid", and every directory above it is owned by one of them and writable by no
one else (sticky directories excepted). luasocket cannot read SO_PEERCRED, but no other user can bind a
socket at a path in such directories, so the peer is the one who owns the file. Anything else is treated
as "no daemon".

No fork, no io.popen; every step runs under pcall, so no Lua error ever reaches slurmctld.
Works with the Lua 5.1 of Slurm 22.05 and the Lua of 24.11 (only 5.1 features are used).

Settings: hetsched-shim.json next to this file (slurmctld loads job_submit.lua from slurm.conf's directory):
  {"version": 1, "socket": "/run/hetsched/hetsched.sock", "timeout_ms": 50, "fail": "open", "site": "demo",
   "daemon_uid": 0, "fallback": {"gres": {"gpu": "gpu", "npu": "npu", "gpu:a100": "gpu"}}}
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
                        "licenses", "req_nodes", "tres_per_job", "container", "clusters" }
-- job_desc fields whose change on a modification re-runs admission (they feed class, tier or placement).
local MODIFY_FIELDS = { "comment", "qos", "wckey", "account", "partition", "features", "tres_per_node",
                        "tres_per_job", "licenses", "req_nodes", "name" }
-- job_rec fields sent with a modification, so the daemon sees the job as it will be (owner, claims).
local JOB_REC_FIELDS = { "partition", "features", "qos", "account", "comment", "wckey", "name" }
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
                   min_mem_per_cpu = "number", min_mem_per_node = "number", container = "string",
                   time_limit = "number", begin_time = "number", clusters = "string" }
-- Range of each number a reply may set (right-sizing only ever sets positive counts and MB).
-- site_factor: band x 4000 (+ level x 100 from the ranker); Slurm keeps it offset by 2^31 in a uint32.
local NUMBER_RANGE = { site_factor = { -1000000000, 1000000000 }, cpus_per_task = { 1, NO_VAL16 - 1 },
                       min_cpus = { 1, NO_VAL - 1 }, pn_min_cpus = { 1, NO_VAL16 - 1 },
                       min_mem_per_cpu = { 1, NO_VAL - 1 }, min_mem_per_node = { 1, NO_VAL - 1 },
                       time_limit = { 1, NO_VAL - 1 }, begin_time = { 1, 4102444800 } }
-- A batch script line "#HETSCHED intent <text>" (slurm_plugin/intent) is sent as job.intent.
local INTENT_MARK = "#HETSCHED intent "
local MAX_INTENT = 512
-- Characters allowed in values written to partition/features/qos/clusters (comment: any printable text).
local NAME_CHARS = "^[%w%-%._:|&,%[%]%(%)%*!]*$"

local socket_ok, socket = pcall(require, "socket")
local unix_ok, unix = pcall(require, "socket.unix")
local json_ok, cjson = pcall(require, "cjson.safe")
local stat_ok, pstat = pcall(require, "posix.sys.stat")
local unistd_ok, punistd = pcall(require, "posix.unistd")

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
  if type(doc.daemon_uid) == "number" and doc.daemon_uid >= 0 and doc.daemon_uid < NO_VAL then
    cfg.daemon_uid = doc.daemon_uid
  end
  local sens = doc.sensitive
  if type(sens) == "table" and type(sens.classes) == "table" and type(sens.partitions) == "table" then
    local ok_names = function(name) return type(name) == "string" and #name > 0 and #name <= 64
                                       and name:find("^[%w%-%._]+$") ~= nil end
    local classes, parts = {}, {}
    for name, is_sensitive in pairs(sens.classes) do
      if ok_names(name) and type(is_sensitive) == "boolean" then classes[name] = is_sensitive end
    end
    for _, name in ipairs(sens.partitions) do
      if ok_names(name) then parts[#parts + 1] = name end
    end
    local default = ok_names(sens.default_class) and sens.default_class or nil
    cfg.sensitive = { classes = classes, partitions = parts, default_class = default }
  end
  local fb = type(doc.fallback) == "table" and doc.fallback.gres
  if type(fb) == "table" then
    cfg.fallback = {}
    for key, part in pairs(fb) do
      if type(key) == "string" and type(part) == "string" and #part > 0 and #part <= 64
          and part:find("^[%w%-%._]+$") then
        cfg.fallback[key] = part
      end
    end
  end
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

-- The non-empty strings (at most MAX_SEND_STRING long) of `names` in `src`, copied into `into`.
local function copy_strings(src, names, into)
  for _, name in ipairs(names) do
    local v = read_field(src, name)
    if type(v) == "string" and #v > 0 and #v <= MAX_SEND_STRING then into[name] = v end
  end
  return into
end

-- The text of the script's "#HETSCHED intent ..." line (at the start of a line), or nil.
local function intent_line(script)
  local at = script:find(INTENT_MARK, 1, true)
  while at and at > 1 and script:sub(at - 1, at - 1) ~= "\n" do
    at = script:find(INTENT_MARK, at + 1, true)
  end
  if not at then return nil end
  return script:sub(at + #INTENT_MARK, at + #INTENT_MARK + MAX_INTENT):match("^([^\r\n]*)")
end

local function job_fields(job_desc)
  local job = copy_strings(job_desc, STRING_FIELDS, {})
  local gres = read_field(job_desc, "tres_per_node")
  if type(gres) == "string" and #gres > 0 and #gres <= MAX_SEND_STRING then job.gres = gres end
  -- "#HETSCHED ..." lines of the batch script (one plain find when it has none): "image=NAME[:TAG]", the
  -- container image (deploy/form.py); "intent <text>" (slurm_plugin/intent)
  local script = read_field(job_desc, "script")
  if type(script) == "string" and script:find("#HETSCHED ", 1, true) then
    if script:find("#HETSCHED image=", 1, true) then
      job.image = script:match("\n#HETSCHED image=([%w%._:%-]+)")
    end
    job.intent = intent_line(script)
  end
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
-- The daemon on this connection refused the "unanswered" field (one older than it): not sent again until the
-- connection is replaced (a restarted daemon may be a newer one).
local legacy_peer = false

local function drop()
  if conn then pcall(function() conn:close() end) end
  conn, conn_path, legacy_peer = nil, nil, false
end

-- ------------------------------------------------------------------------------------------ peer trust
local S_IFDIR, S_IFSOCK = 16384, 49152  -- 0040000, 0140000 (S_IFMT = 0170000: the bits above 4096)

local function bit(mode, value)  -- Lua 5.1 has no bit operators
  return math.floor(mode / value) % 2 == 1
end

local function trusted_uid(cfg, uid)
  if uid == 0 or uid == cfg.daemon_uid then return true end
  local ok, me = pcall(punistd.geteuid)
  return ok and uid == me
end

-- nil when only root, slurmctld's uid or daemon_uid can have bound cfg.socket; else why not.
local function untrusted_socket(cfg)
  if not (stat_ok and unistd_ok) then
    return "lua-posix is not installed: cannot check who serves " .. cfg.socket
  end
  local path = cfg.socket
  if path:sub(1, 1) ~= "/" then return "socket path " .. path .. " is not absolute" end
  local dir = ""
  for part in path:gmatch("([^/]+)/") do
    dir = dir .. "/" .. part
    local st = pstat.stat(dir)
    if not st or st.st_mode - st.st_mode % 4096 ~= S_IFDIR then return dir .. " is not a directory" end
    if not trusted_uid(cfg, st.st_uid) then return dir .. " is owned by uid " .. st.st_uid end
    local sticky = bit(st.st_mode, 512)
    if (bit(st.st_mode, 16) or bit(st.st_mode, 2)) and not sticky then
      return dir .. " is writable by others"
    end
  end
  local st = pstat.lstat(path)
  if not st then return nil end  -- nothing there: connect says so (no one else can create it meanwhile)
  if st.st_mode - st.st_mode % 4096 ~= S_IFSOCK then return path .. " is not a socket" end
  if not trusted_uid(cfg, st.st_uid) then return path .. " is owned by uid " .. st.st_uid .. ", not the daemon's" end
  return nil
end

-- One request line out, one reply line back, within timeout_ms in total. Returns line or nil, err.
-- A kept connection that the daemon closed meanwhile (restart) is replaced once within the same deadline.
-- Why an exchange started at ``started`` failed; a timeout says how long the shim waited (slurmctld's log then
-- shows what fail-open cost that job).
local function failed(what, err, started)
  local why = what .. ": " .. tostring(err)
  if err == "timeout" then why = why .. string.format(" after %.1f ms", (socket.gettime() - started) * 1000) end
  return why
end

local function exchange(cfg, line)
  if not (socket_ok and unix_ok) then return nil, "luasocket with socket.unix is not installed" end
  local started = socket.gettime()
  local deadline = started + cfg.timeout_ms / 1000
  local function remaining()
    return math.max(deadline - socket.gettime(), 0)
  end
  if conn and conn_path ~= cfg.socket then drop() end
  for _ = 1, 2 do
    local fresh = conn == nil
    if fresh then
      local distrust = untrusted_socket(cfg)
      if distrust then return nil, "untrusted socket: " .. distrust end
      local c = unix()
      c:settimeout(remaining(), "t")
      local ok, err = c:connect(cfg.socket)
      if not ok then c:close(); return nil, failed("connect", err, started) end
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
    local why = sent and failed("receive", rerr, started) or failed("send", serr, started)
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
  if key == "container" then return value:find("^/[%w%._/@+%-]*$") ~= nil end
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
-- GRES names (and name:type) a job asks for per node (--gres, --gpus-per-node) or per job (--gpus):
-- "gres:gpu:1", "gres:gpu:a100:2", "gres/gpu=2", "gres/gpu:a100=1", comma-separated (22.05 and 24.11 forms).
local function gres_wanted(job_desc)
  local wanted = {}
  for _, field in ipairs({ "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task" }) do
    local v = read_field(job_desc, field)
    if type(v) == "string" and #v <= MAX_SEND_STRING then
      for item in v:gmatch("[^,]+") do
        local spec = item:match("^gres[:/](.*)$")
        if spec then
          spec = spec:gsub("=.*$", "")
          local name, rest = spec:match("^([%w_%-%.]+):?(.*)$")
          local gtype = rest and rest:match("^([%a][%w_%-%.]*)")
          if name then wanted[#wanted + 1] = gtype and (name .. ":" .. gtype) or name end
        end
      end
    end
  end
  return wanted
end

-- The partition the static table gives a GRES request that names no partition (nil if none, or mixed).
local function fallback_partition(cfg, job_desc)
  if not cfg.fallback then return nil end
  local named = read_field(job_desc, "partition")
  if type(named) == "string" and #named > 0 then return nil end
  local chosen
  for _, key in ipairs(gres_wanted(job_desc)) do
    local part = cfg.fallback[key] or cfg.fallback[key:match("^[^:]+")]
    if not part or (chosen and part ~= chosen) then return nil end
    chosen = part
  end
  return chosen
end

-- ------------------------------------------------------------------------------- sensitive, without the daemon
-- The workload class a job claims, by admission's rule (slurm_plugin/admission/classify.py, _find_class): a
-- "class=" word of the comment (an unknown name: the default class), else the wckey ("NAME" or "class=NAME"),
-- else the account, else (no account given) the owner's default account, else the policy's default class.
local function claimed_class(sens, job)
  local classes = sens.classes
  local tagged
  for word in tostring(job.comment or ""):gmatch("[^%s,;]+") do
    local key, value = word:match("^([^=]*)=(.+)$")
    if key and not tagged then
      key = key:lower():gsub("^hetsched:", "")
      if key == "class" then tagged = value end
    end
  end
  if tagged then return classes[tagged] ~= nil and tagged or sens.default_class end
  local wckey = type(job.wckey) == "string" and job.wckey:gsub("^class=", "") or nil
  if wckey and classes[wckey] ~= nil then return wckey end
  if type(job.account) == "string" and job.account ~= "" then
    if classes[job.account] ~= nil then return job.account end
  elseif type(job.default_account) == "string" and classes[job.default_account] ~= nil then
    return job.default_account
  end
  return sens.default_class
end

-- Of a comma-separated partition list: whether every one is sensitive, and the first sensitive one (or nil).
local function enclave_parts(sens, partition)
  local enclave = {}
  for _, name in ipairs(sens.partitions) do enclave[name] = true end
  local any, all, first = false, true, nil
  for name in tostring(partition or ""):gmatch("[^,]+") do
    any = true
    if enclave[name] then first = first or name else all = false end
  end
  return any and all, first
end

-- Isolation does not fail open (docs/trust.md): without the daemon, a job of a class whose form is
-- "sensitive" goes to the site's sensitive partitions (the static routing admission would give it; the
-- Prolog/Epilog audit and wipe by partition), and a modification that would leave it outside them is
-- refused; a job of another class that asks for a sensitive partition is refused, as admission would.
-- Returns nil (not concerned), or the rc to return.
local function sensitive_without_daemon(cfg, what, why, job_desc, base)
  local sens = cfg.sensitive
  if not sens or not job_desc then return nil end
  local job = {}
  for _, name in ipairs({ "comment", "wckey", "account", "partition" }) do
    local value = read_field(job_desc, name)
    if value == nil and base then value = base[name] end
    job[name] = value
  end
  if job.account == nil then job.default_account = read_field(job_desc, "default_account") end
  local cname = claimed_class(sens, job)
  if cname and sens.classes[cname] then
    if #sens.partitions == 0 then
      log_info(what .. ": " .. why .. "; class " .. cname .. " is sensitive and the site has no sensitive partition: refusing")
      log_user("hetsched: class " .. cname .. " is sensitive but admission is unavailable; please retry shortly")
      return rc_error()
    end
    local enclave = table.concat(sens.partitions, ",")
    if what == "submit" then
      if pcall(assign, job_desc, "partition", enclave) then
        log_info(what .. ": " .. why .. "; sensitive class " .. cname .. ": partition=" .. enclave .. " (static)")
        log_user("hetsched: partition=" .. enclave .. " (class " .. cname .. " is sensitive; admission unavailable)")
        return rc_success()
      end
    elseif (enclave_parts(sens, job.partition)) then
      return nil
    end
    log_info(what .. ": " .. why .. "; sensitive class " .. cname .. " cannot be routed: refusing")
    log_user("hetsched: class " .. cname .. " is sensitive and admission is unavailable to route it; please retry shortly")
    return rc_error()
  end
  local _, asked = enclave_parts(sens, job.partition)
  if asked then
    log_info(what .. ": " .. why .. "; partition " .. asked .. " holds only sensitive work: refusing")
    log_user("hetsched: partition " .. asked .. " holds only sensitive work (class " .. tostring(cname) .. ")")
    return rc_error()
  end
  return nil
end

-- Calls answered without the daemon since the last report; sent as "unanswered" with the next request and
-- taken off once a reply came back, so the daemon's metrics show a daemon that was dead or slow.
local unanswered = 0

-- The daemon could not answer usefully: accept (open; a GPU/NPU request that names no partition goes to
-- the partition of the static fallback table, which Slurm would otherwise refuse) or refuse (closed).
local function without_daemon(cfg, what, why, job_desc, base)
  unanswered = unanswered + 1
  if cfg.fail ~= "closed" then
    local ok, rc = pcall(sensitive_without_daemon, cfg, what, why, job_desc, base)
    if not ok then
      log_info(what .. ": " .. why .. "; the sensitive check failed (" .. tostring(rc) .. "): refusing")
      return rc_error()
    end
    if rc ~= nil then return rc end
  end
  if cfg.fail == "closed" then
    log_info(what .. ": " .. why .. "; refusing (fail=closed)")
    log_user("hetsched: job admission is unavailable right now (" .. why .. "); please retry shortly")
    return rc_error()
  end
  local part = what == "submit" and job_desc and fallback_partition(cfg, job_desc)
  if part and pcall(assign, job_desc, "partition", part) then
    log_info(what .. ": " .. why .. "; job accepted, partition=" .. part .. " from the fallback table (fail=open)")
    log_user("hetsched: partition=" .. part .. " (admission unavailable: static GRES table)")
    return rc_success()
  end
  log_info(what .. ": " .. why .. "; job accepted unchanged (fail=open)")
  return rc_success()
end

-- base: fields of the job as it is (modifications), under the ones job_desc changes.
local function decide(job_desc, op, job_id, base)
  local cfg = current_config()
  if not json_ok then return without_daemon(cfg, op, "lua-cjson is not installed", job_desc, base) end
  local job = job_fields(job_desc)
  for key, value in pairs(base or {}) do
    if job[key] == nil then job[key] = value end
  end
  local request = { v = PROTOCOL, op = op, job = job }
  if job_id then request.job_id = job_id end
  local reported = legacy_peer and 0 or unanswered
  if reported > 0 then request.unanswered = reported end
  local line, err = cjson.encode(request)
  if not line then return without_daemon(cfg, op, "cannot encode the request: " .. tostring(err), job_desc, base) end
  local answer
  answer, err = exchange(cfg, line .. "\n")
  if answer and reported > 0 and answer:find("unknown keys", 1, true) and answer:find("unanswered", 1, true) then
    -- a daemon older than the field refuses it: ask once more without it (the count waits for a newer one)
    legacy_peer, reported, request.unanswered = true, 0, nil
    answer, err = exchange(cfg, cjson.encode(request) .. "\n")
  end
  if not answer then return without_daemon(cfg, op, err, job_desc, base) end
  local reply
  reply, err = checked_reply(answer)
  if not reply then
    drop()  -- a peer that answered nonsense is not asked again on this connection
    return without_daemon(cfg, op, err, job_desc, base)
  end
  unanswered = math.max(unanswered - reported, 0)
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

-- What a modification's request starts from: the job record's claims and owner (job_desc holds the changes).
local function job_rec_fields(job_rec)
  local base = copy_strings(job_rec, JOB_REC_FIELDS, {})
  local uid = read_field(job_rec, "user_id")
  if type(uid) == "number" and uid >= 0 and uid < NO_VAL and uid == math.floor(uid) then base.user_id = uid end
  return base
end

-- Entry points called by slurmctld. Nothing below can raise: a failure inside is caught and handled as "no
-- daemon" (base: the job record's fields for a modification, so the sensitive check still sees the job).
local function guarded(fn, op, job_desc, base)
  local ok, rc = pcall(fn, job_desc, base)
  if ok and type(rc) == "number" then return rc end
  pcall(drop)
  local cfg_ok, cfg = pcall(current_config)
  return without_daemon(cfg_ok and cfg or DEFAULTS, op, "shim error: " .. tostring(rc), job_desc, base)
end

local function submit(job_desc)
  return decide(job_desc, "submit", nil)
end

local function modify(job_desc, base, job_rec)
  -- Changes of what feeds class, tier or placement re-run admission; anything else costs no round trip.
  local touched = false
  for _, name in ipairs(MODIFY_FIELDS) do
    if read_field(job_desc, name) ~= nil then touched = true; break end
  end
  if not touched then return rc_success() end
  local job_id = read_field(job_rec, "job_id")
  return decide(job_desc, "modify", type(job_id) == "number" and job_id or nil, base)
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  return guarded(submit, "submit", job_desc, nil)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  local base_ok, base = pcall(job_rec_fields, job_rec)
  return guarded(function(desc, fields) return modify(desc, fields, job_rec) end, "modify", job_desc,
                 base_ok and base or nil)
end

local loaded_ok = pcall(function() log_info("loaded (config " .. CONFIG_PATH .. ")") end)
return loaded_ok and rc_success() or 0
