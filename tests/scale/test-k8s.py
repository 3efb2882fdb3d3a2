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
3. the container's command, arguments and environment run here (paths of
   the mounted secret moved to a temporary directory) against a test guest
   with the Secret's upstream ticket: /ready turns 200, /healthz is 200, and
   a client with the Secret's password gets the key box through the Service
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
from optest import check, finish, free_port, wait_port  # noqa: E402

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
    check(ports.get("spice") == int(env.get("LISTEN_PORT", 0)),
          "container port spice is LISTEN_PORT")
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
    reg = env.get("GST_REGISTRY", "")
    check(any(reg.startswith(mounts.get(n, "//") + "/") for n, v in vols.items()
              if "emptyDir" in v), "GST_REGISTRY is on a writable volume")
    check(dep["spec"].get("replicas") == 1 and
          dep["spec"].get("strategy", {}).get("type") == "Recreate",
          "one pipeline per session, never two at once")
    sp = {p["name"]: p for p in svc["spec"]["ports"]}
    check("spice" in sp and sp["spice"]["targetPort"] in ("spice", ports.get("spice")),
          "the Service serves the SPICE port")
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

    # 3. the container's command against a test guest
    run_container(c, env, sec, secret_dir, mport)
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


def run_container(c, env, sec, secret_dir, mport):
    tmp = tempfile.mkdtemp(prefix="gst-spice-k8s-")
    procs = []
    try:
        sdir = os.path.join(tmp, "secrets")
        os.makedirs(sdir)
        for k, v in sec["stringData"].items():
            with open(os.path.join(sdir, k), "w") as f:
                f.write(v + "\n")
        gport, sport, mp = free_port(), free_port(), free_port()
        genv = dict(os.environ)
        guest = [os.path.join(BUILD, "tools", "spice-test-guest"), "--port", str(gport),
                 "--activity", "busy"]
        if "UPSTREAM_PASSWORD_FILE" in env:
            guest += ["--password", sec["stringData"]["upstream-password"]]
        procs.append(subprocess.Popen(guest, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True))
        check(wait_port(gport, 15), "test guest listens")
        renv = dict(genv)
        for k, v in env.items():
            v = v.replace(secret_dir, sdir)
            renv[k] = v
        renv["UPSTREAM"] = "spice://127.0.0.1:%d" % gport
        renv["LISTEN_PORT"] = str(sport)
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
        kj = os.path.join(tmp, "keypress.json")
        r = subprocess.run([os.path.join(BUILD, "tools", "keypress", "spice-keypress"),
                            "--uri", "spice://127.0.0.1:%d" % sport, "--password",
                            sec["stringData"]["password"], "-n", "2", "--warmup", "0.5",
                            "-o", kj], capture_output=True, text=True, timeout=90)
        k = json.load(open(kj)) if os.path.exists(kj) else {}
        check(r.returncode == 0 and k.get("ok") and k.get("n") == 2,
              "a client with the Secret's password gets the key box (rc %d %s)" % (
                  r.returncode, (k.get("error") or r.stderr[-500:])))
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
