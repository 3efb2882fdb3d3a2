#!/usr/bin/python3
"""The Kubernetes example (tools/k8s/*.yaml, docs/operator-guide.md
"Kubernetes"), checked three ways:

1. schema: every object against the Kubernetes API's own types, as the
   Debian package python3-kubernetes carries them (its models are
   generated from the API's OpenAPI definition): every field must exist in
   its type (a misspelt `readinesProbe` fails), every value must have the
   field's type, and the required fields must be there (the models refuse
   a missing `containers`). A deliberately broken copy must fail, so the
   check itself can fail;
2. what the runner needs: the container runs gst-spice-run, its
   environment sets only variables the named shipped pipeline has (and
   PIPELINE), the password files come from the mounted Secret, the probes
   ask /ready and /healthz on the --metrics port, the Service targets the
   SPICE port, the Deployment never runs two pipelines for one session;
   resources are at least what bench/sessions.py measured
   (docs/benchmarks/sessions.json), and the systemd unit's CPUQuota=,
   MemoryMax= and TasksMax= likewise;
3. Pod Security "restricted", each check of the profile that a manifest
   shows (seccomp RuntimeDefault, non-root, no privilege escalation, all
   capabilities dropped, allowed volume types, no host namespaces, ports
   or paths), plus a read-only root file system with writable volumes for
   the registry and /tmp; broken copies must fail;
4. SPICE over TLS only: the plain port off (LISTEN_PORT=-1), the
   certificate and key from a mounted Secret, the Service exposing only the
   TLS port;
5. the image recipe (tools/k8s/Containerfile) linted without a container
   runtime: its stages, the packages (the build stage's from
   tools/debian-packages.txt; the runtime stage's must provide every
   library the built binaries need, checked with dpkg and apt-cache),
   the user the pod runs as, the entry point, the image name the manifest
   uses;
6. the container's command, arguments and environment run here (paths of
   the mounted secrets moved to a temporary directory, a certificate made
   with openssl) against a test guest with the Secret's upstream ticket:
   /ready turns 200, /healthz is 200, and a spice-gtk client over TLS with
   the CA and the Secret's password gets the picture through the Service
   port.

  test-k8s.py   (GST_SPICE_SOURCE_DIR, GST_SPICE_BUILD_DIR from meson)
"""
import datetime
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import yaml

SRC = os.environ.get("GST_SPICE_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GST_SPICE_BUILD_DIR") or os.path.join(SRC, "build")
sys.path.insert(0, os.path.join(SRC, "tests", "install"))
sys.path.insert(0, os.path.join(SRC, "bench"))
from optest import check, finish, free_ports, wait_port  # noqa: E402

try:
    import kubernetes.client as k8s
    from kubernetes.client import ApiClient
except ImportError:
    print("python3-kubernetes is missing (tools/debian-packages.txt)")
    sys.exit(1)

KINDS = {("v1", "Secret"): "V1Secret", ("v1", "Service"): "V1Service",
         ("v1", "ConfigMap"): "V1ConfigMap", ("apps/v1", "Deployment"): "V1Deployment",
         ("v1", "Pod"): "V1Pod"}


def schema_errors(value, typ, where):
    """Errors of @value against the python3-kubernetes type name @typ."""
    errs = []
    if typ.startswith("list["):
        if not isinstance(value, list):
            return ["%s: not a list" % where]
        for i, v in enumerate(value):
            errs += schema_errors(v, typ[5:-1], "%s[%d]" % (where, i))
        return errs
    if typ.startswith("dict("):
        if not isinstance(value, dict):
            return ["%s: not a map" % where]
        vt = typ[5:-1].split(",", 1)[1].strip()
        for k, v in value.items():
            errs += schema_errors(v, vt, "%s.%s" % (where, k))
        return errs
    if typ == "str":
        return [] if isinstance(value, str) else ["%s: %r is not a string" % (where, value)]
    if typ == "int":
        return [] if isinstance(value, int) and not isinstance(value, bool) else \
            ["%s: %r is not an integer" % (where, value)]
    if typ == "bool":
        return [] if isinstance(value, bool) else ["%s: %r is not a boolean" % (where, value)]
    if typ == "object":             # IntOrString, quantities, free objects
        return []
    if typ == "datetime":
        return [] if isinstance(value, (str, datetime.datetime)) else ["%s: not a time" % where]
    cls = getattr(k8s, typ, None)
    if cls is None:
        return ["%s: unknown type %s" % (where, typ)]
    if not isinstance(value, dict):
        return ["%s: %r is not a %s" % (where, value, typ)]
    by_json = {j: a for a, j in cls.attribute_map.items()}
    for k, v in value.items():
        if k not in by_json:
            errs.append("%s: %s has no field %r" % (where, typ, k))
            continue
        errs += schema_errors(v, cls.openapi_types[by_json[k]], "%s.%s" % (where, k))
    return errs


def validate(doc, name):
    """Schema errors of one manifest object (empty: valid)."""
    key = (doc.get("apiVersion"), doc.get("kind"))
    typ = KINDS.get(key)
    if not typ:
        return ["%s: unexpected apiVersion/kind %s" % (name, key)]
    errs = schema_errors(doc, typ, "%s %s" % (name, doc["kind"]))
    if not errs:
        try:             # required fields: the models refuse None
            ApiClient()._ApiClient__deserialize(doc, typ)
        except ValueError as e:
            errs.append("%s %s: %s" % (name, doc["kind"], e))
    return errs


def pipeline_variables(name):
    text = open(os.path.join(SRC, "pipelines", name + ".pipeline")).read()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return set(re.findall(r"\$\{([A-Z0-9_]+)", body))


def quantity_cores(q):
    q = str(q)
    return int(q[:-1]) / 1000 if q.endswith("m") else float(q)


def quantity_mib(q):
    q = str(q)
    for suf, mul in (("Gi", 1024), ("Mi", 1), ("Ki", 1 / 1024)):
        if q.endswith(suf):
            return float(q[:-len(suf)]) * mul
    return float(q) / 2 ** 20


# Pod Security Standards (kubernetes.io/docs/concepts/security/
# pod-security-standards), "baseline" and "restricted", as far as a
# manifest shows them
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
                "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t",
                 "container_engine_t"}


def restricted_errors(pod):
    """What keeps the pod spec @pod from Pod Security "restricted" (and
    from a read-only root file system)."""
    errs = []
    psc = pod.get("securityContext") or {}
    containers = [(k, c) for k in ("initContainers", "containers", "ephemeralContainers")
                  for c in pod.get(k) or []]
    for f in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(f):
            errs.append("%s is set" % f)
    for v in pod.get("volumes") or []:
        kinds = set(v) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            errs.append("volume %s is %s" % (v.get("name"), sorted(kinds)))
    for s in psc.get("sysctls") or []:
        if s.get("name") not in SAFE_SYSCTLS:
            errs.append("sysctl %s" % s.get("name"))
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    for k, c in containers:
        sc = c.get("securityContext") or {}
        name = "%s %s" % (k, c.get("name"))
        if sc.get("privileged"):
            errs.append("%s is privileged" % name)
        if (sc.get("windowsOptions") or {}).get("hostProcess") or \
                (psc.get("windowsOptions") or {}).get("hostProcess"):
            errs.append("%s is a host process" % name)
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                errs.append("%s uses hostPort %s" % (name, p["hostPort"]))
        for ctx in (sc, psc):
            se = ctx.get("seLinuxOptions") or {}
            if se.get("type", "") not in SELINUX_TYPES or se.get("user") or se.get("role"):
                errs.append("%s: seLinuxOptions %s" % (name, se))
        if sc.get("procMount", "Default") != "Default":
            errs.append("%s: procMount %s" % (name, sc["procMount"]))
        seccomp = (sc.get("seccompProfile") or {}).get("type") or pod_seccomp
        if seccomp not in ("RuntimeDefault", "Localhost"):
            errs.append("%s: seccompProfile %s (RuntimeDefault or Localhost)" % (name, seccomp))
        if sc.get("allowPrivilegeEscalation") is not False:
            errs.append("%s: allowPrivilegeEscalation is not false" % name)
        if not (sc.get("runAsNonRoot") is True or
                (psc.get("runAsNonRoot") is True and sc.get("runAsNonRoot") is not False)):
            errs.append("%s: runAsNonRoot is not true" % name)
        if sc.get("runAsUser") == 0 or psc.get("runAsUser") == 0:
            errs.append("%s: runAsUser 0" % name)
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            errs.append("%s: capabilities do not drop ALL" % name)
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            errs.append("%s: adds capabilities %s" % (name, caps["add"]))
        if sc.get("readOnlyRootFilesystem") is not True:
            errs.append("%s: root file system not read-only" % name)
    return errs


def containerfile(path):
    """(instruction, arguments) of a Containerfile, continuation lines
    joined, comments dropped."""
    out, cur = [], ""
    for line in open(path):
        line = line.rstrip("\n")
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if cur and line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur = " ".join((cur + line).split())
        word, _, rest = cur.partition(" ")
        out.append((word.upper(), rest.strip()))
        cur = ""
    return out


def package_section(name):
    """Packages of a "# NAME" section of tools/debian-packages.txt"""
    pk, on = [], False
    for line in open(os.path.join(SRC, "tools", "debian-packages.txt")):
        line = line.strip()
        if line.startswith("#"):
            on = line == "# " + name
        elif line and on:
            pk.append(line)
    return pk


def lint_containerfile(c, pod):
    path = os.path.join(SRC, "tools", "k8s", "Containerfile")
    if not check(os.path.exists(path), "tools/k8s/Containerfile exists"):
        return
    ins = containerfile(path)
    known = {"FROM", "RUN", "COPY", "ADD", "ENV", "ARG", "USER", "WORKDIR", "EXPOSE",
             "ENTRYPOINT", "CMD", "LABEL", "VOLUME", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
    check(all(i in known for i, _ in ins), "every instruction is a Containerfile "
          "instruction: %s" % [i for i, _ in ins if i not in known])
    stages = [a.split() for i, a in ins if i == "FROM"]
    check(len(stages) == 2 and all(st[0] == "debian:12" for st in stages) and
          stages[0][1:] == ["AS", "build"],
          "two stages from debian:12, the first named build: %s" % stages)
    final = ins[max(k for k, (i, _) in enumerate(ins) if i == "FROM"):]
    build = ins[:max(k for k, (i, _) in enumerate(ins) if i == "FROM")]
    for i, a in ins:
        if i == "COPY" and not a.startswith("--from="):
            for src in a.split()[:-1]:
                check(src == "." or os.path.exists(os.path.join(SRC, src)),
                      "COPY source %s is in the tree" % src)
    check(any(i == "COPY" and a.split()[0] == "--from=build" for i, a in final),
          "the runtime stage copies the build stage's install")
    run_b = " ".join(a for i, a in build if i == "RUN")
    check("--prefix=/usr" in run_b and "meson install" in run_b and "--destdir /out" in run_b,
          "the build stage installs with --prefix=/usr into /out")
    m = re.search(r"sed -n '/\^# (\w+)\$/", run_b)
    check(m and package_section(m.group(1)) and "meson" in package_section(m.group(1)),
          "the build stage installs the \"# build\" packages of tools/debian-packages.txt")
    # the runtime stage's packages: real Debian 12 packages that provide
    # every library the built binaries link
    run_f = " ".join(a for i, a in final if i == "RUN")
    m = re.search(r"apt-get install -y --no-install-recommends ((?:[a-z0-9.+-]+ ?)+)", run_f)
    pkgs = m.group(1).split() if m else []
    check(pkgs, "the runtime stage installs packages")
    r = subprocess.run(["apt-cache", "show", "--no-all-versions"] + pkgs,
                       capture_output=True, text=True)
    found = set(re.findall(r"^Package: (\S+)", r.stdout, re.M))
    check(set(pkgs) <= found, "Debian knows the runtime packages (apt-cache): "
          "missing %s" % sorted(set(pkgs) - found))
    r = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends",
                        "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
                        "--no-enhances"] + pkgs,
                       capture_output=True, text=True)
    closure = {line.strip().split(":")[0] for line in r.stdout.splitlines()
               if line and not line.startswith(" ")}
    needed = set()
    for binary in (os.path.join(BUILD, "plugins", "libgstspice.so"),
                   os.path.join(BUILD, "tools", "runner", "gst-spice-run"),
                   glob.glob(os.path.join(BUILD, "gst-libs", "gst", "spice",
                                          "libgstspice-1.0.so.*.*"))[0]):
        d = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
        needed |= set(re.findall(r"Shared library: \[(\S+)\]", d))
    missing = []
    for so in sorted(needed):
        # ours, and a sanitized build's runtimes (not in a release build)
        if so.startswith(("libgstspice", "libasan.", "libubsan.", "liblsan.",
                          "libtsan.")):
            continue
        r = subprocess.run(["dpkg", "-S", "/usr/lib/x86_64-linux-gnu/" + so],
                           capture_output=True, text=True)
        if r.returncode != 0:
            r = subprocess.run(["dpkg", "-S", "/lib/x86_64-linux-gnu/" + so],
                               capture_output=True, text=True)
        owner = r.stdout.split(":")[0] if r.returncode == 0 else "?"
        if owner not in closure:
            missing.append("%s (%s)" % (so, owner))
    check(needed and not missing, "the runtime stage's packages provide every library the "
          "plugin, libgstspice-1.0 and the runner link: missing %s" % missing)
    for el in ("vp8enc", "jpegenc", "opusenc", "audioconvert", "videoconvert", "webmmux"):
        f = subprocess.run(["gst-inspect-1.0", el], capture_output=True, text=True).stdout
        so = re.search(r"Filename\s+(\S+)", f)
        r = subprocess.run(["dpkg", "-S", so.group(1).replace("/lib/", "/usr/lib/", 1)
                            if so and so.group(1).startswith("/lib/") else
                            (so.group(1) if so else "?")], capture_output=True, text=True)
        owner = r.stdout.split(":")[0]
        check(owner in closure, "the image has %s of the shipped pipelines (%s)" % (el, owner))
    user = [a for i, a in final if i == "USER"]
    psc = pod.get("securityContext") or {}
    check(user and user[-1] == "%s:%s" % (psc.get("runAsUser"), psc.get("runAsGroup")),
          "the image's USER is the pod's runAsUser:runAsGroup: %s" % user)
    ep = [json.loads(a) for i, a in final if i == "ENTRYPOINT"]
    check(ep and ep[-1] == c["command"], "ENTRYPOINT is the container's command %s" % ep)
    text = open(path).read()
    check(c["image"] in text, "the Containerfile documents the image name %s" % c["image"])
    expose = {int(p) for i, a in final if i == "EXPOSE" for p in a.split()}
    check({p["containerPort"] for p in c["ports"]} <= expose,
          "the image EXPOSEs the container's ports")


def main():
    files = sorted(glob.glob(os.path.join(SRC, "tools", "k8s", "*.yaml")))
    check(files, "manifests in tools/k8s")
    docs = []
    for path in files:
        for d in yaml.safe_load_all(open(path)):
            if d:
                docs.append((os.path.basename(path), d))
    # 1. schema
    for name, d in docs:
        errs = validate(d, name)
        check(not errs, "%s %s matches the Kubernetes API types%s" % (
            name, d.get("kind"), ": " + "; ".join(errs) if errs else ""))
    dep = next((d for _, d in docs if d["kind"] == "Deployment"), None)
    svc = next((d for _, d in docs if d["kind"] == "Service"), None)
    sec = next((d for _, d in docs if d["kind"] == "Secret"), None)
    if not check(dep and svc and sec, "a Deployment, a Service and a Secret"):
        finish()
    bad = json.loads(json.dumps(dep))
    c0 = bad["spec"]["template"]["spec"]["containers"][0]
    c0["readinesProbe"] = c0.pop("readinessProbe")
    check(validate(bad, "broken") != [], "a misspelt field is refused")
    bad = json.loads(json.dumps(dep))
    del bad["spec"]["template"]["spec"]["containers"]
    check(validate(bad, "broken") != [], "a missing required field is refused")
    bad = json.loads(json.dumps(dep))
    bad["spec"]["replicas"] = "one"
    check(validate(bad, "broken") != [], "a value of the wrong type is refused")

    # 2. what the runner needs
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    check(c["command"][0] == "gst-spice-run", "the container runs gst-spice-run")
    pipeline = env.get("PIPELINE")
    check(pipeline and os.path.exists(os.path.join(SRC, "pipelines", pipeline + ".pipeline")),
          "PIPELINE=%s is a shipped pipeline" % pipeline)
    known = pipeline_variables(pipeline) | {"PIPELINE"}
    extra = [k for k in env if k not in known and not k.startswith("GST_")]
    check(not extra, "every variable is one of %s's: %s" % (pipeline, extra))
    args = c.get("args", [])
    m = re.match(r"^[^:]*:(\d+)$", args[args.index("--metrics") + 1]) if "--metrics" in args \
        else None
    check(m, "the runner serves --metrics HOST:PORT")
    mport = int(m.group(1)) if m else None
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(ports.get("metrics") == mport, "container port metrics is the --metrics port")
    check(env.get("LISTEN_PORT") == "-1" and "spice" not in ports,
          "no plain SPICE port (LISTEN_PORT=-1)")
    check(ports.get("spice-tls") == int(env.get("TLS_PORT", 0)),
          "container port spice-tls is TLS_PORT")
    check(env.get("LISTEN_ADDRESS") == "0.0.0.0" and env.get("PASSWORD_FILE"),
          "listens on all addresses, with a password file")
    for probe, path in (("readinessProbe", "/ready"), ("livenessProbe", "/healthz")):
        g = (c.get(probe) or {}).get("httpGet") or {}
        check(g.get("path") == path and g.get("port") in ("metrics", mport),
              "%s asks %s on the metrics port" % (probe, path))
    mounts = {v["name"]: v["mountPath"] for v in c.get("volumeMounts", [])}
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    secret_dir = next((mounts[n] for n, v in vols.items()
                       if (v.get("secret") or {}).get("secretName") == sec["metadata"]["name"]),
                      None)
    for var, key in (("PASSWORD_FILE", "password"), ("UPSTREAM_PASSWORD_FILE",
                                                     "upstream-password")):
        if var in env:
            check(secret_dir and env[var] == "%s/%s" % (secret_dir, key)
                  and key in sec.get("stringData", {}),
                  "%s is the Secret's %s" % (var, key))
    tls_vol = next((n for n, v in vols.items()
                    if (v.get("secret") or {}).get("secretName", "").endswith("-tls")), None)
    tls_dir = mounts.get(tls_vol)
    check(tls_dir and env.get("TLS_CERT_FILE") == tls_dir + "/tls.crt" and
          env.get("TLS_KEY_FILE") == tls_dir + "/tls.key",
          "TLS_CERT_FILE and TLS_KEY_FILE are a kubernetes.io/tls Secret's "
          "tls.crt and tls.key")
    reg = env.get("GST_REGISTRY", "")
    check(any(reg.startswith(mounts.get(n, "//") + "/") for n, v in vols.items()
              if "emptyDir" in v), "GST_REGISTRY is on a writable volume")
    check(dep["spec"].get("replicas") == 1 and
          dep["spec"].get("strategy", {}).get("type") == "Recreate",
          "one pipeline per session, never two at once")
    check(any(m == "/tmp" for n, m in mounts.items() if "emptyDir" in vols.get(n, {})),
          "/tmp is a writable volume (ORC compiles its code there)")
    # a changed reload sends the clients to REDIRECT_HOST at TLS_PORT: a
    # name outside the cluster, and a Service that keeps the port
    rh = env.get("REDIRECT_HOST") or ""
    check(re.match(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}$", rh)
          and not rh.endswith((".svc", ".local", ".cluster.local", ".internal")),
          "REDIRECT_HOST is the Service's external DNS name: %r" % rh)
    check("REDIRECT_HOST" in pipeline_variables(pipeline),
          "%s takes REDIRECT_HOST (spicesink redirect-host)" % pipeline)
    check(svc["spec"].get("type") == "LoadBalancer" and all(
        p["port"] == int(env.get("TLS_PORT", 0)) for p in svc["spec"]["ports"]),
          "the Service keeps the port the clients are redirected to (TLS_PORT %s): %s"
          % (env.get("TLS_PORT"), [(svc["spec"].get("type"), p["port"])
                                   for p in svc["spec"]["ports"]]))
    dep_text = open(os.path.join(SRC, "tools", "k8s", "gst-spice-session.yaml")).read()
    m = re.search(r"((?:^[ \t]*#.*\n)+)[ \t]*- name: REDIRECT_HOST\n", dep_text, re.M)
    check(m and "reload" in m.group(1),
          "REDIRECT_HOST has a comment that says why (the reload)")
    targets = [p["targetPort"] for p in svc["spec"]["ports"]]
    check(targets and all(t in ("spice-tls", ports.get("spice-tls")) for t in targets),
          "the Service serves the TLS port only: %s" % targets)

    # 3. Pod Security "restricted"
    errs = restricted_errors(pod)
    check(not errs, "Pod Security restricted%s" % (": " + "; ".join(errs) if errs else ""))
    for what, breaks in (
            ("no seccompProfile", lambda p: (p["securityContext"].pop("seccompProfile"),
                                             p["containers"][0]["securityContext"]
                                             .pop("seccompProfile"))),
            ("privilege escalation", lambda p: p["containers"][0]["securityContext"]
             .update(allowPrivilegeEscalation=True)),
            ("a capability added", lambda p: p["containers"][0]["securityContext"]
             ["capabilities"].update(add=["NET_ADMIN"])),
            ("root", lambda p: p["securityContext"].update(runAsUser=0)),
            ("the host network", lambda p: p.update(hostNetwork=True)),
            ("a hostPath volume", lambda p: p["volumes"].append(
                {"name": "h", "hostPath": {"path": "/"}})),
            ("a writable root", lambda p: p["containers"][0]["securityContext"]
             .update(readOnlyRootFilesystem=False))):
        bad = json.loads(json.dumps(pod))
        breaks(bad)
        check(restricted_errors(bad), "a pod with %s is refused" % what)

    # 5. the image recipe
    lint_containerfile(c, pod)
    check(svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"] ==
          {k: v for k, v in dep["spec"]["template"]["metadata"]["labels"].items()
           if k in svc["spec"]["selector"]},
          "the Service selects the Deployment's pods")

    # resources and the unit's limits against the benchmark
    import sessions
    results = json.load(open(sessions.RESULTS))
    rows = sessions.capacity(results, sessions.analyse(results))
    lim = sessions.limits(rows)
    res = c["resources"]
    check(quantity_cores(res["requests"]["cpu"]) >= lim["cpu_request_m"] / 1000 and
          quantity_mib(res["requests"]["memory"]) >= lim["mem_request_mib"],
          "requests %s cover the benchmark's %dm / %dMi" % (
              res["requests"], lim["cpu_request_m"], lim["mem_request_mib"]))
    check(quantity_cores(res["limits"]["cpu"]) >= lim["cpu_limit_percent"] / 100 and
          quantity_mib(res["limits"]["memory"]) >= lim["mem_limit_mib"],
          "limits %s are at least the benchmark's %d%% / %dMi" % (
              res["limits"], lim["cpu_limit_percent"], lim["mem_limit_mib"]))
    unit = open(os.path.join(SRC, "tools", "systemd", "gst-spice@.service.in")).read()
    q = re.search(r"^CPUQuota=(\d+)%$", unit, re.M)
    mm = re.search(r"^MemoryMax=(\d+)M$", unit, re.M)
    tm = re.search(r"^TasksMax=(\d+)$", unit, re.M)
    check(q and int(q.group(1)) >= lim["cpu_limit_percent"],
          "the unit's CPUQuota= is at least %d%%" % lim["cpu_limit_percent"])
    check(mm and int(mm.group(1)) >= lim["mem_limit_mib"],
          "the unit's MemoryMax= is at least %dM" % lim["mem_limit_mib"])
    check(tm and int(tm.group(1)) >= 2 * lim["tasks"],
          "the unit's TasksMax= is at least twice the %d threads measured" % lim["tasks"])

    # 6. the container's command against a test guest
    run_container(c, env, sec, secret_dir, tls_dir, mport)
    finish()


def http_status(port, path):
    try:
        s = socket.create_connection(("127.0.0.1", port), 2)
        s.sendall(("GET %s HTTP/1.0\r\nHost: x\r\n\r\n" % path).encode())
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
        s.close()
        return int(data.split(b" ", 2)[1])
    except (OSError, IndexError, ValueError):
        return None


def make_tls(d):
    """A CA and a server certificate for 127.0.0.1 signed by it, as
    `kubectl create secret tls` takes them: (ca, tls.crt, tls.key)."""
    def ssl(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True,
                       capture_output=True)
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
        "-out", "ca.pem", "-days", "2", "-subj", "/CN=gst-spice k8s test CA")
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out",
        "tls.csr", "-subj", "/O=gst-spice/CN=gw.test")
    ssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "tls.crt", "-days", "2", "-extfile", "ext.cnf")
    return [os.path.join(d, n) for n in ("ca.pem", "tls.crt", "tls.key")]


def run_container(c, env, sec, secret_dir, tls_dir, mport):
    tmp = tempfile.mkdtemp(prefix="gst-spice-k8s-")
    procs = []
    try:
        sdir = os.path.join(tmp, "secrets")
        os.makedirs(sdir)
        for k, v in sec["stringData"].items():
            with open(os.path.join(sdir, k), "w") as f:
                f.write(v + "\n")
        tdir = os.path.join(tmp, "tls")
        os.makedirs(tdir)
        ca = make_tls(tdir)[0]
        gport, sport, mp = free_ports(3)
        genv = dict(os.environ)
        guest = [os.path.join(BUILD, "tools", "spice-test-guest"), "--port", str(gport),
                 "--activity", "idle"]     # a picture that settles for the client
        if "UPSTREAM_PASSWORD_FILE" in env:
            guest += ["--password", sec["stringData"]["upstream-password"]]
        procs.append(subprocess.Popen(guest, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True))
        check(wait_port(gport, 15), "test guest listens")
        renv = dict(genv)
        for k, v in env.items():
            v = v.replace(secret_dir, sdir).replace(tls_dir, tdir)
            renv[k] = v
        renv["UPSTREAM"] = "spice://127.0.0.1:%d" % gport
        renv["TLS_PORT"] = str(sport)
        renv["GST_REGISTRY"] = os.path.join(tmp, "registry.bin")
        renv["GST_PLUGIN_PATH"] = os.path.join(BUILD, "plugins")
        renv["GST_SPICE_PIPELINES_DIR"] = os.path.join(SRC, "pipelines")
        args = [a.replace(":%d" % mport, ":%d" % mp) for a in c.get("args", [])]
        argv = [os.path.join(BUILD, "tools", "runner", c["command"][0])] + c["command"][1:] + args
        rlog = open(os.path.join(tmp, "runner.log"), "w+")
        runner = subprocess.Popen(argv, env=renv, stdin=subprocess.DEVNULL, stdout=rlog,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(runner)
        end = time.time() + 30
        ready = None
        while time.time() < end and runner.poll() is None:
            ready = http_status(mp, "/ready")
            if ready == 200:
                break
            time.sleep(0.2)
        rlog.seek(0)
        check(ready == 200, "/ready answers 200 once the pipeline plays (%s) %s" % (
            ready, rlog.read()[-1500:]))
        check(http_status(mp, "/healthz") == 200, "/healthz answers 200")
        check(http_status(mp, "/metrics") == 200, "/metrics answers 200")
        client = os.path.join(BUILD, "tests", "common", "spice-test-client")
        shot = os.path.join(tmp, "shot.ppm")
        r = subprocess.run([client, "-h", "127.0.0.1", "-s", str(sport), "--ca-file", ca,
                            "-w", sec["stringData"]["password"], "--timeout", "30",
                            "-o", shot], capture_output=True, text=True, timeout=90)
        check(r.returncode == 0 and os.path.exists(shot) and os.path.getsize(shot) > 0,
              "a spice-gtk client over TLS (the CA, the Secret's password) gets the "
              "picture (rc %d %s)" % (r.returncode, r.stderr[-500:]))
        r = subprocess.run([client, "-h", "127.0.0.1", "-s", str(sport), "-w",
                            sec["stringData"]["password"], "--timeout", "20", "-o",
                            shot + ".2"], capture_output=True, text=True, timeout=90)
        check(r.returncode != 0 and not os.path.exists(shot + ".2"),
              "without the CA the client refuses the certificate (rc %d %s)" % (
                  r.returncode, r.stderr[-300:]))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


main()
