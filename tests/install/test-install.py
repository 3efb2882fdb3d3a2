#!/usr/bin/env python3
# The operator's install path, tested: `meson install` into a DESTDIR, the
# unit checked with `systemd-analyze verify`, example.conf copied and edited
# as docs/operator-guide.md says, and the installed runner started with
# exactly the unit's environment and ExecStart= (every installed path
# relocated into the DESTDIR, plus LD_LIBRARY_PATH for the relocated
# libgstspice-1.0, which a real install finds through ld.so). A real spice-gtk
# client (spicy-screenshot) must get a picture from the installed service,
# with and without the password credential the guides describe.
#
#   test-install.py BUILD_DIR
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from optest import check, finish, free_port, screenshot_once, \
    skip_if_sanitized

BUILD = os.path.abspath(sys.argv[1])
def options():
    out = subprocess.run(["meson", "introspect", "--buildoptions", BUILD],
                         check=True, capture_output=True, text=True).stdout
    opts = {o["name"]: o["value"] for o in json.loads(out)}
    prefix = opts["prefix"]

    def absolute(name):
        v = opts[name]
        return v if v.startswith("/") else os.path.join(prefix, v)
    return prefix, {n: absolute(n) for n in
                    ("bindir", "libdir", "datadir", "sysconfdir")}


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


def wait_for(pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.2)
    return False


def main():
    skip_if_sanitized(BUILD)
    tmp = tempfile.mkdtemp(prefix="gst-spice-install-")
    dest = os.path.join(tmp, "dest")
    guest = None
    try:
        prefix, d = options()
        subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild",
                        "--destdir", dest], check=True,
                       stdout=subprocess.DEVNULL)

        def rel(path):
            return dest + path

        confdir = os.path.join(d["sysconfdir"], "gst-spice")
        plugindir = os.path.join(d["libdir"], "gstreamer-1.0")
        docdir = os.path.join(d["datadir"], "doc", "gst-spice")
        check(os.path.isdir(rel(confdir)), "install creates " + confdir)
        check(os.path.exists(os.path.join(rel(plugindir), "libgstspice.so")),
              "plugin installed in " + plugindir)
        check(os.path.exists(os.path.join(rel(d["datadir"]), "gst-spice",
                                          "pipelines", "transcode-vp8.pipeline")),
              "pipelines installed")
        units = [os.path.join(r, f) for r, _, fs in os.walk(dest) for f in fs
                 if f == "gst-spice@.service"]
        if not check(len(units) == 1, "one unit installed: %s" % units):
            return
        unit = units[0]
        items = unit_service_section(unit)
        text = open(unit).read()
        for p in (plugindir, confdir, d["bindir"]):
            check(p in text, "the unit names " + p)

        # every installed path, relocated into DESTDIR
        roots = sorted({prefix, d["sysconfdir"]}, key=len, reverse=True)
        root_re = re.compile("(?<![\\w/.-])(%s)(?=/)" %
                             "|".join(re.escape(r) for r in roots))

        def relocate(s):
            s = root_re.sub(lambda m: dest + m.group(1), s)
            return s.replace("%C", os.path.join(dest, "var", "cache"))

        # systemd-analyze verify (works without systemd as PID 1)
        analyze = shutil.which("systemd-analyze")
        if analyze:
            vdir = os.path.join(tmp, "verify")
            os.makedirs(vdir)
            vunit = os.path.join(vdir, "gst-spice@vm1.service")
            with open(vunit, "w") as f:
                f.write(relocate(text))
            os.makedirs(rel(confdir), exist_ok=True)
            r = subprocess.run([analyze, "verify", "--man=no", vunit],
                               capture_output=True, text=True)
            out = (r.stdout + r.stderr).strip()
            mine = [l for l in out.splitlines() if "gst-spice" in l]
            check(r.returncode == 0 and not mine,
                  "systemd-analyze verify: rc %d %s" % (r.returncode, out))
        else:
            print("skip systemd-analyze verify: not installed")

        # the guide: copy example.conf to CONFDIR/vm1.conf, edit UPSTREAM
        # and the port
        gport, lport = free_port(), free_port()
        conf = os.path.join(rel(confdir), "vm1.conf")
        shutil.copy(os.path.join(rel(docdir), "examples", "example.conf"), conf)
        lines = []
        for line in open(conf):
            if line.startswith("UPSTREAM="):
                line = "UPSTREAM=spice://127.0.0.1:%d\n" % gport
            elif line.startswith("LISTEN_PORT="):
                line = "LISTEN_PORT=%d\n" % lport
            lines.append(line)
        open(conf, "w").writelines(lines)
        check("LISTEN_ADDRESS=127.0.0.1\n" in lines,
              "example.conf listens on loopback")

        guest = subprocess.Popen(
            [os.path.join(BUILD, "tools", "spice-test-guest"), "--port",
             str(gport), "--activity", "idle"], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def run_service(extra_env, password):
            """The unit's ExecStart with its environment; True if a client
            gets a picture (with @password) and SIGTERM stops it with 0."""
            env = {"PATH": "/usr/bin:/bin"}
            for key, value in items:
                if key == "Environment":
                    for a in shlex.split(value):
                        k, v = a.split("=", 1)
                        env[k] = relocate(v)
            envfile = [v for k, v in items if k == "EnvironmentFile"][0]
            envfile = relocate(envfile.replace("%i", "vm1"))
            env.update(read_env_file(envfile))
            env["LD_LIBRARY_PATH"] = rel(d["libdir"])
            env.update(extra_env)
            # CacheDirectory= and StateDirectory= exist under systemd
            os.makedirs(os.path.join(dest, "var", "cache", "gst-spice"),
                        exist_ok=True)
            exec_start = [v for k, v in items if k == "ExecStart"][0]
            argv = [relocate(a.replace("%i", "vm1"))
                    for a in shlex.split(exec_start)]
            log = open(os.path.join(tmp, "runner.log"), "w+")
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT,
                                    cwd="/")

            def logged(s):
                log.flush()
                return s in open(log.name).read()
            ok = check(wait_for(lambda: logged("playing"), 60),
                       "the installed service plays")
            shot = os.path.join(tmp, "shot.ppm")
            if ok:
                ok = check(wait_for(lambda: screenshot_once(lport, password,
                                                            shot), 60),
                           "a client gets a picture")
            if ok and password:
                ok = check(not screenshot_once(lport, None, shot),
                           "no password, no picture")
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = -1
            check(code == 0, "SIGTERM: exit %d" % code)
            if not ok:
                print(open(log.name).read())
            return ok

        run_service({}, None)

        # the password as a systemd credential, as example.conf says
        creds = os.path.join(tmp, "credentials")
        os.makedirs(creds)
        with open(os.path.join(creds, "password"), "w") as f:
            f.write("Install-Secret-7\n")
        text = open(conf).read().replace("#PASSWORD_FILE=", "PASSWORD_FILE=")
        check("PASSWORD_FILE=${CREDENTIALS_DIRECTORY}/password" in text,
              "example.conf's PASSWORD_FILE line")
        open(conf, "w").write(text)
        run_service({"CREDENTIALS_DIRECTORY": creds}, "Install-Secret-7")
    finally:
        if guest:
            guest.terminate()
            guest.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


main()
