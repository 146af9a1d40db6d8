-- Argo CD health for tether Delegations (delegation.tether.dev/v1alpha1).
-- Runs without the Lua string library, as Argo CD runs custom health checks.
local hs = { status = "Progressing", message = "Waiting for the operator" }

local function describe(phase, outcome, attempt, maxAttempts)
  local msg = phase
  if outcome ~= nil then
    if outcome.reason ~= nil and outcome.reason ~= "" and outcome.reason ~= phase then
      msg = msg .. " (" .. outcome.reason .. ")"
    elseif outcome.failureClass ~= nil and outcome.failureClass ~= "" then
      msg = msg .. " (" .. outcome.failureClass .. ")"
    end
  end
  -- Under a retry policy: which attempt this is, of how many.
  if attempt ~= nil and maxAttempts ~= nil and maxAttempts > 1 then
    msg = msg .. ", attempt " .. attempt .. "/" .. maxAttempts
  end
  if outcome == nil then
    return msg
  end
  if outcome.message ~= nil and outcome.message ~= "" then
    msg = msg .. ": " .. outcome.message
  end
  return msg
end

local status = obj.status
if status == nil or status.phase == nil or status.phase == "" then
  return hs
end

-- A spec change the operator has not seen yet: whatever the phase says is stale.
local generation = obj.metadata.generation
local observed = status.observedGeneration
if generation ~= nil and observed ~= nil and observed < generation then
  hs.message = "Waiting for the operator to observe generation " .. generation
  return hs
end

local phase = status.phase
hs.message = describe(phase, status.outcome, status.attempt, status.maxAttempts)
if phase == "Succeeded" then
  hs.status = "Healthy"
elseif phase == "Failed" or phase == "Canceled" then
  hs.status = "Degraded"
elseif phase == "InputRequired" or phase == "AuthRequired" then
  -- Handed back to a person: a reply (or a credential) resumes it.
  hs.status = "Suspended"
elseif phase == "Detached" then
  -- Not Suspended: nothing will resume it. The object did what was asked of it.
  hs.status = "Healthy"
  hs.message = "detached: task no longer followed"
end
return hs
