# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# A Docker engine for the kind path: the one that answers, or a private one
# this script starts (Debian's docker.io) and stops. Sourced by kind/e2e.sh.
#
#   docker_start DIR   DIR: a scratch directory of the caller's (removed by it)
#   docker_stop [DIR]  stops what docker_start started, by PID, and unmounts what
#                      it left under DIR; a no-op for an engine that answered
#   in_docker_net CMD  runs CMD in the network namespace the engine's
#                      containers are reached from (kind, kubectl, helm: the
#                      API server's port is published there)
#
# The private engine: dockerd with its own --data-root, --exec-root,
# --pidfile and socket under DIR, in a network namespace of its own
# (ip netns add; entered with nsenter --net, which keeps the host's mounts:
# `ip netns exec` remounts /sys and hides the cgroup hierarchies), so that its
# bridges and iptables rules never touch the host's. Its default runtime is
# a runc wrapper that drops capabilities the host's bounding set lacks
# (these VMs lack CAP_SYS_RESOURCE: `docker run --privileged`, how kind runs
# its nodes, fails with "unable to apply caps" otherwise). DOCKER_HOST points
# the docker and kind CLIs at its socket; DOCKER_CONFIG keeps the CLI's
# files in DIR.

DOCKER_NETNS=""     # the private engine's network namespace, "" for one that answered
DOCKER_PID=""       # the private dockerd's PID
DOCKER_MADE_MODULES=false # /lib/modules was made by the engine (kind mounts it): removed at stop


# The capabilities of this host's bounding set, as runc names them
_docker_bounding_caps() {
  local bnd i caps=()
  bnd=$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)
  for i in $(seq 0 63); do
    if (((16#$bnd >> i) & 1)); then caps+=("$i"); fi
  done
  echo "${caps[*]}"
}

# The runc wrapper: on create and run it removes from the bundle's config.json,
# and on exec from the process file, every capability the host cannot grant
# (its number is not in the bounding set), then runs runc. Test tooling: python3.
_docker_runtime() { # _docker_runtime PATH
  local runc
  runc=$(command -v runc) || return 1
  cat >"$1" <<EOF
#!/bin/sh
# written by kind/docker.sh: runc without the capabilities this host lacks
case " \$* " in
*" create "* | *" run "* | *" exec "*) ;;
*) exec "$runc" "\$@" ;;
esac
python3 - "\$@" <<'PYEOF' || exit 1
import json, os, sys
have = set(int(c) for c in "$(_docker_bounding_caps)".split())
names = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
  "CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
  "CAP_LINUX_IMMUTABLE": 9, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11,
  "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15,
  "CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19,
  "CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23,
  "CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27,
  "CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29, "CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31,
  "CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35,
  "CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37, "CAP_PERFMON": 38, "CAP_BPF": 39,
  "CAP_CHECKPOINT_RESTORE": 40}
def trim(caps):
    for k, v in list(caps.items()):
        if isinstance(v, list):
            caps[k] = [c for c in v if names.get(c) is None or names[c] in have]
def edit(path, key):
    with open(path) as f:
        doc = json.load(f)
    caps = (doc.get("process", {}) if key == "process" else doc).get("capabilities")
    if caps:
        trim(caps)
        with open(path + ".rg", "w") as f:
            json.dump(doc, f)
        os.rename(path + ".rg", path)
args = sys.argv[1:]
cmd = next((a for a in args if a in ("create", "run", "exec")), None)
def value(*flags):
    for i, a in enumerate(args):
        for fl in flags:
            if a == fl and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(fl + "="):
                return a[len(fl) + 1:]
    return None
if cmd in ("create", "run"):
    bundle = value("--bundle", "-b") or "."
    edit(os.path.join(bundle, "config.json"), "process")
elif cmd == "exec":
    proc = value("--process", "-p")
    if proc:
        edit(proc, "top")
PYEOF
exec "$runc" "\$@"
EOF
  chmod 0755 "$1"
}

docker_start() { # docker_start DIR
  local dir=$1 i
  if docker info >/dev/null 2>&1; then
    SAY_FD=2 say "using the Docker engine that answers (${DOCKER_HOST:-the default socket})"
    return 0
  fi
  command -v dockerd >/dev/null 2>&1 || {
    SAY_FD=2 say "no Docker engine answers and dockerd is not installed (Debian: docker.io; bash scripts/deps.sh)"
    return 77
  }
  command -v python3 >/dev/null 2>&1 || {
    SAY_FD=2 say "python3 is missing (the runtime wrapper needs it; bash scripts/deps.sh)"
    return 77
  }
  mkdir -p "$dir/data" "$dir/exec" "$dir/config"
  _docker_runtime "$dir/runc" || {
    SAY_FD=2 say "runc is not installed (Debian: runc)"
    return 77
  }
  echo '{}' >"$dir/daemon.json"
  [ -e /lib/modules ] || DOCKER_MADE_MODULES=true
  DOCKER_NETNS=railgate-docker-$$
  ip netns add "$DOCKER_NETNS" || {
    DOCKER_NETNS=""
    return 1
  }
  export RAILGATE_DOCKER_NETNS=$DOCKER_NETNS # for the scripts run meanwhile (kind/up.sh)
  ip -n "$DOCKER_NETNS" link set lo up
  SAY_FD=2 say "starting a private dockerd in network namespace $DOCKER_NETNS (data, socket and log in $dir)"
  nsenter --net="/run/netns/$DOCKER_NETNS" dockerd --config-file "$dir/daemon.json" \
    --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/docker.pid" \
    -H "unix://$dir/docker.sock" --add-runtime "railgate-runc=$dir/runc" \
    --default-runtime railgate-runc --log-level warn >"$dir/dockerd.log" 2>&1 &
  DOCKER_PID=$!
  export DOCKER_HOST=unix://$dir/docker.sock DOCKER_CONFIG=$dir/config
  for i in $(seq "$(scaled 120)"); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$DOCKER_PID" 2>/dev/null || break
    sleep 0.5
  done
  if ! docker info >/dev/null 2>&1; then
    SAY_FD=2 say "the private dockerd did not come up: $(tail -n 5 "$dir/dockerd.log")"
    return 1
  fi
  SAY_FD=2 say "dockerd $(docker version -f '{{.Server.Version}}') up (pid $DOCKER_PID)"
}

in_docker_net() {
  if [ -n "$DOCKER_NETNS" ]; then
    nsenter --net="/run/netns/$DOCKER_NETNS" "$@"
  else
    "$@"
  fi
}

docker_stop() { # docker_stop [DIR]: DIR as given to docker_start; its mounts go too
  local i m pids p
  [ -n "$DOCKER_PID" ] || return 0 # not ours: an engine that answered
  # every container of the private engine is this run's; their init processes
  # are killed below should the engine leave them behind
  pids=$(docker ps -q 2>/dev/null | xargs -r docker inspect -f '{{.State.Pid}}' 2>/dev/null || true)
  # shellcheck disable=SC2046 # one word per container ID
  docker rm -f -v $(docker ps -aq 2>/dev/null) >/dev/null 2>&1 || true
  kill "$DOCKER_PID" 2>/dev/null || true
  for i in $(seq 60); do
    kill -0 "$DOCKER_PID" 2>/dev/null || break
    sleep 0.5
  done
  kill -9 "$DOCKER_PID" 2>/dev/null || true
  wait "$DOCKER_PID" 2>/dev/null || true
  DOCKER_PID=""
  for p in $pids; do
    if [ "$p" -gt 1 ] 2>/dev/null; then kill -9 "$p" 2>/dev/null || true; fi
  done
  if [ -n "${1:-}" ]; then
    # the engine's containerd shims (their -address is under DIR)
    for p in /proc/[0-9]*; do
      if { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF -- "-address $1/exec/"; then
        kill "${p#/proc/}" 2>/dev/null || true
      fi
    done
    # what a killed engine left mounted under DIR, deepest first
    while read -r m; do
      umount -l "$m" 2>/dev/null || true
    done < <(awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r)
  fi
  ip netns delete "$DOCKER_NETNS" 2>/dev/null || true
  DOCKER_NETNS=""
  unset RAILGATE_DOCKER_NETNS
  if $DOCKER_MADE_MODULES && [ -d /lib/modules ]; then
    rmdir /lib/modules 2>/dev/null || true
  fi
}
