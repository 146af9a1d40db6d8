-- Argo CD health for tether Agents (delegation.tether.dev/v1alpha1).
-- Runs without the Lua string library, as Argo CD runs custom health checks.
local hs = { status = "Progressing", message = "Waiting for the agent card to be read" }

local status = obj.status
if status == nil or status.conditions == nil then
  return hs
end

local generation = obj.metadata.generation
local observed = status.observedGeneration
if generation ~= nil and observed ~= nil and observed < generation then
  hs.message = "Waiting for the operator to observe generation " .. generation
  return hs
end

for _, condition in ipairs(status.conditions) do
  if condition.type == "Ready" then
    hs.message = condition.reason or ""
    if condition.message ~= nil and condition.message ~= "" then
      hs.message = condition.message
    end
    if condition.status == "True" then
      hs.status = "Healthy"
    elseif condition.status == "False" then
      hs.status = "Degraded"
    end
    return hs
  end
end
return hs
