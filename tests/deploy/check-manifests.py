#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check railgate's Kubernetes manifests without a cluster (ctest deploy/manifests).

Every YAML file under deploy/ and kind/ (but the Helm chart's, deploy/helm/: its
rendering is deploy/*.yaml, and kind/values.yaml, values for it) must parse, and every object in it must hold
together: apiVersion, kind, metadata.name, the fields its kind requires, and
the references between objects (namespaces, ServiceAccount, ConfigMap,
volumes, policy). The node configs in the railgate-nodes ConfigMaps go through
railgate's own validation (railgate-cni-install check-config), and the tenants
they name must match the namespace labels and quotas. The admission policy's
CEL is evaluated on sample pods with a CEL evaluator from npm, installed into
the build dir, where node and npm can get it; otherwise the output says so.

Before the real files are judged, the checker is run on broken copies of them
(a selector that matches nothing, a container without image, a quota key
kubelet would refuse, ...): each must be caught, or the test fails.

Exit 0: all checks passed; 1: a check failed; 2: usage.
"""

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # pragma: no cover
    print("check-manifests: python3-yaml is missing (scripts/deps.sh installs it)", file=sys.stderr)
    sys.exit(1)

CEL_PACKAGE = "@marcbachmann/cel-js"
CEL_VERSION = "8.0.0"

API_VERSIONS = {
    "Namespace": "v1",
    "ServiceAccount": "v1",
    "ConfigMap": "v1",
    "ResourceQuota": "v1",
    "DaemonSet": "apps/v1",
    "ValidatingAdmissionPolicy": "admissionregistration.k8s.io/v1",
    "ValidatingAdmissionPolicyBinding": "admissionregistration.k8s.io/v1",
    "Cluster": "kind.x-k8s.io/v1alpha4",
    "DeviceClass": "resource.k8s.io/v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1",
    "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
}
NAMESPACED = {"ServiceAccount", "ConfigMap", "ResourceQuota", "DaemonSet"}
NODE_CONFIGS = "railgate-nodes"  # the ConfigMap holding node.json per node
TENANT_LABEL = "railgate.io/tenant"
DOMAIN = "railgate.io"

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")
RESOURCE_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
QUANTITY = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE])?$")
CEL_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
STANDARD_QUOTA = {
    "cpu", "memory", "ephemeral-storage", "pods", "services", "services.loadbalancers",
    "services.nodeports", "secrets", "configmaps", "persistentvolumeclaims",
    "replicationcontrollers", "resourcequotas", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "requests.storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage",
}
# what the railgate DaemonSet must mount from the host, in the device plugin's container
PLUGIN_HOST_PATHS = ["/var/lib/kubelet/device-plugins", "/var/lib/kubelet/pod-resources",
                     "/var/lib/railgate", "/sys", "/dev", "/etc/railgate"]
# and in DRA mode: the driver's sockets where kubelet finds them, the CDI specs where the runtime does
DRA_HOST_PATHS = ["/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi"]
# the agent's grants RBAC cannot keep to its node -> the policy that does
GRANT_POLICIES = {"resourceslices": "railgate-node-slices", "resourceclaims/status": "railgate-node-claims"}
# what each admission policy must match: (apiGroup, resources, operations)
POLICY_MATCHES = {
    "railgate-tenant-resources": ("", ["pods"], ["CREATE"]),
    "railgate-tenant-claims": ("resource.k8s.io", ["resourceclaims", "resourceclaimtemplates"],
                               ["CREATE", "UPDATE"]),
    "railgate-node-slices": ("resource.k8s.io", ["resourceslices"], ["CREATE", "UPDATE", "DELETE"]),
    "railgate-node-claims": ("resource.k8s.io", ["resourceclaims/status"], ["UPDATE"]),
}


class Doc:
    """One object of one YAML file."""

    def __init__(self, path, index, obj):
        self.path, self.index, self.obj = path, index, obj

    @property
    def kind(self):
        return self.obj.get("kind") if isinstance(self.obj, dict) else None

    @property
    def name(self):
        md = self.obj.get("metadata") if isinstance(self.obj, dict) else None
        return md.get("name") if isinstance(md, dict) else None

    @property
    def namespace(self):
        md = self.obj.get("metadata") if isinstance(self.obj, dict) else None
        return md.get("namespace") if isinstance(md, dict) else None

    def where(self):
        what = f"{self.kind or '?'} {self.name or '?'}"
        return f"{self.path}[{self.index}] ({what})"


def load(root, rel_paths):
    """Parse the files; returns (docs, errors)."""
    docs, errors = [], []
    for rel in rel_paths:
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                objs = list(yaml.safe_load_all(f))
        except (OSError, yaml.YAMLError) as e:
            errors.append(f"{rel}: does not parse: {e}")
            continue
        objs = [o for o in objs if o is not None]
        if not objs:
            errors.append(f"{rel}: holds no object")
        for i, o in enumerate(objs):
            docs.append(Doc(rel, i, o))
    return docs, errors


def manifest_files(root):
    found = []
    for top in ("deploy", "kind"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                # deploy/helm/: the chart's templates and values, not manifests (deploy/*.yaml is its
                # rendering); kind/values.yaml: values for the chart (scripts/test.sh lints the chart
                # with them and renders it)
                if not name.endswith((".yaml", ".yml")) or rel == os.path.join("kind", "values.yaml"):
                    continue
                if not rel.startswith(os.path.join("deploy", "helm", "")):
                    found.append(rel)
    return sorted(found)


def strict_json(text):
    """json.loads that refuses duplicate keys, as railgate's parser does."""

    def pairs(items):
        seen = {}
        for k, v in items:
            if k in seen:
                raise ValueError(f"duplicate key {k!r}")
            seen[k] = v
        return seen

    return json.loads(text, object_pairs_hook=pairs)


class Checker:
    def __init__(self, docs, installer=None):
        self.docs = docs
        self.installer = installer
        self.errors = []
        self.checked = 0

    def err(self, doc, msg):
        self.errors.append(f"{doc.where()}: {msg}" if doc else msg)

    def find(self, kind, name=None, namespace=None):
        return [d for d in self.docs
                if d.kind == kind and (name is None or d.name == name)
                and (namespace is None or d.namespace == namespace)]

    # ---- every object ----

    def common(self, d):
        o = d.obj
        if not isinstance(o, dict):
            return self.err(d, "not a mapping")
        for key in ("apiVersion", "kind"):
            if not isinstance(o.get(key), str) or not o.get(key):
                self.err(d, f"no {key}")
        kind = o.get("kind")
        if kind not in API_VERSIONS:
            return self.err(d, f"kind {kind!r}: not one this checker knows ({', '.join(API_VERSIONS)})")
        if o.get("apiVersion") != API_VERSIONS[kind]:
            self.err(d, f"apiVersion {o.get('apiVersion')!r}, want {API_VERSIONS[kind]!r}")
        if kind == "Cluster":
            return
        md = o.get("metadata")
        if not isinstance(md, dict) or not isinstance(md.get("name"), str):
            return self.err(d, "no metadata.name")
        if not DNS_SUBDOMAIN.match(md["name"]):
            self.err(d, f"metadata.name {md['name']!r}: not a DNS subdomain")
        for field in ("labels", "annotations"):
            v = md.get(field, {})
            if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
                self.err(d, f"metadata.{field}: values must be strings")
        if kind in NAMESPACED:
            ns = md.get("namespace")
            if not isinstance(ns, str):
                self.err(d, "no metadata.namespace")
            elif not self.find("Namespace", ns) and ns not in ("default", "kube-system"):
                self.err(d, f"metadata.namespace {ns!r}: no Namespace object defines it")
        elif "namespace" in md:
            self.err(d, f"{kind} is cluster-scoped: no metadata.namespace")

    def duplicates(self):
        seen = {}
        for d in self.docs:
            key = (os.path.dirname(d.path), d.kind, d.namespace, d.name)
            if d.name and key in seen:
                self.err(d, f"defined twice in {key[0]}/ (also {seen[key].where()})")
            seen.setdefault(key, d)

    # ---- ConfigMap ----

    def configmap(self, d):
        data = d.obj.get("data")
        if not isinstance(data, dict) or not data:
            return self.err(d, "no data")
        for k, v in data.items():
            if not isinstance(k, str) or not CONFIGMAP_KEY.match(k):
                self.err(d, f"data key {k!r}: not a ConfigMap key")
            if not isinstance(v, str):
                self.err(d, f"data[{k!r}]: not a string")
        if d.name != NODE_CONFIGS:
            return
        configs = {}
        for k, v in data.items():
            if not isinstance(v, str):
                continue
            try:
                configs[k] = strict_json(v)
            except ValueError as e:
                self.err(d, f"data[{k!r}]: not JSON: {e}")
        if os.path.dirname(d.path) == "deploy" and "default" not in data:
            self.err(d, "no \"default\" key: a node without its own key would get no config")
        for cluster in self.find("Cluster"):
            if os.path.dirname(cluster.path) == os.path.dirname(d.path):
                for node in kind_workers(cluster.obj):
                    if node not in data and "default" not in data:
                        self.err(d, f"no key for kind worker {node!r} (nor \"default\")")
        self.node_configs_valid(d, {k: v for k, v in data.items() if k in configs})
        self.tenants_match(d, configs)

    def node_configs_valid(self, d, data):
        """railgate's own validation, through the installer it ships with."""
        if not self.installer or not data:
            return
        with tempfile.TemporaryDirectory(prefix="railgate-manifests-") as tmp:
            paths = []
            for k, v in data.items():
                p = os.path.join(tmp, k)
                with open(p, "w", encoding="utf-8") as f:
                    f.write(v)
                paths.append(p)
            r = subprocess.run([self.installer, "check-config", *paths], capture_output=True,
                               text=True, check=False)
            if r.returncode != 0:
                for line in (r.stderr or r.stdout).strip().splitlines():
                    self.err(d, "node config: " + line.replace(tmp + "/", "data."))

    def tenants_match(self, d, configs):
        """Each tenant namespace label names a tenant that lists that namespace, in every config."""
        for ns in self.find("Namespace"):
            tenant = (ns.obj.get("metadata", {}).get("labels") or {}).get(TENANT_LABEL)
            if tenant is None:
                continue
            for key, cfg in configs.items():
                tenants = {t.get("name"): t for t in cfg.get("tenants", []) if isinstance(t, dict)}
                if tenant not in tenants:
                    self.err(d, f"data[{key!r}]: no tenant {tenant!r}, which namespace {ns.name} "
                                f"is labelled with")
                elif ns.name not in (tenants[tenant].get("namespaces") or []):
                    self.err(d, f"data[{key!r}]: tenant {tenant!r} does not list namespace {ns.name}")

    # ---- DaemonSet ----

    def daemonset(self, d):
        spec = d.obj.get("spec") or {}
        tmpl = spec.get("template") or {}
        labels = (tmpl.get("metadata") or {}).get("labels") or {}
        sel = (spec.get("selector") or {}).get("matchLabels")
        if not isinstance(sel, dict) or not sel:
            self.err(d, "spec.selector.matchLabels: missing or empty")
        else:
            for k, v in sel.items():
                if labels.get(k) != v:
                    self.err(d, f"spec.selector.matchLabels {k}={v}: the pod template's labels "
                                f"do not match it")
        pod = tmpl.get("spec") or {}
        containers = pod.get("containers")
        if not isinstance(containers, list) or not containers:
            return self.err(d, "spec.template.spec.containers: missing or empty")
        inits = pod.get("initContainers") or []
        volumes = pod.get("volumes") or []
        vnames = [v.get("name") for v in volumes]
        for dup in {n for n in vnames if vnames.count(n) > 1}:
            self.err(d, f"volume {dup!r} defined twice")
        cnames = []
        for c in inits + containers:
            name = c.get("name")
            cnames.append(name)
            if not isinstance(name, str) or not DNS_LABEL.match(name):
                self.err(d, f"container {name!r}: no name, or not a DNS label")
            if not isinstance(c.get("image"), str) or not c.get("image"):
                self.err(d, f"container {name!r}: no image")
            for m in c.get("volumeMounts") or []:
                if m.get("name") not in vnames:
                    self.err(d, f"container {name!r}: volumeMount {m.get('name')!r}: no such volume")
                if not str(m.get("mountPath", "")).startswith("/"):
                    self.err(d, f"container {name!r}: volumeMount {m.get('name')!r}: no absolute mountPath")
        for dup in {n for n in cnames if cnames.count(n) > 1}:
            self.err(d, f"container name {dup!r} used twice")
        sa = pod.get("serviceAccountName")
        if sa and not self.find("ServiceAccount", sa, d.namespace):
            self.err(d, f"serviceAccountName {sa!r}: no such ServiceAccount in {d.namespace}")
        for v in volumes:
            if "configMap" in v:
                cm = (v["configMap"] or {}).get("name")
                if not self.find("ConfigMap", cm, d.namespace):
                    self.err(d, f"volume {v.get('name')!r}: no ConfigMap {cm!r} in {d.namespace}")
            if "hostPath" in v and not str((v["hostPath"] or {}).get("path", "")).startswith("/"):
                self.err(d, f"volume {v.get('name')!r}: hostPath.path not absolute")
        for c in inits:
            self.host_paths_mounted(d, c, volumes)
        if d.name == "railgate":
            self.railgate_daemonset(d, pod, inits, containers, volumes)

    def host_paths_mounted(self, d, c, volumes):
        """Every /host/... path in an init container's command lies under one of its mounts."""
        text = " ".join(str(x) for x in (c.get("command") or []) + (c.get("args") or []))
        mounts = [m.get("mountPath", "") for m in c.get("volumeMounts") or []]
        for path in sorted(set(re.findall(r"(?<![A-Za-z0-9_./-])(/host/[A-Za-z0-9_./-]+)", text))):
            if not any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts):
                self.err(d, f"container {c.get('name')!r}: {path} is on no volumeMount")

    def railgate_daemonset(self, d, pod, inits, containers, volumes):
        host = {v.get("name"): (v.get("hostPath") or {}).get("path") for v in volumes if "hostPath" in v}
        plugin = [c for c in containers if "railgate-device-plugin" in (c.get("command") or []) +
                  (c.get("args") or [])]
        if not pod.get("hostNetwork"):
            self.err(d, "hostNetwork must be true: the rail NICs and their link events are in the "
                        "node's network namespace")
        if len(plugin) != 1:
            return self.err(d, "no container runs railgate-device-plugin")
        c = plugin[0]
        argv = (c.get("command") or []) + (c.get("args") or [])
        if not any(argv[i:i + 2] == ["--log-format", "json"] for i in range(len(argv))):
            self.err(d, "railgate-device-plugin does not get --log-format json")
        if not (c.get("securityContext") or {}).get("privileged"):
            self.err(d, "the device plugin's container must be privileged")
        mounted = {m.get("mountPath"): host.get(m.get("name")) for m in c.get("volumeMounts") or []}
        for p in PLUGIN_HOST_PATHS:
            if mounted.get(p) != p:
                self.err(d, f"device plugin: host {p} is not mounted at {p}")
        if self.dra_mode(d):
            self.dra_daemonset(d, pod, c, mounted)
        installer = [i for i in inits if "railgate-cni-install" in json.dumps(i.get("command"))]
        if not installer:
            return self.err(d, "no init container runs railgate-cni-install")
        i = installer[0]
        script = " ".join(str(x) for x in (i.get("command") or []) + (i.get("args") or []))
        for need in ("railgate-cni-install render", "railgate-cni-install install",
                     "--bin-dir /host/opt/cni/bin", "--conf-dir /host/etc/cni/net.d"):
            if need not in script:
                self.err(d, f"init container: {need!r} not in its command")
        envs = {e.get("name"): e for e in i.get("env") or []}
        ref = ((envs.get("NODE_NAME") or {}).get("valueFrom") or {}).get("fieldRef") or {}
        if ref.get("fieldPath") != "spec.nodeName":
            self.err(d, "init container: NODE_NAME must come from fieldRef spec.nodeName")
        imounts = {m.get("mountPath"): host.get(m.get("name")) for m in i.get("volumeMounts") or []}
        for mp, want in (("/host/opt/cni/bin", "/opt/cni/bin"), ("/host/etc/cni/net.d", "/etc/cni/net.d"),
                         ("/etc/railgate", "/etc/railgate")):
            if imounts.get(mp) != want:
                self.err(d, f"init container: host {want} is not mounted at {mp}")

    # ---- ResourceQuota ----

    def quota(self, d):
        hard = (d.obj.get("spec") or {}).get("hard")
        if not isinstance(hard, dict) or not hard:
            return self.err(d, "spec.hard: missing or empty")
        ns = self.find("Namespace", d.namespace)
        tenant = ((ns[0].obj.get("metadata") or {}).get("labels") or {}).get(TENANT_LABEL) if ns else None
        for key, value in hard.items():
            if not QUANTITY.match(str(value)):
                self.err(d, f"spec.hard[{key!r}] = {value!r}: not a quantity")
            if key in STANDARD_QUOTA or key.startswith(("count/", "hugepages-", "requests.hugepages-")):
                continue
            if "/" not in key:
                self.err(d, f"spec.hard key {key!r}: not a quota resource name")
                continue
            if not key.startswith("requests."):
                self.err(d, f"spec.hard key {key!r}: an extended resource is quota'd only as "
                            f"requests.<name>")
                continue
            domain, _, name = key[len("requests."):].partition("/")
            if not DNS_SUBDOMAIN.match(domain) or domain.endswith("kubernetes.io") or \
                    not RESOURCE_NAME.match(name):
                self.err(d, f"spec.hard key {key!r}: not requests.<domain>/<name>")
                continue
            if not re.match(r"^[0-9]+$", str(value)):
                self.err(d, f"spec.hard[{key!r}] = {value!r}: extended resources count whole units")
            if domain == DOMAIN and name != tenant:
                self.err(d, f"spec.hard key {key!r}: namespace {d.namespace} is labelled "
                            f"{TENANT_LABEL}={tenant}, so it can never use this resource")

    # ---- admission ----

    def policy(self, d):
        spec = d.obj.get("spec") or {}
        vals = spec.get("validations")
        if not isinstance(vals, list) or not vals:
            return self.err(d, "spec.validations: missing or empty")
        exprs = []
        for i, v in enumerate(vals):
            if not isinstance(v, dict) or not isinstance(v.get("expression"), str) or \
                    not v["expression"].strip():
                self.err(d, f"spec.validations[{i}]: no expression")
                continue
            exprs.append(v["expression"])
            if "messageExpression" in v:
                exprs.append(str(v["messageExpression"]))
            if v.get("reason", "Forbidden") not in ("Unauthorized", "Forbidden", "Invalid",
                                                    "RequestEntityTooLarge"):
                self.err(d, f"spec.validations[{i}].reason {v.get('reason')!r}: not a reason")
        if spec.get("failurePolicy", "Fail") not in ("Fail", "Ignore"):
            self.err(d, f"spec.failurePolicy {spec.get('failurePolicy')!r}: Fail or Ignore")
        rules = (spec.get("matchConstraints") or {}).get("resourceRules") or []
        if d.name not in POLICY_MATCHES:
            self.err(d, f"a policy this checker has no cases for ({', '.join(POLICY_MATCHES)})")
        else:
            group, resources, ops = POLICY_MATCHES[d.name]
            for res in resources:
                for op in ops:
                    if not any(res in (r.get("resources") or []) and op in (r.get("operations") or [])
                               and group in (r.get("apiGroups") or []) for r in rules):
                        self.err(d, f"spec.matchConstraints.resourceRules: {res} {op} is not matched")
        defined = []
        for i, v in enumerate(spec.get("variables") or []):
            name, expr = v.get("name"), v.get("expression")
            if not isinstance(name, str) or not CEL_IDENT.match(name) or name in defined:
                self.err(d, f"spec.variables[{i}]: name {name!r} not a fresh identifier")
            if not isinstance(expr, str) or not expr.strip():
                self.err(d, f"spec.variables[{i}]: no expression")
                continue
            for used in re.findall(r"variables\.([A-Za-z_][A-Za-z0-9_]*)", expr):
                if used not in defined:
                    self.err(d, f"spec.variables[{i}] ({name}) uses variables.{used} before it is defined")
            defined.append(name)
        for e in exprs:
            for used in re.findall(r"variables\.([A-Za-z_][A-Za-z0-9_]*)", e):
                if used not in defined:
                    self.err(d, f"a validation uses undefined variables.{used}")

    def binding(self, d):
        spec = d.obj.get("spec") or {}
        name = spec.get("policyName")
        if not self.find("ValidatingAdmissionPolicy", name):
            self.err(d, f"spec.policyName {name!r}: no such ValidatingAdmissionPolicy")
        acts = spec.get("validationActions")
        if not isinstance(acts, list) or not acts or len(set(acts)) != len(acts) or \
                not set(acts) <= {"Deny", "Warn", "Audit"}:
            self.err(d, f"spec.validationActions {acts!r}: distinct values of Deny, Warn, Audit")
        elif "Deny" not in acts:
            self.err(d, "spec.validationActions: without Deny the policy stops nothing")

    # ---- DRA ----

    def device_class(self, d):
        """A tenant's class: <tenant>.<domain>, selecting the driver's devices of that tenant only."""
        spec = d.obj.get("spec") or {}
        suffix = "." + DOMAIN
        if not d.name.endswith(suffix):
            return self.err(d, f"a railgate DeviceClass is named <tenant>{suffix} (the admission "
                               f"policies tell railgate's classes by it)")
        tenant = d.name[:-len(suffix)]
        if not any((ns.obj.get("metadata", {}).get("labels") or {}).get(TENANT_LABEL) == tenant
                   for ns in self.find("Namespace")):
            self.err(d, f"no namespace is labelled {TENANT_LABEL}={tenant}")
        exprs = [((x or {}).get("cel") or {}).get("expression", "") for x in spec.get("selectors") or []]
        joined = " && ".join(exprs)
        if f"device.driver == '{DOMAIN}'" not in joined or f".tenant == '{tenant}'" not in joined:
            self.err(d, f"spec.selectors must pin device.driver == '{DOMAIN}' and the tenant "
                        f"attribute to '{tenant}'")
        if spec.get("extendedResourceName") != f"{DOMAIN}/{tenant}":
            self.err(d, f"spec.extendedResourceName {spec.get('extendedResourceName')!r}: "
                        f"want {DOMAIN}/{tenant}, the resource pods ask for")

    def cluster_role(self, d):
        """A grant RBAC cannot bound to the agent's node comes with the policy that does."""
        for rule in d.obj.get("rules") or []:
            for res in rule.get("resources") or []:
                policy = GRANT_POLICIES.get(res)
                if not policy or not set(rule.get("verbs") or []) & {"create", "update", "patch", "delete"}:
                    continue
                here = os.path.dirname(d.path)
                if not any(os.path.dirname(p.path) == here
                           for p in self.find("ValidatingAdmissionPolicyBinding")
                           if (p.obj.get("spec") or {}).get("policyName") == policy) or \
                        not self.find("ValidatingAdmissionPolicy", policy):
                    self.err(d, f"grants writes to {res} but {here}/ has no bound policy {policy} "
                                f"to keep them to the agent's node")

    def cluster_role_binding(self, d):
        ref = (d.obj.get("roleRef") or {}).get("name")
        if ref and not self.find("ClusterRole", ref):
            self.err(d, f"roleRef {ref!r}: no such ClusterRole")
        for sub in d.obj.get("subjects") or []:
            if sub.get("kind") == "ServiceAccount" and \
                    not self.find("ServiceAccount", sub.get("name"), sub.get("namespace")):
                self.err(d, f"subject ServiceAccount {sub.get('namespace')}/{sub.get('name')}: none")

    def dra_mode(self, d):
        """Do the node configs beside this object run the DRA driver?"""
        for cm in self.find("ConfigMap", NODE_CONFIGS):
            if os.path.dirname(cm.path) != os.path.dirname(d.path):
                continue
            for v in (cm.obj.get("data") or {}).values():
                try:
                    if strict_json(v).get("mode") == "dra":
                        return True
                except (ValueError, AttributeError):
                    pass
        return False

    def dra_daemonset(self, d, pod, c, mounted):
        for p in DRA_HOST_PATHS:
            if mounted.get(p) != p:
                self.err(d, f"DRA driver: host {p} is not mounted at {p}")
        ref = ((({e.get("name"): e for e in c.get("env") or []}.get("NODE_NAME") or {})
                .get("valueFrom") or {}).get("fieldRef") or {})
        if ref.get("fieldPath") != "spec.nodeName":
            self.err(d, "DRA driver: NODE_NAME must come from fieldRef spec.nodeName")
        if pod.get("automountServiceAccountToken") is not True:
            self.err(d, "DRA driver: needs its service-account token (automountServiceAccountToken)")

    # ---- kind ----

    def cluster(self, d):
        nodes = d.obj.get("nodes")
        if not isinstance(nodes, list) or not nodes:
            return self.err(d, "nodes: missing or empty")
        roles = [n.get("role") for n in nodes]
        if any(r not in ("control-plane", "worker") for r in roles):
            self.err(d, f"nodes: roles {roles}: control-plane or worker")
        if roles.count("control-plane") != 1 or roles.count("worker") != 2:
            self.err(d, f"nodes: want 1 control-plane and 2 workers, have {roles}")
        if not (d.obj.get("networking") or {}).get("disableDefaultCNI"):
            self.err(d, "networking.disableDefaultCNI: kind/up.sh installs the primary CNI itself")

    def run(self):
        per_kind = {"ConfigMap": self.configmap, "DaemonSet": self.daemonset,
                    "ResourceQuota": self.quota, "ValidatingAdmissionPolicy": self.policy,
                    "ValidatingAdmissionPolicyBinding": self.binding, "Cluster": self.cluster,
                    "DeviceClass": self.device_class, "ClusterRole": self.cluster_role,
                    "ClusterRoleBinding": self.cluster_role_binding}
        for d in self.docs:
            before = len(self.errors)
            self.common(d)
            if len(self.errors) == before and d.kind in per_kind:
                per_kind[d.kind](d)
            self.checked += 1
        self.duplicates()
        return self.errors


def kind_workers(cluster):
    """Node names kind gives the workers: <name>-worker, <name>-worker2, ..."""
    name = cluster.get("name", "kind")
    n = sum(1 for x in cluster.get("nodes") or [] if x.get("role") == "worker")
    return [f"{name}-worker" + (str(i + 1) if i else "") for i in range(n)]


# ---- the checker checks itself on broken copies ----

def _get(docs, path, kind, name=None):
    for d in docs:
        if d.path == path and d.kind == kind and (name is None or d.name == name):
            return d.obj
    raise KeyError(f"{path}: no {kind} {name}")


def _container(docs, role):
    pod = _get(docs, "deploy/daemonset.yaml", "DaemonSet", "railgate")["spec"]["template"]["spec"]
    return pod["initContainers"][0] if role == "init" else pod["containers"][0]


def _pod(docs):
    return _get(docs, "deploy/daemonset.yaml", "DaemonSet", "railgate")["spec"]["template"]["spec"]


def _dra_plugin(docs):
    return _get(docs, "deploy/dra/daemonset.yaml", "DaemonSet", "railgate")["spec"]["template"]["spec"][
        "containers"][0]


def _node_cm(docs):
    return _get(docs, "deploy/configmap.yaml", "ConfigMap", NODE_CONFIGS)["data"]


def _quota(docs, ns):
    for d in docs:
        if d.kind == "ResourceQuota" and d.namespace == ns:
            return d.obj
    raise KeyError(ns)


def _set(obj, key, value):
    obj[key] = value


MUTANTS = [
    ("selector matches no pod label",
     lambda ds: _set(_get(ds, "deploy/daemonset.yaml", "DaemonSet")["spec"]["selector"]["matchLabels"],
                     "app.kubernetes.io/name", "other"), "matchLabels"),
    ("container without image", lambda ds: _container(ds, "plugin").pop("image"), "no image"),
    ("init container without name", lambda ds: _container(ds, "init").pop("name"), "no name"),
    ("volumeMount of no volume",
     lambda ds: _container(ds, "plugin")["volumeMounts"].append({"name": "nope", "mountPath": "/x"}),
     "no such volume"),
    ("/dev not mounted", lambda ds: _set(_pod(ds), "volumes",
                                         [v for v in _pod(ds)["volumes"] if v["name"] != "dev"]),
     "no such volume"),
    ("device plugin without --log-format json",
     lambda ds: _set(_container(ds, "plugin"), "command", ["railgate-device-plugin"]), "--log-format json"),
    ("NODE_NAME not from the downward API", lambda ds: _set(_container(ds, "init"), "env", []),
     "spec.nodeName"),
    ("no hostNetwork", lambda ds: _pod(ds).pop("hostNetwork"), "hostNetwork"),
    ("unknown ServiceAccount", lambda ds: _set(_pod(ds), "serviceAccountName", "railgat"),
     "no such ServiceAccount"),
    ("policy without validations",
     lambda ds: _set(_get(ds, "deploy/admission.yaml", "ValidatingAdmissionPolicy")["spec"], "validations", []),
     "spec.validations"),
    ("validation without expression",
     lambda ds: _get(ds, "deploy/admission.yaml", "ValidatingAdmissionPolicy")["spec"]["validations"][0]
     .pop("expression"), "no expression"),
    ("undefined CEL variable",
     lambda ds: _get(ds, "deploy/admission.yaml", "ValidatingAdmissionPolicy")["spec"]["validations"][0]
     .__setitem__("expression", "size(variables.ofending) == 0"), "variables.ofending"),
    ("binding names no policy",
     lambda ds: _set(_get(ds, "deploy/admission.yaml", "ValidatingAdmissionPolicyBinding")["spec"],
                     "policyName", "railgate-tenant-resource"), "spec.policyName"),
    ("binding with a made-up action",
     lambda ds: _set(_get(ds, "deploy/admission.yaml", "ValidatingAdmissionPolicyBinding")["spec"],
                     "validationActions", ["Block"]), "validationActions"),
    ("quota on limits. of an extended resource",
     lambda ds: _set(_quota(ds, "team-a")["spec"], "hard", {"limits.railgate.io/tenant-a": "8"}),
     "requests.<name>"),
    ("fractional extended resource quota",
     lambda ds: _set(_quota(ds, "team-a")["spec"], "hard", {"requests.railgate.io/tenant-a": "2.5"}),
     "whole units"),
    ("quota for another tenant's resource",
     lambda ds: _set(_quota(ds, "team-a")["spec"], "hard", {"requests.railgate.io/tenant-b": "8"}),
     "never use"),
    ("node config that is no JSON", lambda ds: _set(_node_cm(ds), "default", "{\"tenants\": ["), "not JSON"),
    ("node config with a key railgate does not know",
     lambda ds: _set(_node_cm(ds), "default", json.dumps({"tenants": [], "raisl": []})), "raisl"),
    ("no default node config", lambda ds: _node_cm(ds).pop("default"), "\"default\""),
    ("namespace labelled with a tenant no config has",
     lambda ds: _set(_get(ds, "deploy/tenants.yaml", "Namespace", "team-b")["metadata"]["labels"],
                     TENANT_LABEL, "tenant-x"), "tenant-x"),
    ("object without apiVersion", lambda ds: _get(ds, "deploy/rbac.yaml", "ServiceAccount").pop("apiVersion"),
     "apiVersion"),
    ("object in a namespace nobody creates",
     lambda ds: _set(_get(ds, "deploy/rbac.yaml", "ServiceAccount")["metadata"], "namespace", "railgate-sys"),
     "railgate-sys"),
    ("DRA DaemonSet without the CDI dir",
     lambda ds: _set(_dra_plugin(ds), "volumeMounts",
                     [m for m in _dra_plugin(ds)["volumeMounts"] if m["mountPath"] != "/var/run/cdi"]),
     "/var/run/cdi"),
    ("DRA DaemonSet without its token",
     lambda ds: _get(ds, "deploy/dra/daemonset.yaml", "DaemonSet", "railgate")["spec"]["template"]["spec"]
     .pop("automountServiceAccountToken"), "automountServiceAccountToken"),
    ("DeviceClass selecting another tenant's units",
     lambda ds: _set(_get(ds, "deploy/dra/dra.yaml", "DeviceClass", CLASS_A)["spec"]["selectors"][0]["cel"],
                     "expression", f"device.driver == '{DOMAIN}'"), "spec.selectors"),
    ("DeviceClass serving another tenant's resource",
     lambda ds: _set(_get(ds, "deploy/dra/dra.yaml", "DeviceClass", CLASS_A)["spec"],
                     "extendedResourceName", B), "extendedResourceName"),
    ("claims policy that does not look at templates",
     lambda ds: _set(_get(ds, "deploy/admission.yaml", "ValidatingAdmissionPolicy", "railgate-tenant-claims")
                     ["spec"]["matchConstraints"]["resourceRules"][0], "resources", ["resourceclaims"]),
     "resourceclaimtemplates"),
    ("claims' status policy that does not look at the status subresource",
     lambda ds: _set(_get(ds, "deploy/dra/dra.yaml", "ValidatingAdmissionPolicy", "railgate-node-claims")
                     ["spec"]["matchConstraints"]["resourceRules"][0], "resources", ["resourceclaims"]),
     "resourceclaims/status UPDATE is not matched"),
    ("the agent's claim status writes without their policy",
     lambda ds: ds.remove(next(d for d in ds if d.kind == "ValidatingAdmissionPolicyBinding"
                               and d.name == "railgate-node-claims")), "no bound policy railgate-node-claims"),
    ("binding to no ClusterRole",
     lambda ds: _set(_get(ds, "deploy/dra/dra.yaml", "ClusterRoleBinding")["roleRef"], "name", "railgate-dr"),
     "no such ClusterRole"),
    ("kind cluster with the default CNI",
     lambda ds: _get(ds, "kind/kind-config.yaml", "Cluster").pop("networking"), "disableDefaultCNI"),
]


def self_test(docs, installer):
    """Run the checker on broken copies; returns the mutants it missed."""
    missed = []
    for what, mutate, expect in MUTANTS:
        broken = copy.deepcopy(docs)
        try:
            mutate(broken)
        except (KeyError, IndexError, TypeError) as e:
            missed.append(f"{what}: the manifests changed shape, mutation not applicable ({e!r})")
            continue
        errors = Checker(broken, installer).run()
        if not any(expect in e for e in errors):
            missed.append(f"{what}: not caught (errors: {errors or 'none'})")
    with tempfile.TemporaryDirectory(prefix="railgate-manifests-") as tmp:
        with open(os.path.join(tmp, "bad.yaml"), "w", encoding="utf-8") as f:
            f.write("apiVersion: v1\nkind: [Namespace\n")
        _, errs = load(tmp, ["bad.yaml"])
        if not errs:
            missed.append("a YAML syntax error: not caught")
    return missed


# ---- CEL ----

def ns_obj(name, tenant=None):
    md = {"name": name}
    if tenant:
        md["labels"] = {TENANT_LABEL: tenant, "kubernetes.io/metadata.name": name}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": md}


def pod(ns, containers, inits=None):
    spec = {"containers": containers}
    if inits:
        spec["initContainers"] = inits
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns}, "spec": spec}


def ctr(name, requests=None, limits=None):
    c = {"name": name, "image": "busybox"}
    res = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    if res:
        c["resources"] = res
    return c


A, B = f"{DOMAIN}/tenant-a", f"{DOMAIN}/tenant-b"
DC = "deviceclass.resource.kubernetes.io/"
TEAM_A, TEAM_B, PLAIN = ns_obj("team-a", "tenant-a"), ns_obj("team-b", "tenant-b"), ns_obj("plain")
# (name, pod, namespace, allowed, words the denial message must hold)
CEL_CASES = [
    ("team-a pod requesting railgate.io/tenant-a", pod("team-a", [ctr("c", {A: "2"}, {A: "2"})]),
     TEAM_A, True, []),
    ("team-b pod requesting railgate.io/tenant-a", pod("team-b", [ctr("c", limits={A: "2"})]),
     TEAM_B, False, ["c", "team-b", B]),
    ("pod requesting nothing", pod("team-b", [ctr("c")]), TEAM_B, True, []),
    ("pod with cpu and memory only, unlabelled namespace",
     pod("plain", [ctr("c", {"cpu": "1", "memory": "1Gi"}, {"memory": "1Gi"})]), PLAIN, True, []),
    ("unlabelled namespace requesting railgate.io/tenant-a", pod("plain", [ctr("c", {A: "1"}, {A: "1"})]),
     PLAIN, False, ["none"]),
    ("team-a pod whose init container limits railgate.io/tenant-b",
     pod("team-a", [ctr("main", {A: "1"}, {A: "1"})], [ctr("setup", limits={B: "1"})]),
     TEAM_A, False, ["setup", A]),
    ("team-a pod using tenant-a in init and main containers",
     pod("team-a", [ctr("main", {A: "2"}, {A: "2"})], [ctr("setup", {A: "1"}, {A: "1"})]),
     TEAM_A, True, []),
    ("team-a pod requesting railgate.io/tenant-ab (a prefix is not the resource)",
     pod("team-a", [ctr("c", {A + "b": "1"}, {A + "b": "1"})]), TEAM_A, False, ["c"]),
    ("team-b pod with another vendor's resource", pod("team-b", [ctr("c", limits={"example.com/gpu": "1"})]),
     TEAM_B, True, []),
    # a DeviceClass is also its own extended resource, deviceclass.resource.kubernetes.io/<class>
    ("team-b pod requesting tenant-a's DeviceClass by its implicit name",
     pod("team-b", [ctr("c", {DC + "tenant-a." + DOMAIN: "1"}, {DC + "tenant-a." + DOMAIN: "1"})]),
     TEAM_B, False, ["c", "team-b"]),
    ("team-a pod requesting its own DeviceClass by its implicit name",
     pod("team-a", [ctr("c", {DC + "tenant-a." + DOMAIN: "2"}, {DC + "tenant-a." + DOMAIN: "2"})]),
     TEAM_A, True, []),
    ("unlabelled namespace requesting a railgate DeviceClass by its implicit name",
     pod("plain", [ctr("c", limits={DC + "tenant-b." + DOMAIN: "1"})]), PLAIN, False, ["none"]),
    ("team-b pod requesting another vendor's DeviceClass by its implicit name",
     pod("team-b", [ctr("c", limits={DC + "gpu.nvidia.com": "1"})]), TEAM_B, True, []),
]


def request(name, cls=None, first=None, selectors=None):
    """A DRA device request: exactly one class, or firstAvailable of several."""
    if first:
        return {"name": name, "firstAvailable": [{"name": f"s{i}", "deviceClassName": c}
                                                for i, c in enumerate(first)]}
    exactly = {"deviceClassName": cls, "count": 1}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def claim(ns, requests, config=None, template=False):
    devices = {"requests": requests}
    if config:
        devices["config"] = config
    if template:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": ns}, "spec": {"spec": {"devices": devices}}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": ns}, "spec": {"devices": devices}}


CLASS_A, CLASS_B = f"tenant-a.{DOMAIN}", f"tenant-b.{DOMAIN}"
OPAQUE_A = [{"requests": ["gpus"], "opaque": {"driver": DOMAIN, "parameters": {
    "tenant": "tenant-a", "units": ["rail0", "rail1"], "namespace": "team-a"}}}]
CLAIM_CEL_CASES = [
    ("team-a claim of its own class", claim("team-a", [request("gpus", CLASS_A)]), TEAM_A, True, []),
    ("team-b claim of tenant-a's class", claim("team-b", [request("gpus", CLASS_A)]), TEAM_B, False,
     ["gpus", "team-b", CLASS_B]),
    ("unlabelled namespace claiming a railgate class", claim("plain", [request("gpus", CLASS_B)]),
     PLAIN, False, ["none"]),
    ("team-b claim with tenant-a's class as a firstAvailable fallback",
     claim("team-b", [request("ok", CLASS_B), request("gpus", first=[CLASS_B, CLASS_A])]), TEAM_B,
     False, ["gpus"]),
    ("team-b claim template of tenant-a's class",
     claim("team-b", [request("gpus", CLASS_A)], template=True), TEAM_B, False, ["gpus"]),
    ("team-b claim template of its own class", claim("team-b", [request("gpus", CLASS_B)], template=True),
     TEAM_B, True, []),
    ("team-a claim of tenant-ab's class (a prefix is not the class)",
     claim("team-a", [request("gpus", f"tenant-ab.{DOMAIN}")]), TEAM_A, False, ["gpus"]),
    ("team-b claim of another vendor's class", claim("team-b", [request("gpus", "gpu.nvidia.com")]),
     TEAM_B, True, []),
    # its own class bounds what a claim can get: selectors only narrow, config decides nothing
    ("team-b claim of its own class selecting tenant-a's attribute (gets nothing of tenant-a's)",
     claim("team-b", [request("gpus", CLASS_B,
                              selectors=[f"device.attributes['{DOMAIN}'].tenant == 'tenant-a'"])]),
     TEAM_B, True, []),
    ("team-b claim of its own class with opaque config naming tenant-a (never read for isolation)",
     claim("team-b", [request("gpus", CLASS_B)], config=OPAQUE_A), TEAM_B, True, []),
    ("claim without requests", claim("team-b", []), TEAM_B, True, []),
]


def agent(node):
    extra = {"authentication.kubernetes.io/node-name": [node]} if node else {}
    return {"userInfo": {"username": "system:serviceaccount:railgate-system:railgate", "extra": extra}}


def rslice(node, driver=DOMAIN):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                 "resourceSliceCount": 1}}}


KUBELET = {"userInfo": {"username": "system:node:n1", "extra": {}}}
# (name, object, oldObject, request, allowed, words)
SLICE_CEL_CASES = [
    ("agent on n1 creates a slice of n1", rslice("n1"), None, agent("n1"), True, []),
    ("agent on n1 updates a slice of n1", rslice("n1"), rslice("n1"), agent("n1"), True, []),
    ("agent on n1 deletes a slice of n1", None, rslice("n1"), agent("n1"), True, []),
    ("agent on n1 creates a slice of n2", rslice("n2"), None, agent("n1"), False, ["n1"]),
    ("agent on n1 deletes a slice of n2", None, rslice("n2"), agent("n1"), False, ["n1"]),
    ("agent on n1 moves n2's slice to n1", rslice("n1"), rslice("n2"), agent("n1"), False, ["n1"]),
    ("agent on n1 creates a slice of another driver", rslice("n1", "gpu.nvidia.com"), None, agent("n1"),
     False, [DOMAIN]),
    ("agent whose token names no node", rslice("n1"), None, agent(None), False, ["unknown"]),
    ("kubelet of n1 deletes its node's slices (not the agent)", None, rslice("n1"), KUBELET, True, []),
]


def node_selector(*nodes, expressions=False):
    """An allocation's node selector: one term, metadata.name In nodes (the scheduler's form for
    a node-local slice), with a matchExpressions beside it when asked."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(nodes)}]}
    if expressions:
        term["matchExpressions"] = [{"key": "zone", "operator": "In", "values": ["z1"]}]
    return {"nodeSelectorTerms": [term]}


def rail_status(node, device, ip="10.0.0.11/24", driver=DOMAIN):
    return {"driver": driver, "pool": node, "device": device,
            "networkData": {"interfaceName": device, "ips": [ip]}}


def rclaim(node, devices=(), reserved=("p1",), selector=None, allocated=True):
    """team-a/c allocated rail0 and rail1 of node's pool (and a GPU of another driver), reserved
    for the pods named, with the status.devices entries given."""
    status = {}
    if allocated:
        status["allocation"] = {
            "devices": {"results": [
                {"request": "r", "driver": DOMAIN, "pool": node, "device": "rail0"},
                {"request": "r", "driver": DOMAIN, "pool": node, "device": "rail1"},
                {"request": "g", "driver": "gpu.nvidia.com", "pool": node, "device": "gpu0"}]},
            "nodeSelector": selector or node_selector(node)}
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in reserved]
    if devices:
        status["devices"] = list(devices)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "team-a", "uid": "claim-uid"},
            "spec": {"devices": {"requests": []}}, "status": status}


GPU_N1 = rail_status("n1", "gpu0", driver="gpu.nvidia.com")
GPU_N1_CHANGED = dict(GPU_N1, networkData={"interfaceName": "gpu0", "ips": ["10.9.9.9/24"]})
SCHEDULER = {"userInfo": {"username": "system:kube-scheduler", "extra": {}}}
# (name, object, oldObject, request, allowed, words): status writes of a claim
CLAIM_STATUS_CEL_CASES = [
    ("agent on n1 writes networkData into a claim allocated on n1",
     rclaim("n1", [rail_status("n1", "rail0"), rail_status("n1", "rail1")]), rclaim("n1"), agent("n1"), True, []),
    ("agent on n1 changes its entry of a claim on n1, beside another driver's",
     rclaim("n1", [GPU_N1, rail_status("n1", "rail0", "10.0.0.12/24")]),
     rclaim("n1", [GPU_N1, rail_status("n1", "rail0")]), agent("n1"), True, []),
    ("agent on n1 removes its entries from a claim on n1",
     rclaim("n1", [GPU_N1]), rclaim("n1", [rail_status("n1", "rail0"), GPU_N1]), agent("n1"), True, []),
    ("agent on n1 writes networkData into a claim allocated on n2",
     rclaim("n2", [rail_status("n2", "rail0")]), rclaim("n2"), agent("n1"), False,
     ["agent on node n1", "team-a/c is allocated on node n2"]),
    ("agent on n1 removes n2's agent's entries from a claim on n2",
     rclaim("n2"), rclaim("n2", [rail_status("n2", "rail0")]), agent("n1"), False, ["on node n2"]),
    ("agent on n1 applies nothing new to a claim on n2 (its claim was deallocated there: a no-op)",
     rclaim("n2", [rail_status("n2", "rail0")]), rclaim("n2", [rail_status("n2", "rail0")]), agent("n1"),
     True, []),
    ("agent on n1 writes into a claim allocated on n1 and n2 (no single node)",
     rclaim("n1", [rail_status("n1", "rail0")], selector=node_selector("n1", "n2")),
     rclaim("n1", selector=node_selector("n1", "n2")),
     agent("n1"), False, ["on no single node"]),
    ("agent on n1 writes into a claim on n1 whose selector also has matchExpressions",
     rclaim("n1", [rail_status("n1", "rail0")], selector=node_selector("n1", expressions=True)),
     rclaim("n1", selector=node_selector("n1", expressions=True)),
     agent("n1"), False, ["on no single node"]),
    ("agent on n1 writes into a claim that is not allocated",
     rclaim("n1", [rail_status("n1", "rail0")], allocated=False), rclaim("n1", allocated=False), agent("n1"),
     False, ["on no single node"]),
    ("agent whose token names no node writes into a claim on n1",
     rclaim("n1", [rail_status("n1", "rail0")]), rclaim("n1"), agent(None), False, ["unknown"]),
    ("agent on n1 moves a claim on n2 to n1 (status.allocation)",
     rclaim("n1", [rail_status("n1", "rail0")]), rclaim("n2"), agent("n1"), False, ["status.allocation"]),
    ("agent on n1 deallocates a claim on n1 (status.allocation)",
     rclaim("n1", allocated=False), rclaim("n1"), agent("n1"), False, ["status.allocation", "team-a/c"]),
    ("agent on n1 reserves a claim on n1 for another pod (status.reservedFor)",
     rclaim("n1", reserved=("p1", "p2")), rclaim("n1"), agent("n1"), False, ["status.reservedFor"]),
    ("agent on n1 releases a claim on n1 (status.reservedFor)",
     rclaim("n1", reserved=()), rclaim("n1"), agent("n1"), False, ["status.reservedFor"]),
    ("agent on n1 changes another driver's entry of a claim on n1",
     rclaim("n1", [GPU_N1_CHANGED]), rclaim("n1", [GPU_N1]), agent("n1"), False,
     ["only status.devices entries of driver railgate.io", "gpu.nvidia.com"]),
    ("agent on n1 adds another driver's entry to a claim on n1",
     rclaim("n1", [rail_status("n1", "rail0"), GPU_N1]), rclaim("n1"), agent("n1"), False, ["gpu.nvidia.com"]),
    ("agent on n1 removes another driver's entry from a claim on n1",
     rclaim("n1", [rail_status("n1", "rail0")]), rclaim("n1", [GPU_N1]), agent("n1"), False, ["gpu.nvidia.com"]),
    ("the scheduler allocates a claim (not the agent: the policy does not apply)",
     rclaim("n2"), rclaim("n2", allocated=False, reserved=()), SCHEDULER, True, []),
]


# policy -> (its cases as (name, case dict, allowed, words), how to break it for the self-test)
def _pod_cases():
    return [(n, {"object": o, "namespaceObject": ns}, a, w) for n, o, ns, a, w in CEL_CASES]


def _claim_cases():
    return [(n, {"object": o, "namespaceObject": ns}, a, w) for n, o, ns, a, w in CLAIM_CEL_CASES]


def _slice_cases():
    return [(n, {"object": o, "oldObject": old, "request": r}, a, w)
            for n, o, old, r, a, w in SLICE_CEL_CASES]


def _claim_status_cases():
    return [(n, {"object": o, "oldObject": old, "request": r}, a, w)
            for n, o, old, r, a, w in CLAIM_STATUS_CEL_CASES]


POLICY_CASES = {
    "railgate-tenant-resources": (_pod_cases, ("variables", "!= variables.allowed", "== variables.allowed")),
    "railgate-tenant-claims": (_claim_cases, ("variables", "!= variables.allowed", "== variables.allowed")),
    "railgate-node-slices": (_slice_cases, ("validations", "nodeName == variables.node",
                                            "nodeName != variables.node")),
    "railgate-node-claims": (_claim_status_cases, ("validations", "variables.allocatedNode == variables.node",
                                                   "variables.allocatedNode != variables.node")),
}


def cel_evaluator(cache):
    """Path of the CEL evaluator's entry file, installing it into cache; (path, None) or (None, why)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node:
        return None, "node is not installed"
    entry = os.path.join(cache, "node_modules", *CEL_PACKAGE.split("/"), "lib", "index.js")
    pkg = os.path.join(cache, "node_modules", *CEL_PACKAGE.split("/"), "package.json")
    try:
        with open(pkg, encoding="utf-8") as f:
            if json.load(f).get("version") == CEL_VERSION and os.path.exists(entry):
                return entry, None
    except (OSError, ValueError):
        pass
    if not npm:
        return None, "npm is not installed"
    os.makedirs(cache, exist_ok=True)
    env = dict(os.environ, npm_config_cache=os.path.join(cache, "npm-cache"),
               npm_config_update_notifier="false", npm_config_fund="false", npm_config_audit="false")
    try:
        r = subprocess.run([npm, "install", "--prefix", cache, "--no-package-lock", "--loglevel=error",
                            f"{CEL_PACKAGE}@{CEL_VERSION}"], capture_output=True, text=True,
                           timeout=180, env=env, check=False)
    except subprocess.TimeoutExpired:
        return None, f"npm install {CEL_PACKAGE}@{CEL_VERSION} did not finish in 180 s"
    if r.returncode != 0 or not os.path.exists(entry):
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        return None, f"npm install {CEL_PACKAGE}@{CEL_VERSION} failed: {tail[0]}"
    return entry, None


def cel_run(entry, spec, cases):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cel-eval.mjs")
    payload = {"module": entry, "spec": spec, "cases": [dict(c, name=n) for n, c, _, _ in cases]}
    r = subprocess.run(["node", script], input=json.dumps(payload), capture_output=True, text=True,
                       timeout=60, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"cel-eval.mjs failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def cel_judge(cases, results):
    """(failures, not_checked) lines."""
    failures, unchecked = [], []
    for (name, _, allowed, words), res in zip(cases, results):
        if res.get("error"):
            err = res["error"]
            # a construct the evaluator cannot parse is a gap of the evaluator, not a verdict
            if "parse" in err.lower() or "syntax" in err.lower() or "unexpected" in err.lower():
                unchecked.append(f"{name}: the evaluator could not parse the policy: {err}")
            else:
                failures.append(f"{name}: evaluation failed: {err}")
            continue
        if res["allowed"] != allowed:
            failures.append(f"{name}: {'allowed' if res['allowed'] else 'denied'}, want "
                            f"{'allowed' if allowed else 'denied'} ({res.get('message')})")
            continue
        missing = [w for w in words if w not in res["message"]]
        if missing:
            failures.append(f"{name}: denial message {res['message']!r} lacks {missing}")
    return failures, unchecked


def check_cel(docs, cache):
    """Returns (passed lines, failures, not-checked lines)."""
    policies = [d for d in docs if d.kind == "ValidatingAdmissionPolicy"]
    entry, why = cel_evaluator(cache)
    if not entry:
        return [], [], [f"CEL of {d.where()} on its sample requests ({why})" for d in policies]
    passed, failures, unchecked = [], [], []
    for d in policies:
        spec = d.obj["spec"]
        make_cases, (where, right, wrong_op) = POLICY_CASES[d.name]
        cases = make_cases()
        results = cel_run(entry, spec, cases)
        f, u = cel_judge(cases, results)
        failures += [f"{d.where()}: CEL: {x}" for x in f]
        unchecked += [f"{d.where()}: CEL: {x}" for x in u]
        if not f and not u:
            for (name, _, allowed, _), res in zip(cases, results):
                passed.append(f"CEL {d.name}: {name}: {'allowed' if allowed else 'denied'}"
                              + ("" if allowed else f" ({res['message']})"))
            # and the evaluation tells a wrong policy from a right one
            wrong = copy.deepcopy(spec)
            for v in wrong.get(where, []):
                v["expression"] = v["expression"].replace(right, wrong_op)
            f2, _ = cel_judge(cases, cel_run(entry, wrong, cases))
            if not f2:
                failures.append(f"{d.where()}: CEL self-test: a policy with {right!r} turned into "
                                f"{wrong_op!r} passed the sample requests too")
    return passed, failures, unchecked


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="the repository root")
    ap.add_argument("--installer", help="railgate-cni-install, for the node config validation")
    ap.add_argument("--cache", help="where npm installs the CEL evaluator (a build dir)")
    ap.add_argument("--no-cel", action="store_true", help="skip the CEL evaluation")
    args = ap.parse_args()

    notes = []
    installer = args.installer
    if installer and not os.access(installer, os.X_OK):
        print(f"check-manifests: {installer}: not executable", file=sys.stderr)
        return 2
    if not installer:
        notes.append("node configs against railgate's validation (no --installer given)")

    files = manifest_files(args.root)
    docs, errors = load(args.root, files)
    for f in files:
        print(f"  file {f}: {sum(1 for d in docs if d.path == f)} object(s)")
    checker = Checker(docs, installer)
    errors += checker.run()
    failing = {e.split(": ")[0] for e in errors}
    passed = sum(1 for d in docs if d.where() not in failing)
    print(f"  ok   {passed} of {len(docs)} objects hold together")

    if not errors:
        missed = self_test(docs, installer)
        errors += [f"self-test: {m}" for m in missed]
        passed += len(MUTANTS) + 1 - len(missed)
        if not missed:
            print(f"  ok   self-test: all {len(MUTANTS) + 1} broken copies of the manifests were caught")

    if args.no_cel:
        notes.append("CEL evaluation of the admission policy (--no-cel)")
    elif not errors:
        try:
            cel_passed, cel_failed, cel_unchecked = check_cel(docs, args.cache or tempfile.mkdtemp())
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            cel_passed, cel_failed, cel_unchecked = [], [f"CEL evaluation: {e}"], []
        for p in cel_passed:
            print(f"  ok   {p}")
        errors += cel_failed
        notes += cel_unchecked
        passed += len(cel_passed)

    for e in errors:
        print(f"  FAIL {e}")
    for n in notes:
        print(f"  NOT CHECKED: {n}")
    print(f"manifests: {passed} passed, {len(errors)} failed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
