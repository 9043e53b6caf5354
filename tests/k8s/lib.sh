# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# shellcheck disable=SC2034 # K8S_KEPT and K8S_STATE_VARS are for the scripts that source this
# What tests/k8s/e2e.sh and tests/k8s/down.sh share: the local cluster's
# processes (started and stopped by PID), and its teardown. Sourced, not run.
# The sourcing script sets T (the run's temporary dir), NS and FABRIC (the
# network namespaces), CGROUP, HIERARCHIES, SYSCTLS and SYSCTL_WAS (kubelet's
# sysctls as they were), SOCK (containerd's socket), PID (name -> pid) and
# HOLDER (the pid holding the node's mount namespace).

# Where e2e.sh --keep names the dir of the cluster it left running.
K8S_KEPT=/tmp/railgate-k8s.kept
# The variables a kept cluster's state file (e2e.sh --keep) records for down.sh
# (and tests/k8s/bench.sh, which reads MODE).
K8S_STATE_VARS=(T NS FABRIC CGROUP HIERARCHIES SYSCTLS SYSCTL_WAS SOCK PID HOLDER BIN
  KUBECONFIG_FILE KUBELET_DIR PATH MODE)

start() { # start NAME COMMAND...: in the background, log in $T/log/NAME.log; COMMAND is no function
  local name=$1
  shift
  "$@" >>"$T/log/$name.log" 2>&1 &
  PID["$name"]=$!
}

stop() { # stop NAME: SIGTERM, SIGKILL after 20 s
  local name=$1 pid=${PID[$1]:-} i
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || break
    [ "$i" -lt 200 ] || kill -KILL "$pid" 2>/dev/null || true
    sleep 0.1
  done
  wait "$pid" 2>/dev/null || true
  unset "PID[$name]"
}

alive() { [ -n "${PID[$1]:-}" ] && kill -0 "${PID[$1]}" 2>/dev/null; }

cctl() { ctr --address "$SOCK" -n k8s.io "$@"; }

# PIDs whose command line names this run's temporary directory (containerd's
# shims, which outlive containerd), and every process in kubelet's cgroups
own_pids() {
  local p
  for p in /proc/[0-9]*; do
    { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q -- "$T/" && echo "${p#/proc/}"
  done
  cat /sys/fs/cgroup/pids/"$CGROUP"/cgroup.procs /sys/fs/cgroup/pids/"$CGROUP"/*/cgroup.procs \
    /sys/fs/cgroup/pids/"$CGROUP"/*/*/cgroup.procs /sys/fs/cgroup/pids/"$CGROUP"/*/*/*/cgroup.procs \
    /sys/fs/cgroup/pids/"$CGROUP"/*/*/*/*/cgroup.procs 2>/dev/null || true
}

# Stop everything the run started, in order (kubelet, the pods through
# containerd, the shims, containerd, the control plane), remove its network
# namespaces and cgroups, put kubelet's sysctls back. Not the temporary dir.
k8s_teardown() {
  local name p h
  stop kubelet
  if alive containerd; then # the pods kubelet left: stop them through containerd
    for p in $(cctl tasks ls -q 2>/dev/null); do cctl tasks kill -s KILL "$p" >/dev/null 2>&1; done
  fi
  for p in $(own_pids | sort -u); do # the shims and the pods' processes
    case " ${PID[*]} $$ " in *" $p "*) ;; *) kill -KILL "$p" 2>/dev/null ;; esac
  done
  for name in watch containerd kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop "$name"
  done
  for p in $(own_pids | sort -u); do [ "$p" = "$$" ] || kill -KILL "$p" 2>/dev/null; done
  if [ -n "$HOLDER" ]; then
    kill -KILL "$HOLDER" 2>/dev/null
    wait "$HOLDER" 2>/dev/null
  fi
  ip netns del "$NS" 2>/dev/null
  ip netns del "$FABRIC" 2>/dev/null
  for h in "${HIERARCHIES[@]}"; do
    [ -d "$h/$CGROUP" ] && find "$h/$CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  for name in "${SYSCTLS[@]}"; do
    [ "$(sysctl -n "$name")" = "${SYSCTL_WAS[$name]}" ] || sysctl -qw "$name=${SYSCTL_WAS[$name]}"
  done
  return 0
}
