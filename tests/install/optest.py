# Helpers of the operator-path tests (tests/install, tests/docs): checks
# that print ok/FAIL lines, free ports, waiting for a listener, a
# spicy-screenshot client.
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import signal
import socket
import subprocess
import sys
import time

FAILED = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILED.append(what)
    return cond


def finish():
    if FAILED:
        print("%d check(s) failed:\n  %s" % (len(FAILED), "\n  ".join(FAILED)))
        sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_ports(n):
    """@n different free ports (free_port() twice may give the same one)"""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def wait_port(port, timeout=20):
    """True once something accepts TCP connections on 127.0.0.1:@port,
    False after @timeout seconds."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def screenshot_once(port, password, out):
    """spicy-screenshot (a real spice-gtk client); True if it wrote a
    picture to @out"""
    argv = ["timeout", "20", "spicy-screenshot", "-h", "127.0.0.1",
            "-p", str(port), "-o", out]
    if password:
        argv += ["-w", password]
    if os.path.exists(out):
        os.unlink(out)
    subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True)
    return os.path.exists(out) and os.path.getsize(out) > 0


def skip_if_sanitized(build):
    """These tests run system programs (gst-launch-1.0, the plugin scanner)
    that load our plugin: with a sanitizer build they would test the
    sanitizer's link order, not the operator's path. Exit 77 (skipped)."""
    import json
    out = subprocess.run(["meson", "introspect", "--buildoptions", build],
                         capture_output=True, text=True, check=True).stdout
    opts = {o["name"]: o["value"] for o in json.loads(out)}
    if opts.get("b_sanitize", "none") not in ("none", ""):
        print("skip: sanitizer build (b_sanitize=%s)" % opts["b_sanitize"])
        sys.exit(77)


def wait_for(pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.2)
    return False


def unit_service_section(path):
    """The [Service] assignments of a unit file, in order."""
    items, section = [], None
    for line in open(path):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            key, value = line.split("=", 1)
            items.append((key, value))
    return items


def read_env_file(path):
    env = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            env[k] = v
    return env


def stop_service(proc, pid, log_path):
    """SIGTERM to the service (@pid: the runner itself, inside the sandbox
    that @proc started), which must end with 0, without a system call
    outside its filter (SIGSYS) and without a GLib warning. Returns (its
    exit code, its log)."""
    if pid:
        os.kill(pid, signal.SIGTERM)
    try:
        code = proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = -1
    check(code == 0, "SIGTERM: exit %d" % code)
    text = open(log_path).read()
    check("SIGSYS" not in text and code != 128 + signal.SIGSYS,
          "no system call outside the unit's filter")
    check("CRITICAL" not in text and "WARNING" not in text,
          "no GLib warning under the sandbox: %s" % [
              l for l in text.splitlines()
              if "CRITICAL" in l or "WARNING" in l])
    return code, text


def write_conf(example, conf, upstream_port, listen_port):
    """The operator guide's NAME.conf: @example (example.conf) copied to
    @conf with UPSTREAM on the test guest's @upstream_port and LISTEN_PORT
    @listen_port. Returns its lines."""
    lines = []
    for line in open(example):
        if line.startswith("UPSTREAM="):
            line = "UPSTREAM=spice://127.0.0.1:%d\n" % upstream_port
        elif line.startswith("LISTEN_PORT="):
            line = "LISTEN_PORT=%d\n" % listen_port
        lines.append(line)
    with open(conf, "w") as f:
        f.writelines(lines)
    return lines
