# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# shellcheck disable=SC2154 # NODE, T, KUBELET_DIR, RAILS, BENCH... are e2e.sh's
# DRA mode's scenario on the local cluster, sourced by tests/k8s/e2e.sh
# (RAILGATE_K8S_MODE=dra) once railgate's agent runs as the DRA driver. The
# pod spec is the device-plugin scenario's, unchanged: railgate.io/tenant-a: 2.
# Each step of issue 19 is asserted: the node's ResourceSlices with their
# attributes; the pod allocated by the scheduler through the tenant's
# DeviceClass (extendedResourceName), prepared, its environment naming exactly
# its rails, its netns holding them with the VRF routing, networkData in its
# claim; a team-b claim of tenant-a's class denied by admission (and, with the
# policy unbound, refused by NodePrepare); a pod naming its claim in
# resources.claims: its rail's link down shows in its allocatedResourcesStatus
# (kubelet's DRA health stream, KEP-4680) and as the slice device's taint, up
# again Healthy, the pod never restarted, while the extended resource's pod
# gets no such status at kubelet 1.37.2; kubelet restarting: the slices back,
# the running pod untouched; the agent's own token writing its node's claims
# and refused on another node's (by the API server's driver check, and with
# every status right granted, by railgate-node-claims); the pods deleted:
# NICs home, claims unprepared, the node's railgate state empty.

pyjson() { # pyjson CODE: CODE with the JSON of stdin as d; prints what CODE prints
  python3 -c "import json, sys; d = json.load(sys.stdin); $1"
}
slices() { kctl get resourceslices --field-selector "spec.nodeName=$NODE,spec.driver=railgate.io" -o json; }
# one line per device: name tenant rail nic numaNode, sorted
slice_devices() {
  slices | pyjson '
for s in d["items"]:
    for dev in s["spec"].get("devices", []):
        a = dev.get("attributes", {})
        v = lambda k, t: a.get(k, {}).get(t, "-")
        print(dev["name"], v("railgate.io/tenant", "string"), v("railgate.io/rail", "int"),
              v("railgate.io/nic", "string"), v("resource.kubernetes.io/numaNode", "int"))' | sort
}
want_devices() { # sorted, as slice_devices
  local k
  {
    for k in "${RAILS[@]}"; do
      echo "rail$k tenant-$([ "$k" -lt 2 ] && echo a || echo b) $k rail$k $((k / 2))"
    done
    for k in "${BENCH[@]}"; do echo "rail$k tenant-bench $k rail$k 0"; done # RAILGATE_K8S_BENCH_RAILS
  } | sort
}
slice_uids() { slices | pyjson 'print(" ".join(sorted(s["metadata"]["uid"] for s in d["items"])))'; }
slices_whole() { [ "$(slice_devices)" = "$(want_devices)" ]; }
metric_at_least() { local v; v=$(metric "$1") && [ -n "$v" ] && [ "${v%.*}" -ge "$2" ]; }
node_ls() { on_node_fs ls -A "$1" 2>/dev/null || true; }

section "DRA mode: the agent publishes the node's ResourceSlices; no device plugin registers"
driver_started() {
  kctl -n railgate-system logs daemonset/railgate -c device-plugin 2>/dev/null |
    grep -q "DRA driver railgate.io for node $NODE"
}
check "the DaemonSet's agent is the DRA driver (its log says so)" wait_for 60 "the driver's start" driver_started
check "slices of driver railgate.io for $NODE: one device per unit with tenant, rail, nic, numaNode" \
  wait_for 60 "the node's slices" slices_whole
slices | pyjson '
for s in d["items"]:
    print("     slice %s: pool %s generation %s, %d devices" % (s["metadata"]["name"], s["spec"]["pool"]["name"],
          s["spec"]["pool"]["generation"], len(s["spec"].get("devices", []))))'
check "their pool is the node's: $NODE" equals \
  "$(slices | pyjson 'print(" ".join(sorted({s["spec"]["pool"]["name"] for s in d["items"]})))')" "$NODE"
check "no device plugin serves railgate.io/tenant-a on $NODE (capacity has none)" equals "$(capacity tenant-a)" ""
check "the DRA sockets are kubelet's rolling-update names" \
  contains "$(ls "$KUBELET_DIR/plugins_registry" "$KUBELET_DIR/plugins/railgate.io" 2>&1)" "-reg.sock"
check "the node agent's socket is on the node for the CNI, root's and 0600" \
  equals "$(on_node_fs stat -c '%F %a %U' /var/lib/railgate/agent.sock 2>&1)" "socket 600 root"
check "metrics: DRA mode's series are there from the start" wait_for 30 "the agent's metrics" \
  metric_at_least 'railgate_dra_claims_total{operation="prepare",result="ok"}' 0
wait_service_accounts

section "admission: team-b may not use tenant-a's resource or DeviceClass"
intruder_on "$NODE"
wait_for 60 "the policy to be enforced" denied_dry || true
check "a team-b pod asking for railgate.io/tenant-a: 2 is denied: $(head -c 200 <<<"$out")" \
  contains "$out" "$POLICY_DENIAL"
claim_yaml() { # claim_yaml KIND NAMESPACE NAME CLASS: a claim of 2 devices of CLASS (dra/claim.yaml)
  local file=claim.yaml
  [ "$1" = ResourceClaim ] || file=claim-template.yaml
  render "$K8S_DIR/dra/$file" NAMESPACE="$2" NAME="$3" CLASS="$4"
}
CLAIM_DENIAL="use a railgate.io DeviceClass that namespace team-b may not use; it may use only tenant-b.railgate.io"
claim_denied_dry() { # claim_denied_dry KIND NAMESPACE CLASS: server dry run denied by the policy
  ! out=$(claim_yaml "$1" "$2" stolen "$3" | kctl apply --dry-run=server -f - 2>&1) &&
    contains "$out" "$CLAIM_DENIAL"
}
claim_admitted_dry() { claim_yaml "$1" "$2" mine "$3" | kctl apply --dry-run=server -f - >/dev/null 2>&1; }
for kind in ResourceClaim ResourceClaimTemplate; do
  claim_denied_dry "$kind" team-b tenant-a.railgate.io && denied=true || denied=false
  check "a team-b $kind of class tenant-a.railgate.io is denied: $(head -c 200 <<<"$out")" "$denied"
done
check "a team-a ResourceClaim of class tenant-a.railgate.io is admitted" \
  claim_admitted_dry ResourceClaim team-a tenant-a.railgate.io

section "without the claims policy's binding a team-b claim of tenant-a's class reaches the node: NodePrepare refuses it"
kctl delete validatingadmissionpolicybinding railgate-tenant-claims >/dev/null
wait_for 60 "the binding's removal to take effect" \
  claim_admitted_dry ResourceClaim team-b tenant-a.railgate.io || true
stolen_created() { claim_yaml ResourceClaim team-b stolen tenant-a.railgate.io | kctl apply -f - >/dev/null; }
check "team-b/stolen (a claim of tenant-a.railgate.io) is created" stolen_created
render "$K8S_DIR/dra/pod-claim.yaml" NAMESPACE=team-b NAME=thief NODE="$NODE" CLAIM=stolen | kctl apply -f - >/dev/null
prepare_refused() { pod_events team-b thief | grep -q 'is not one of that tenant'; }
wait_for 120 "NodePrepare to refuse team-b/thief's claim" prepare_refused || true
events=$(pod_events team-b thief)
check "team-b/thief was scheduled to $NODE with its claim allocated" \
  equals "$(kctl get pod -n team-b thief -o jsonpath='{.spec.nodeName}')" "$NODE"
check "its events carry the agent's refusal: $(grep -m1 'tenant' <<<"$events" | head -c 400)" \
  contains "$events" "namespace team-b is not one of that tenant's; nothing was prepared"
check "the refusal is FailedPrepareDynamicResources" contains "$events" "FailedPrepareDynamicResources"
check "team-b/thief does not run" equals "$(kctl get pod -n team-b thief -o jsonpath='{.status.phase}')" Pending
check "nothing of it is prepared on the node (no claim record)" equals "$(node_ls /var/lib/railgate/claims)" ""
for k in 0 1; do
  check "rail$k stayed on the node with its address" \
    contains "$(on_node "$NODE" ip -o -4 addr show dev "rail$k")" "inet $(host_address 1 "$k")"
done
kctl delete pod -n team-b thief --wait=true --timeout=120s >/dev/null
kctl delete resourceclaim -n team-b stolen --wait=true --timeout=60s >/dev/null
kctl apply -f "$ROOT/deploy/admission.yaml" >/dev/null
check "with the binding back the policy denies team-b/stolen again" \
  wait_for 60 "the policy again" claim_denied_dry ResourceClaim team-b tenant-a.railgate.io

section "a team-a pod asking for railgate.io/tenant-a: 2 (the device-plugin scenario's spec): allocated through DRA"
pod_yaml team-a a1 "$NODE" railgate.io/tenant-a 2 | kctl apply -f - >/dev/null
check "team-a/a1 Ready" kctl wait --for=condition=Ready -n team-a pod/a1 --timeout=180s
claim_of() { kctl get pod -n "$1" "$2" -o jsonpath='{.status.extendedResourceClaimStatus.resourceClaimName}'; }
a1_claim=$(claim_of team-a a1)
check "the scheduler made its claim for the extended resource: ${a1_claim:-none}" test -n "$a1_claim"
claim_json() { kctl get resourceclaim -n "$1" "$2" -o json; }
check "the claim is marked as the extended resource's" equals \
  "$(claim_json team-a "$a1_claim" | pyjson 'print(d["metadata"].get("annotations", {}).get("resource.kubernetes.io/extended-resource-claim", ""))')" true
check "its allocation: rail0 and rail1 of railgate.io, pool $NODE" equals \
  "$(claim_json team-a "$a1_claim" | pyjson '
r = d["status"]["allocation"]["devices"]["results"]
print(" ".join(sorted("%s/%s/%s" % (x["driver"], x["pool"], x["device"]) for x in r)))')" \
  "railgate.io/$NODE/rail0 railgate.io/$NODE/rail1"
a1_uid=$(claim_json team-a "$a1_claim" | pyjson 'print(d["metadata"]["uid"])')
check "prepared on the node: its record in /var/lib/railgate/claims" \
  contains "$(node_ls /var/lib/railgate/claims)" "$a1_uid.json"
check "prepared on the node: its CDI spec in /var/run/cdi" \
  contains "$(node_ls /var/run/cdi)" "railgate.io-unit_$a1_uid.json"
check_pod team-a a1 tenant-a "$NODE" 100 0 1
network_data() { # network_data NAMESPACE CLAIM: "device interface ips mac" per railgate.io entry
  claim_json "$1" "$2" | pyjson '
for e in d.get("status", {}).get("devices", []):
    if e["driver"] == "railgate.io":
        n = e.get("networkData", {})
        print(e["device"], n.get("interfaceName", "-"), ",".join(n.get("ips", [])), n.get("hardwareAddress", "-"))' | sort
}
want_network_data() { # want_network_data RAIL...
  local k
  for k in "$@"; do echo "rail$k rail$k 10.$(octet "$k").$k.11/24"; done
}
nd_written() { [ "$(network_data "$1" "$2" | cut -d' ' -f1-3)" = "$(want_network_data "${@:3}")" ]; }
check "networkData in the claim: each rail's interface name and address" \
  wait_for 60 "networkData" nd_written team-a "$a1_claim" 0 1
for k in 0 1; do
  mac=$(in_pod team-a a1 ip -o link show dev "rail$k" | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
  check "networkData: rail$k's MAC is the pod's ($mac)" \
    contains "$(network_data team-a "$a1_claim")" "rail$k rail$k 10.$(octet "$k").$k.11/24 $mac"
done
check "metrics: the prepare counted (railgate_dra_claims_total prepare ok)" \
  metric_at_least 'railgate_dra_claims_total{operation="prepare",result="ok"}' 1
agent_log() { kctl -n railgate-system logs daemonset/railgate -c device-plugin 2>/dev/null; }
claim_logged() { # with the time its prepare took
  agent_log | grep -F "claim team-a/$a1_claim (" | grep -qE 'prepared: 2 units in [0-9]+\.[0-9]{3} ms'
}
check "the agent logged a1's claim prepared: 2 units, in how many ms" claim_logged
check "the agent logged a1's CNI ADD: its sandbox id, 2 rails and the phases" \
  wait_for 30 "the report" cni_reported team-a a1 2
a1_before=$(pod_fingerprint team-a a1)

section "a pod with an explicit claim: a rail's link down shows in its allocatedResourcesStatus (KEP-4680)"
# kubelet watches the driver's health stream (NodeWatchResources on the DRA
# socket) and shows each claimed device's health in the pod's status, for the
# claims a container names in resources.claims; at 1.37.2 an extended
# resource's pod (a1) gets none. team-b/h1 names its claim hc (rail2, rail3).
health_watched() { grep -q 'Successfully started WatchResources health stream' "$T/log/kubelet.log"; }
check "kubelet watches the driver's health stream (its log)" wait_for 60 "the health stream" health_watched
check "the agent served it: v1.DRAResourceHealth, the newest kubelet 1.37 knows" \
  contains "$(agent_log)" "kubelet watches the units' health (v1.DRAResourceHealth)"
claim_yaml ResourceClaim team-b hc tenant-b.railgate.io | kctl apply -f - >/dev/null
render "$K8S_DIR/dra/pod-claim.yaml" NAMESPACE=team-b NAME=h1 NODE="$NODE" CLAIM=hc | kctl apply -f - >/dev/null
check "team-b/h1 Ready" kctl wait --for=condition=Ready -n team-b pod/h1 --timeout=180s
hc_uid=$(claim_json team-b hc | pyjson 'print(d["metadata"]["uid"])')
claim_health() { # claim_health NAMESPACE POD: "name unit health message" per device, sorted, "|" between
  kctl get pod -n "$1" "$2" -o json | HC_UID=$hc_uid pyjson '
import os
p = "railgate.io/unit=%s-" % os.environ["HC_UID"]
out = []
for c in d["status"].get("containerStatuses", []):
    for a in c.get("allocatedResourcesStatus") or []:
        for r in a.get("resources") or []:
            i = r["resourceID"]
            out.append(" ".join([a["name"], i[len(p):] if i.startswith(p) else i,
                                 r.get("health", "-"), r.get("message") or "-"]))
print("|".join(sorted(out)))'
}
claim_health_is() { # claim_health_is WANT: h1's devices and health (no messages) are WANT
  [ "$(claim_health team-b h1 | sed -E 's/ (Healthy|Unhealthy|Unknown) [^|]*/ \1/g')" = "$1" ]
}
status_excerpt() { # the pod's allocatedResourcesStatus as kubectl prints it
  kctl get pod -n team-b h1 -o jsonpath='{range .status.containerStatuses[*].allocatedResourcesStatus[*]}{.name}{range .resources[*]}{"\n  "}{.resourceID}: {.health} {.message}{end}{"\n"}{end}'
}
slice_taints() { # slice_taints DEVICE: its taints' keys and effects
  slices | DEV=$1 pyjson '
import os
print(" ".join("%s:%s" % (t["key"], t["effect"]) for s in d["items"] for dev in s["spec"].get("devices", [])
               if dev["name"] == os.environ["DEV"] for t in dev.get("taints", [])))'
}
taints_are() { [ "$(slice_taints "$1")" = "$2" ]; } # taints_are DEVICE WANT
check "h1's claim: rail2 and rail3 Healthy, each under claim:rails" \
  wait_for 60 "h1's allocatedResourcesStatus" claim_health_is "claim:rails rail2 Healthy|claim:rails rail3 Healthy"
check "no message while Healthy" equals "$(claim_health team-b h1)" "claim:rails rail2 Healthy -|claim:rails rail3 Healthy -"
check "each resourceID is the unit's CDI device (railgate.io/unit=<claim uid>-<unit>)" equals \
  "$(kctl get pod -n team-b h1 -o jsonpath='{.status.containerStatuses[0].allocatedResourcesStatus[0].resources[*].resourceID}' | tr ' ' '\n' | sort | tr '\n' ' ')" \
  "railgate.io/unit=$hc_uid-rail2 railgate.io/unit=$hc_uid-rail3 "
kctl get pod -n team-b h1 -o yaml >"$T/log/ars-dra-healthy.yaml"
status_excerpt | sed 's/^/     /'
a1_ars=$(kctl get pod -n team-a a1 -o jsonpath='{.status.containerStatuses[*].allocatedResourcesStatus}')
check "a1 (the extended resource, no claim in its container): kubelet 1.37.2 reports no DRA health for it" \
  equals "$a1_ars" ""
h1_before=$(pod_fingerprint team-b h1)
ip -n "$FABRIC" link set fab2 down
check "rail2 in h1 has no carrier" contains "$(in_pod team-b h1 ip -o link show dev rail2)" NO-CARRIER
check "h1: rail2 Unhealthy, rail3 Healthy" \
  wait_for 30 "rail2 Unhealthy in h1's status" claim_health_is "claim:rails rail2 Unhealthy|claim:rails rail3 Healthy"
check "rail2's message says why: $(claim_health team-b h1 | cut -d'|' -f1)" \
  contains "$(claim_health team-b h1 | cut -d'|' -f1)" "carrier"
check "the slice's device rail2 carries the unhealthy taint" \
  wait_for 30 "rail2's taint" taints_are rail2 railgate.io/unhealthy:NoSchedule
check "rail3 carries none" equals "$(slice_taints rail3)" ""
kctl get pod -n team-b h1 -o yaml >"$T/log/ars-dra-unhealthy.yaml"
status_excerpt | sed 's/^/     /'
check "h1 not restarted: same uid, container, 0 restarts, ready" equals "$(pod_fingerprint team-b h1)" "$h1_before"
ip -n "$FABRIC" link set fab2 up
check "h1: rail2 and rail3 Healthy again" \
  wait_for 30 "rail2 Healthy again" claim_health_is "claim:rails rail2 Healthy|claim:rails rail3 Healthy"
check "rail2's taint is gone" wait_for 30 "the taint to go" taints_are rail2 ""
check "h1 still not restarted" equals "$(pod_fingerprint team-b h1)" "$h1_before"
kctl delete pod -n team-b h1 --wait=true --timeout=120s >/dev/null
kctl delete resourceclaim -n team-b hc --wait=true --timeout=60s >/dev/null
hc_unprepared() { ! contains "$(node_ls /var/lib/railgate/claims)" "$hc_uid"; }
check "hc unprepared" wait_for 60 "hc's unprepare" hc_unprepared
rails_23_free() { ! node_ls /var/lib/railgate/units | grep -qE '^rail[23]'; }
check "rail2 and rail3 free again (no marker in /var/lib/railgate/units)" wait_for 60 "the DEL" rails_23_free

section "kubelet restarts: it deletes the node's slices, the agent publishes them again; a1 untouched"
uids_before=$(slice_uids)
stop kubelet
start_kubelet
wait_for 60 "node Ready" kctl wait --for=condition=Ready "node/$NODE" --timeout=1s || true
republished() { local u; u=$(slice_uids) && [ -n "$u" ] && [ "$u" != "$uids_before" ] && slices_whole; }
check "the slices are published again (new objects, same devices)" wait_for 90 "the slices" republished
check "team-a/a1 untouched: same uid, container, 0 restarts, ready" equals "$(pod_fingerprint team-a a1)" "$a1_before"
check "team-a/a1 still holds rail0 and rail1" \
  equals "$(in_pod team-a a1 ip -o link show | grep -cE ' rail[01][:@]')" 2
check "its claim is still prepared (record kept)" contains "$(node_ls /var/lib/railgate/claims)" "$a1_uid.json"
pod_yaml team-b b1 "$NODE" railgate.io/tenant-b 2 | kctl apply -f - >/dev/null
check "team-b/b1 Ready: the restarted kubelet prepares through the driver" \
  kctl wait --for=condition=Ready -n team-b pod/b1 --timeout=180s
b1_claim=$(claim_of team-b b1)
check_pod team-b b1 tenant-b "$NODE" 200 2 3
check "networkData in b1's claim" wait_for 60 "networkData" nd_written team-b "$b1_claim" 2 3

section "the agent's API rights: with its own token it writes its node's claims, never another node's"
# The agent's credentials as its pod has them: a token of service account
# railgate bound to the agent's pod, which names the pod's node. Two claims
# of team-a, allocated by hand (one device each, reserved for no pod, so
# nothing prepares or releases them): team-a/rg-here on this node, team-a/rg-far
# on node $FAR, which need not exist.
FAR=rg-elsewhere
agent_pod=$(kctl get pod "${AGENT[@]}" --field-selector "spec.nodeName=$NODE" \
  -o jsonpath='{.items[0].metadata.name}')
agent_token=$(kctl -n railgate-system create token railgate --bound-object-kind Pod \
  --bound-object-name "$agent_pod" \
  --bound-object-uid "$(kctl get pod -n railgate-system "$agent_pod" -o jsonpath='{.metadata.uid}')")
install -m 0600 /dev/null "$T/agent.kubeconfig" # the token is the agent's: root's only
render "$K8S_DIR/dra/agent.kubeconfig" PKI="$P" TOKEN="$agent_token" >"$T/agent.kubeconfig"
actl() { in_ns "$BIN/kubectl" --kubeconfig "$T/agent.kubeconfig" "$@"; }
check "the agent's token is service account railgate's and names its node, $NODE" equals \
  "$(actl auth whoami -o json | pyjson '
u = d["status"]["userInfo"]
print(u["username"], u.get("extra", {}).get("authentication.kubernetes.io/node-name", ["-"])[0])')" \
  "system:serviceaccount:railgate-system:railgate $NODE"
allocate() { # allocate NAME NODE: team-a/NAME, allocated railgate.io NODE/probe and gpu.example.com NODE/gpu0
  claim_yaml ResourceClaim team-a "$1" tenant-a.railgate.io | kctl apply -f - >/dev/null &&
    kctl patch resourceclaim -n team-a "$1" --subresource status --type merge -p "$(
      python3 -c 'import json, sys; n = sys.argv[1]; print(json.dumps({"status": {"allocation": {
  "devices": {"results": [{"request": "rails", "driver": d, "pool": n, "device": x}
                          for d, x in (("railgate.io", "probe"), ("gpu.example.com", "gpu0"))]},
  "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
    {"key": "metadata.name", "operator": "In", "values": [n]}]}]}}}}))' "$2")" >/dev/null
}
check "team-a/rg-here allocated on $NODE" allocate rg-here "$NODE"
check "team-a/rg-far allocated on $FAR" allocate rg-far "$FAR"
entry() { # entry DRIVER NODE DEVICE: a status.devices entry with networkData
  printf '{"driver": "%s", "pool": "%s", "device": "%s", "networkData": {"interfaceName": "net0", "ips": ["10.9.0.1/24"]}}' \
    "$1" "$2" "$3"
}
install -m 0600 /dev/null "$T/agent.header"
printf 'Authorization: Bearer %s\n' "$agent_token" >"$T/agent.header"
agent_patch() { # agent_patch NAME STATUS-JSON: the agent's status write, a PATCH of the status
  # (which it may not GET, so not kubectl's); out: the HTTP code and the API server's message
  local code
  code=$(in_ns curl -sS -o "$T/agent-patch.json" -w '%{http_code}' --cacert "$P/ca.crt" \
    -H "@$T/agent.header" -H 'Content-Type: application/merge-patch+json' -X PATCH \
    --data "{\"status\": $2}" \
    "https://127.0.0.1:6443/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/$1/status" 2>&1)
  out="$code $(pyjson 'print(d.get("message", ""))' <"$T/agent-patch.json" 2>&1)"
  [ "$code" = 200 ]
}
entries() { # entries NAME: "driver/pool/device" of each status.devices entry
  claim_json team-a "$1" | pyjson 'print(" ".join(sorted("%s/%s/%s" % (e["driver"], e["pool"], e["device"])
                                                  for e in d.get("status", {}).get("devices", []))))'
}
FAR_DENIAL="railgate: the agent on node $NODE may change status.devices only of ResourceClaims allocated on that node; team-a/rg-far is allocated on node $FAR"
check "with its own token the agent writes networkData into team-a/rg-here (its node's)" \
  agent_patch rg-here "{\"devices\": [$(entry railgate.io "$NODE" probe)]}"
check "and there it is" equals "$(entries rg-here)" "railgate.io/$NODE/probe"
agent_patch rg-far "{\"devices\": [$(entry railgate.io "$FAR" probe)]}" && out="written: $out"
check "the same write into team-a/rg-far ($FAR's) is refused by the API server's own check (resourceclaims/driver: associated-node only): $(head -c 300 <<<"$out")" \
  contains "$out" 'requires resource="resourceclaims/driver"'
check "team-a/rg-far has no entry" equals "$(entries rg-far)" ""

# What resourceclaims/status alone gives on Kubernetes 1.34 and 1.35, or with
# DRAResourceClaimGranularStatusAuthorization off: every driver's entries on
# every node, the allocation and reservedFor. Granted here on top of the
# chart's RBAC, so only the policy stands in the way.
kctl apply -f "$K8S_DIR/dra/status-unchecked.yaml" >/dev/null
far_denied_by_policy() {
  ! agent_patch rg-far "{\"devices\": [$(entry railgate.io "$FAR" probe)]}" && contains "$out" "$FAR_DENIAL"
}
wait_for 60 "the wider grant to take effect" far_denied_by_policy || true
check "with every status right granted, the write into team-a/rg-far is denied by railgate-node-claims: $(head -c 400 <<<"$out")" \
  contains "$out" "$FAR_DENIAL"
check "team-a/rg-far still has no entry" equals "$(entries rg-far)" ""
agent_patch rg-here "{\"devices\": [$(entry railgate.io "$NODE" probe), $(entry gpu.example.com "$NODE" gpu0)]}" &&
  out="written: $out"
check "another driver's entry in team-a/rg-here is denied: $(head -c 400 <<<"$out")" contains "$out" \
  "railgate: the agent on node $NODE may change only status.devices entries of driver railgate.io, not one of driver gpu.example.com in ResourceClaim team-a/rg-here"
agent_patch rg-here '{"reservedFor": [{"resource": "pods", "name": "someone", "uid": "0b5e4c1d-0000-4000-8000-000000000001"}]}' &&
  out="written: $out"
check "reserving team-a/rg-here for a pod is denied: $(head -c 400 <<<"$out")" contains "$out" \
  "railgate: the agent on node $NODE may not change status.allocation or status.reservedFor of ResourceClaim team-a/rg-here"
agent_patch rg-here '{"allocation": null}' && out="written: $out"
check "deallocating team-a/rg-here is denied: $(head -c 400 <<<"$out")" contains "$out" \
  "may not change status.allocation or status.reservedFor of ResourceClaim team-a/rg-here"
check "team-a/rg-here is still allocated on $NODE, reserved for no pod" equals "$(claim_json team-a rg-here | pyjson '
s = d["status"]
print(s["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0], len(s.get("reservedFor", [])))')" \
  "$NODE 0"
check "its own entries of team-a/rg-here it still writes (removed here)" agent_patch rg-here '{"devices": []}'
check "and they are gone" equals "$(entries rg-here)" ""
kctl delete clusterrolebinding,clusterrole railgate-e2e-status-unchecked >/dev/null
kctl delete resourceclaim -n team-a rg-here rg-far --wait=true --timeout=60s >/dev/null

section "the pods are deleted: NICs home, claims unprepared, the node's railgate state empty"
kctl delete pod -n team-a a1 --wait=true --timeout=120s >/dev/null
kctl delete pod -n team-b b1 --wait=true --timeout=120s >/dev/null
check_home "$NODE"
unprepared() { [ -z "$(node_ls /var/lib/railgate/claims)" ]; }
check "every claim unprepared: /var/lib/railgate/claims empty" wait_for 60 "the unprepares" unprepared
check "their CDI specs are gone from /var/run/cdi" equals "$(node_ls /var/run/cdi | grep railgate || true)" ""
claims_gone() { [ -z "$(kctl get resourceclaims -A -o name)" ]; }
check "the scheduler's claims are deleted with their pods" wait_for 60 "the claims to go" claims_gone
check "no unit claimed: /var/lib/railgate/units empty" equals "$(node_ls /var/lib/railgate/units)" ""
check "metrics: both unprepares counted" \
  metric_at_least 'railgate_dra_claims_total{operation="unprepare",result="ok"}' 2
check "the slices are still there for the next pod" slices_whole
refused_writes() { # the agent's networkData writes that its rights or the policy refused
  kctl -n railgate-system logs daemonset/railgate -c device-plugin 2>&1 |
    grep -E 'networkData: .*(railgate-node-claims|resourceclaims/(status|driver|binding))' || true
}
check "the agent's own status writes were never refused for its rights (its log: $(refused_writes | head -c 300))" \
  equals "$(refused_writes)" ""
