#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/k8s/bench.sh's report: joins what bench.sh recorded (pods.tsv: each
# pod's create, Ready from the watch, delete, gone, sandbox stopped; floor.txt)
# with containerd's, kubelet's and the agent's logs and the metrics it took
# before and after each phase, prints the table (p50 / p95 by nearest rank,
# ms) and writes pods.csv. Run by bench.sh, not by hand.
import argparse
import csv
import datetime
import math
import os
import random
import re
import sys

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SANDBOX = re.compile(r"\b[0-9a-f]{64}\b")
LOGRUS_TIME = re.compile(r'time="(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)"')
GO_TIME = r'"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(\.\d+)? ([+-]\d{4})'
REPORT = re.compile(
    r"CNI (ADD|DEL) of sandbox ([0-9a-f]{1,64}|\?) answered (\d+) in ([0-9.]+) ms "
    r"\((\d+) rails?: agent ([0-9.]+), moves ([0-9.]+), configure ([0-9.]+), state ([0-9.]+) ms\)")
PREPARED = re.compile(r"claim bench/(\S+) \((\S+)\) prepared: (\d+) units in ([0-9.]+) ms")


def epoch(base, frac, tz):
    """Seconds since the epoch of a date and time, its fraction and its zone."""
    t = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S" if "T" in base else "%Y-%m-%d %H:%M:%S")
    off = 0
    if tz not in ("Z", ""):
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        off = sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)
    t = t.replace(tzinfo=datetime.timezone.utc)
    return t.timestamp() - off + (float(frac) if frac else 0.0)


def containerd_log(path):
    """uid -> (begin, end, sandbox id); sandbox id -> stopped; sample lines."""
    begin, end, stop, samples, bench_ids = {}, {}, {}, {}, set()
    with open(path, errors="replace") as f:
        for line in f:
            if "PodSandbox for" not in line:
                continue
            m = LOGRUS_TIME.search(line)
            if not m:
                continue
            t = epoch(*m.groups())
            if "RunPodSandbox for" in line:
                u = UUID.search(line)
                if not u:
                    continue
                if "returns sandbox id" in line:
                    s = SANDBOX.search(line)
                    if s:
                        end[u.group(0)] = (t, s.group(0))
                        if "bench" in line:
                            samples.setdefault("end", line.strip())
                            bench_ids.add(s.group(0))
                elif "failed" not in line:
                    begin.setdefault(u.group(0), t)  # the first attempt's
                    if "bench" in line:
                        samples.setdefault("begin", line.strip())
            elif "StopPodSandbox for" in line and "returns successfully" in line:
                s = SANDBOX.search(line)
                if s:
                    stop.setdefault(s.group(0), t)
                    if s.group(0) in bench_ids:
                        samples.setdefault("stop", line.strip())
    return begin, end, stop, samples


def kubelet_log(path):
    """pod name -> [(observedRunningTime, watchObservedRunningTime)]"""
    out = {}
    run = re.compile(r"observedRunningTime=" + GO_TIME)
    watch = re.compile(r"watchObservedRunningTime=" + GO_TIME)
    with open(path, errors="replace") as f:
        for line in f:
            if "Observed pod startup duration" not in line:
                continue
            p = re.search(r'pod="bench/([^"]+)"', line)
            r, w = run.search(line), watch.search(line)
            if not p or not r or r.group(1).startswith("0001-"):
                continue
            out.setdefault(p.group(1), []).append(
                (epoch(*r.groups()), epoch(*w.groups()) if w else None))
    return out


def agent_log(path):
    """(command, sandbox id) -> report fields; claim name -> prepare ms"""
    reports, prepared = {}, {}
    with open(path, errors="replace") as f:
        for line in f:
            m = REPORT.search(line)
            if m:
                cmd, sid, code = m.group(1), m.group(2), int(m.group(3))
                v = [float(x) for x in m.group(4, 6, 7, 8, 9)]
                # a sandbox's first DEL (StopPodSandbox) brings its NICs home; the
                # runtime's later ones (RemovePodSandbox) find nothing to do
                old = reports.get((cmd, sid))
                if old is None or (old["code"] != 0 and code == 0):
                    reports[(cmd, sid)] = {"code": code, "ms": v[0], "rails": int(m.group(5)),
                                           "agent": v[1], "moves": v[2], "configure": v[3],
                                           "state": v[4]}
                continue
            m = PREPARED.search(line)
            if m:
                prepared[m.group(1)] = float(m.group(4))
    return reports, prepared


def prom(path):
    """series text -> value"""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            try:
                k, v = line.rsplit(None, 1)
                out[k] = float(v)
            except ValueError:
                pass
    return out


def mean_delta(out, phase, source, name, labels=""):
    """the mean of a histogram over a phase (ms) and its count, from its _sum and _count"""
    b, a = prom(f"{out}/{source}-{phase}-before.prom"), prom(f"{out}/{source}-{phase}-after.prom")

    def total(m, suffix):
        return sum(v for k, v in m.items() if k.startswith(name + suffix) and labels in k)
    n = total(a, "_count") - total(b, "_count")
    if n <= 0:
        return None, 0
    return (total(a, "_sum") - total(b, "_sum")) / n * 1000, int(n)


def pct(values, p):
    """nearest rank: the ceil(p n)-th smallest"""
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    return v[max(1, math.ceil(p * len(v))) - 1]


def cell(values, digits=0):
    v = [x for x in values if x is not None]
    if not v:
        return "—"
    return f"{pct(v, 0.5):.{digits}f} / {pct(v, 0.95):.{digits}f}"


def ratio_interval(num, den, runs=2000, seed=1):
    """a 90% bootstrap interval of p50(num) / p50(den): both samples drawn
    again with replacement, runs times (a fixed seed: the same logs print
    the same interval)"""
    num = [x for x in num if x is not None]
    den = [x for x in den if x is not None]
    if len(num) < 2 or len(den) < 2:
        return None
    rnd = random.Random(seed)
    ratios = sorted(pct(rnd.choices(num, k=len(num)), 0.5) / pct(rnd.choices(den, k=len(den)), 0.5)
                    for _ in range(runs))
    return ratios[int(0.05 * runs)], ratios[int(0.95 * runs) - 1]


def round_of(name):
    """a serial pod's round, the number its name ends in (rg-serial-7, floor-u8-serial-7)"""
    m = re.search(r"-(\d+)$", name)
    return int(m.group(1)) if m else None


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = "?"
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1048576:.0f} GiB"
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return f"{model}, {os.cpu_count()} vCPUs, {mem} RAM, kernel {os.uname().release}", load


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--units", type=int, required=True)
    ap.add_argument("--background", type=int, default=0)
    ap.add_argument("--parallel", type=int, default=0)
    ap.add_argument("--floor-why", default="")
    ap.add_argument("--containerd", default="?")
    ap.add_argument("--kubernetes", default="?")
    a = ap.parse_args()
    out = a.out

    begin, end, stop, samples = containerd_log(f"{a.logs}/containerd.log")
    running = kubelet_log(f"{a.logs}/kubelet.log")
    reports, prepared = agent_log(f"{out}/agent.log")
    floor_add, floor_del = [], []
    with open(f"{out}/floor.txt") as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "floor":
                floor_add.append(float(w[1]) / 1000)
                floor_del.append(float(w[2]) / 1000)

    # the in-position floor: floor-cni's moves in the floor pods' starts, by sandbox id
    floor_cni = {}
    try:
        with open(f"{a.logs}/floor-cni.log") as f:
            for line in f:
                w = line.split()
                if len(w) == 4 and w[0] in ("ADD", "DEL"):
                    floor_cni[(w[0], w[1])] = float(w[2]) / 1000
    except FileNotFoundError:
        pass

    with open(f"{out}/pods.tsv") as f:
        pods = list(csv.DictReader(f, delimiter="\t"))
    phases = list(dict.fromkeys(p["phase"] for p in pods))
    # per phase: what railgate does before the sandbox that names no pod (device plugin)
    alloc = {}
    for ph in phases:
        if a.mode == "dra":
            alloc[ph] = 0.0
            continue
        m1, _ = mean_delta(out, ph, "agent", "railgate_allocate_duration_seconds",
                           'resource="railgate.io/tenant-bench"')
        m2, _ = mean_delta(out, ph, "agent", "railgate_preferred_allocation_duration_seconds",
                           'resource="railgate.io/tenant-bench"')
        alloc[ph] = (m1 or 0.0) + (m2 or 0.0)

    rows, missing = [], []
    for p in pods:
        uid, sid, t0 = p["uid"], p["sandbox"], float(p["t0"])
        b, e = begin.get(uid), end.get(uid)
        ready = float(p["t_ready"]) if p["t_ready"] else None
        add, dele = reports.get(("ADD", sid)), reports.get(("DEL", sid))
        run = [r for r in running.get(p["name"], []) if r[0] >= t0]
        r = {"phase": p["phase"], "kind": p["kind"], "name": p["name"], "uid": uid, "sandbox": sid}
        ms = lambda x, y: (y - x) * 1000 if x is not None and y is not None else None
        r["admit"] = ms(t0, b)
        r["sandbox_ms"] = ms(b, e[0] if e else None)
        r["start"] = ms(e[0] if e else None, ready)
        r["total"] = ms(t0, ready)
        r["running"] = ms(e[0] if e else None, run[0][0] if run else None)
        r["cni_add"] = add["ms"] if add and add["code"] == 0 else None
        for k in ("agent", "moves", "configure", "state"):
            r[k] = add[k] if add else None
        # the rest of the ADD: the plugin's exec, its reading of config, inventory, state, NICs
        r["rest"] = (add["ms"] - add["agent"] - add["moves"] - add["configure"] - add["state"]
                     if add else None)
        r["rails"] = add["rails"] if add else None
        r["prepare"] = None
        if p["kind"] == "rg" and a.mode == "dra":
            r["prepare"] = prepared.get(p["claim"])
            if r["prepare"] is None:  # the claim's name not read: the last one named after the pod
                names = [c for c in prepared if c.startswith(p["name"] + "-")]
                r["prepare"] = prepared[names[-1]] if names else None
        before = r["prepare"] if a.mode == "dra" else (alloc[p["phase"]] if p["kind"] == "rg" else 0.0)
        r["railgate"] = r["cni_add"] + (before or 0.0) if r["cni_add"] is not None else None
        r["delete_gone"] = ms(float(p["t_delete"]), float(p["t_gone"]))
        r["delete_stopped"] = ms(float(p["t_delete"]), stop.get(sid))
        r["cni_del"] = dele["ms"] if dele and dele["code"] == 0 else None
        r["floor_add"] = floor_cni.get(("ADD", sid)) if p["kind"] == "floor" else None
        r["floor_del"] = floor_cni.get(("DEL", sid)) if p["kind"] == "floor" else None
        r["del_moves"] = dele["moves"] if dele else None
        if None in (r["admit"], r["sandbox_ms"], r["total"], r["cni_add"]):
            missing.append(p["name"])
        rows.append(r)

    cols = ["phase", "kind", "name", "uid", "sandbox", "admit", "sandbox_ms", "start", "total",
            "running", "cni_add", "agent", "moves", "configure", "state", "rest", "rails", "prepare",
            "railgate", "delete_gone", "delete_stopped", "cni_del", "del_moves", "floor_add",
            "floor_del"]
    with open(f"{out}/pods.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})

    desc, load = machine()
    mode = "device plugin" if a.mode == "devicePlugin" else "DRA"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"\ntests/k8s/bench.sh on {desc}, Kubernetes {a.kubernetes}, containerd {a.containerd}, "
          f"{now}, load {load}; ms, p50 / p95 over n pods (nearest rank); busybox pods, ptp as the "
          f"primary CNI, rg pods with {a.units} units (veth rails)")
    if a.floor_why:
        print(f"floor: none ({a.floor_why})")
    print()
    print("| mode | run | pod | n | creation → sandbox | sandbox (RunPodSandbox) | sandbox → Ready "
          "| creation → Ready | CNI ADD | railgate part | 8-move floor (quiet) | railgate / quiet floor "
          "| 8-move floor (in position) | railgate / floor in position |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    fl50 = pct(floor_add, 0.5)
    summary = {}
    pods_of = {"plain": "no units", "rg": f"{a.units} units",
               "floor": f"floor pod: floor-cni's {a.units} moves"}
    for ph in phases:
        fp = [r["floor_add"] for r in rows if r["phase"] == ph and r["kind"] == "floor"]
        fp50 = pct(fp, 0.5)
        for kind in ("plain", "rg", "floor"):
            g = [r for r in rows if r["phase"] == ph and r["kind"] == kind]
            if not g:
                continue
            rg = [r["railgate"] for r in g]
            summary[(ph, kind)] = g
            quiet = in_pos = ""
            if kind == "rg":
                quiet = f"{pct(rg, 0.5) / fl50:.2f}x" if fl50 and pct(rg, 0.5) is not None else "—"
                in_pos = f"{pct(rg, 0.5) / fp50:.2f}x" if fp50 and pct(rg, 0.5) is not None else "—"
            run = {"serial": "serial", "parallel": f"{a.parallel} at once"}.get(
                ph, f"serial, {a.background} pods on the node" if ph.startswith("bg") else ph)
            print(f"| {mode} | {run} | {pods_of[kind]} | {len(g)} "
                  f"| {cell([r['admit'] for r in g])} | {cell([r['sandbox_ms'] for r in g])} "
                  f"| {cell([r['start'] for r in g])} | {cell([r['total'] for r in g])} "
                  f"| {cell([r['cni_add'] for r in g], 1)} | {cell(rg, 1) if kind == 'rg' else ''} "
                  f"| {cell(floor_add, 1) if kind == 'rg' else ''} | {quiet} "
                  f"| {cell(fp, 1) if kind in ('rg', 'floor') and fp else ''} | {in_pos} |")
    print(f"\nquiet floor: {len(floor_add)} samples of bench-cni --floor-only 1 {a.units} (ADD; its DEL "
          f"{cell(floor_del, 1)} ms)" if floor_add else "")
    fl_rows = [r for r in rows if r["kind"] == "floor"]
    if fl_rows:
        print(f"floor in position: {len(fl_rows)} floor pods, floor-cni (chained after ptp, before "
              f"railgate) moving {a.units} veth rails into the pod with one bare RTM_NEWLINK each in "
              f"the pod's own start (ADD; its DEL {cell([r['floor_del'] for r in fl_rows], 1)} ms)")

    print("\nrailgate's part of an rg pod's start, p50 / p95 ms (the CNI's phases from its report; "
          "the rest of its ADD is its own reading of config, inventory and state):")
    print("| run | n | agent's answer | moves | configure | state | the rest | CNI ADD | "
          + ("NodePrepare (claim) |" if a.mode == "dra" else "Allocate + GetPreferredAllocation (mean) |"))
    print("|---|---|---|---|---|---|---|---|---|")
    for ph in phases:
        g = summary.get((ph, "rg"), [])
        if not g:
            continue
        pre = cell([r["prepare"] for r in g], 2) if a.mode == "dra" else f"{alloc[ph]:.2f}"
        print(f"| {ph} | {len(g)} | {cell([r['agent'] for r in g], 2)} | {cell([r['moves'] for r in g], 1)} "
              f"| {cell([r['configure'] for r in g], 1)} | {cell([r['state'] for r in g], 2)} "
              f"| {cell([r['rest'] for r in g], 1)} | {cell([r['cni_add'] for r in g], 1)} | {pre} |")

    print("\nthe delete, p50 / p95 ms: delete → the object gone, delete → containerd's StopPodSandbox "
          "returned (the CNI's DEL done), the CNI's DEL")
    print("| run | pod | n | delete → gone | delete → sandbox stopped | CNI DEL | its moves home |")
    print("|---|---|---|---|---|---|---|")
    for (ph, kind), g in summary.items():
        print(f"| {ph} | {kind} | {len(g)} | {cell([r['delete_gone'] for r in g])} "
              f"| {cell([r['delete_stopped'] for r in g])} | {cell([r['cni_del'] for r in g], 1)} "
              f"| {cell([r['del_moves'] for r in g], 1)} |")

    print("\ncross-checks (means over each phase from the metrics' _sum/_count deltas, ms; count):")
    for ph in phases:
        items = []
        for src, name, lab in (
                ("kubelet", "kubelet_run_podsandbox_duration_seconds", ""),
                ("kubelet", "kubelet_pod_start_sli_duration_seconds", ""),
                ("agent", "railgate_pod_lookup_duration_seconds", ""),
                ("agent", "railgate_cni_command_duration_seconds", 'command="ADD"'),
                ("agent", "railgate_allocate_duration_seconds", "tenant-bench"),
                ("agent", "railgate_dra_request_duration_seconds", 'operation="prepare"')):
            m, n = mean_delta(out, ph, src, name, lab)
            if n:
                items.append(f"{name.replace('_duration_seconds', '')}{'{' + lab + '}' if lab else ''} "
                             f"{m:.1f} ({n})")
        print(f"  {ph}: " + "; ".join(items))
        g = summary.get((ph, "rg"), [])
        k = [r["running"] for r in g]
        if any(x is not None for x in k):
            print(f"  {ph}: kubelet's observedRunningTime − sandbox end, rg pods: {cell(k)} ms")

    print("\ngoal: railgate's part ≤ the floor + 10%, and nothing in it that grows with the pods on the node")
    s_rg, s_plain = summary.get(("serial", "rg")), summary.get(("serial", "plain"))
    if s_rg and fl50:
        v = pct([r["railgate"] for r in s_rg], 0.5)
        print(f"  serial: railgate part p50 {v:.1f} ms / quiet floor p50 {fl50:.1f} ms = {v / fl50:.2f}x "
              f"({'within' if v <= 1.10 * fl50 else 'above'} 1.10x)")
    for ph in phases:
        g_rg, g_fl = summary.get((ph, "rg")), summary.get((ph, "floor"))
        fp50 = pct([r["floor_add"] for r in g_fl], 0.5) if g_fl else None
        if g_rg and fp50:
            v = pct([r["railgate"] for r in g_rg], 0.5)
            print(f"  {ph}: railgate part p50 {v:.1f} ms / floor in position p50 {fp50:.1f} ms = "
                  f"{v / fp50:.2f}x ({'within' if v <= 1.10 * fp50 else 'above'} 1.10x); railgate's "
                  f"moves p50 {pct([r['moves'] for r in g_rg], 0.5):.1f} ms")
            # how well n pods place that ratio: one pod's moves vary by tens of ms
            ci = ratio_interval([r["railgate"] for r in g_rg], [r["floor_add"] for r in g_fl])
            fixed = [r["railgate"] - r["moves"] for r in g_rg
                     if r["railgate"] is not None and r["moves"] is not None]
            fl_of = {round_of(r["name"]): r["floor_add"] for r in g_fl if r["floor_add"] is not None}
            paired = [r["railgate"] / fl_of[round_of(r["name"])] for r in g_rg
                      if r["railgate"] is not None and fl_of.get(round_of(r["name"]))]
            print(f"    its 90% bootstrap interval {ci[0]:.2f}x to {ci[1]:.2f}x" if ci else
                  "    (too few pods for an interval)", end="")
            print(f"; each rg pod over the floor pod of its round: p50 {pct(paired, 0.5):.2f}x "
                  f"(n {len(paired)})" if paired else "", end="")
            print(f"; railgate's part less its moves p50 {pct(fixed, 0.5):.1f} ms; moves / floor in "
                  f"position p50 {pct([r['moves'] for r in g_rg], 0.5) / fp50:.2f}x" if fixed else "")
    for ph in phases:
        g_rg, g_pl = summary.get((ph, "rg")), summary.get((ph, "plain"))
        if g_rg and g_pl:
            d = pct([r["total"] for r in g_rg], 0.5) - pct([r["total"] for r in g_pl], 0.5)
            print(f"  {ph}: creation → Ready p50, rg − plain: {d:.1f} ms; railgate part p50 "
                  f"{pct([r['railgate'] for r in g_rg], 0.5):.1f} ms (plain pods' CNI ADD, the "
                  f"pass-through: {pct([r['cni_add'] for r in g_pl], 0.5):.1f} ms)")
    bg = [ph for ph in phases if ph.startswith("bg")]
    if s_rg and bg and summary.get((bg[0], "rg")):
        v0 = pct([r["railgate"] for r in s_rg], 0.5)
        v1 = pct([r["railgate"] for r in summary[(bg[0], "rg")]], 0.5)
        print(f"  with {a.background} pods on the node: railgate part p50 {v1:.1f} ms against "
              f"{v0:.1f} ms without: {v1 / v0:.2f}x")

    print("\ncontainerd's lines (as this run logged them):")
    for k in ("begin", "end", "stop"):
        print(f"  {k}: {samples.get(k, '(none)')[:300]}")
    if missing:
        print(f"\nno complete record (a source lacked it) for: {' '.join(missing)}")
    print(f"\nper pod: {out}/pods.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
