#!/usr/bin/env python3
# The operator's install path, tested: `meson install` into a DESTDIR, the
# unit checked with `systemd-analyze verify`, example.conf copied and edited
# as docs/operator-guide.md says, and the installed runner started with
# exactly the unit's environment and ExecStart= (every installed path
# relocated into the DESTDIR) under the unit's sandbox (unitsandbox.py:
# bwrap, setpriv and seccomp filters built from the unit's settings, as
# systemd is not PID 1 here). No LD_LIBRARY_PATH: the installed plugin finds
# libgstspice-1.0 through its RPATH. A real spice-gtk client
# (spicy-screenshot) must get a picture from the installed service, with and
# without the password credential the guides describe. The service starts
# with a stale registry cache that holds the plugin as blacklisted (scanned
# while libgstspice-1.0 was missing). Then the installed tree, moved to a
# second prefix, must load its plugin and run (gst-inspect-1.0,
# gst-spice-run --check, spice-test-guest).
#
#   test-install.py BUILD_DIR
# SPDX-License-Identifier: LGPL-2.1-or-later

import ast
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

from optest import check, finish, free_ports, read_env_file, \
    screenshot_once, skip_if_sanitized, stop_service, unit_service_section, \
    wait_for, write_conf
import unitsandbox

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


SERVICE_UID = 61234      # as DynamicUser= picks one: no name, no groups


def ldconfig_knows(soname):
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True,
                         text=True).stdout
    return soname in out


def blacklisted(plugin_path, registry):
    """True if the registry cache @registry holds a blacklisted plugin"""
    env = {"PATH": "/usr/bin:/bin", "GST_PLUGIN_PATH": plugin_path,
           "GST_REGISTRY": registry, "GST_REGISTRY_UPDATE": "no"}
    out = subprocess.run(["gst-inspect-1.0", "-b"], env=env,
                         capture_output=True, text=True).stdout
    return "libgstspice.so" in out


def stale_registry(lib, plugin_path, registry):
    """Writes the registry cache @registry as a scan does while @lib is
    missing: the plugin blacklisted."""
    real = os.path.realpath(lib)
    os.rename(real, real + ".hidden")
    try:
        env = {"PATH": "/usr/bin:/bin", "GST_PLUGIN_PATH": plugin_path,
               "GST_REGISTRY": registry}
        subprocess.run(["gst-inspect-1.0", "spicesink"], env=env,
                       capture_output=True)
    finally:
        os.rename(real + ".hidden", real)
    check(blacklisted(plugin_path, registry),
          "a stale registry cache: the plugin blacklisted")


PROBE = r"""
import ctypes, errno, os, socket, sys
def err(fn):
    try:
        fn()
        return "allowed"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
def wx():
    if libc.mmap(None, 4096, 7, 0x22, -1, 0) == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), "mmap")
def ns():
    if libc.unshare(0x00020000) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
print({"packet": err(lambda: socket.socket(socket.AF_PACKET,
                                           socket.SOCK_RAW, 0)),
       "inet6": err(lambda: socket.socket(socket.AF_INET6).close()),
       "write_usr": err(lambda: open("/usr/gst-spice-probe", "w")),
       "mmap_wx": err(wx), "unshare": err(ns),
       "uid": os.getuid(), "umask": os.umask(0),
       "home": os.listdir("/root") if os.path.isdir("/root") else [],
       "dev_sda": os.path.exists("/dev/sda") or os.path.exists("/dev/vda"),
       "procs": len([p for p in os.listdir("/proc") if p.isdigit()])})
sys.stdout.flush()
if len(sys.argv) > 1:
    os.setuid(0)
"""


def sandbox_refuses(items, tmp):
    """The sandbox is not a no-op: a probe under it is refused what the
    unit forbids, and killed by SIGSYS for a call outside the filter."""
    probe = os.path.join(tmp, "probe.py")
    with open(probe, "w") as f:
        f.write(PROBE)
    argv = unitsandbox.command(items, [unitsandbox.PYTHON, probe],
                               os.path.join(tmp, "seccomp.json"),
                               ro_binds=[tmp], uid=SERVICE_UID)
    r = subprocess.run(argv, capture_output=True, text=True, cwd="/",
                       env={"PATH": "/usr/bin:/bin"})
    try:
        got = ast.literal_eval(r.stdout.strip().splitlines()[-1])
    except (IndexError, SyntaxError, ValueError):
        got = {}
    want = {"packet": "EAFNOSUPPORT", "inet6": "allowed",
            "write_usr": "EROFS", "mmap_wx": "EPERM", "unshare": "EPERM",
            "uid": SERVICE_UID, "umask": 0o077, "home": [],
            "dev_sda": False, "procs": 2}
    check(r.returncode == 0 and got == want,
          "under the sandbox: packet sockets, writes below /usr, W+X "
          "memory, namespaces refused; own uid, umask 0077, no home, no "
          "disks, only itself in /proc: %s %s" % (got, r.stderr[-500:]))
    r = subprocess.run(argv + ["setuid"], capture_output=True, text=True,
                       cwd="/", env={"PATH": "/usr/bin:/bin"})
    check(r.returncode == 128 + signal.SIGSYS,
          "setuid() (@privileged) ends the process with SIGSYS: exit %d" %
          r.returncode)


def second_prefix(installed, d, prefix, tmp):
    """The installed tree (@installed, configured for @prefix) moved to
    another prefix, one level deeper: the plugin, the runner and the guest
    find libgstspice-1.0 without LD_LIBRARY_PATH."""
    other = os.path.join(tmp, "elsewhere", "opt", "gst-spice")
    shutil.copytree(installed, other, symlinks=True)

    def moved(path):
        return os.path.join(other, os.path.relpath(path, prefix))
    plugindir = os.path.join(moved(d["libdir"]), "gstreamer-1.0")
    env = {"PATH": "/usr/bin:/bin", "GST_PLUGIN_PATH": plugindir,
           "GST_REGISTRY": os.path.join(tmp, "elsewhere", "registry.bin"),
           "GST_SPICE_PIPELINES_DIR": os.path.join(moved(d["datadir"]),
                                                   "gst-spice", "pipelines")}
    ldd = subprocess.run(["ldd", os.path.join(plugindir, "libgstspice.so")],
                         capture_output=True, text=True).stdout
    m = re.search(r"libgstspice-1\.0\.so\.0 => (\S+)", ldd)
    check(m and os.path.realpath(m.group(1)).startswith(other + "/"),
          "the moved plugin loads the moved libgstspice-1.0: %s" %
          (m.group(1) if m else ldd))
    r = subprocess.run(["gst-inspect-1.0", "spicesink"], env=env,
                       capture_output=True, text=True)
    check(r.returncode == 0 and "spicesink" in r.stdout,
          "gst-inspect-1.0 spicesink from the second prefix: rc %d %s" %
          (r.returncode, r.stderr[-500:]))
    r = subprocess.run([os.path.join(moved(d["bindir"]), "gst-spice-run"),
                        "--check", "-D", "UPSTREAM=spice://127.0.0.1:1",
                        "transcode-vp8"], env=env, capture_output=True,
                       text=True)
    check(r.returncode == 0, "gst-spice-run --check transcode-vp8 from the "
          "second prefix: rc %d %s" % (r.returncode, r.stderr[-500:]))
    r = subprocess.run([os.path.join(moved(d["bindir"]), "spice-test-guest"),
                        "--help"], env=env, capture_output=True, text=True)
    check(r.returncode == 0, "spice-test-guest from the second prefix: rc "
          "%d %s" % (r.returncode, r.stderr[-300:]))


def main():
    skip_if_sanitized(BUILD)
    # meson test sets it to the build tree: an installed program must do
    # without
    os.environ.pop("LD_LIBRARY_PATH", None)
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
            # the socket unit, next to it, with the drop-in the guide gives
            # it (it has no ListenStream= of its own)
            socks = [os.path.join(r, f) for r, _, fs in os.walk(dest)
                     for f in fs if f == "gst-spice@.socket"]
            if check(len(socks) == 1 and os.path.dirname(socks[0]) ==
                     os.path.dirname(unit), "socket unit next to the service"):
                vsock = os.path.join(vdir, "gst-spice@vm1.socket")
                with open(vsock, "w") as f:
                    f.write(open(socks[0]).read() +
                            "\n[Socket]\nListenStream=127.0.0.1:5910\n")
                r = subprocess.run([analyze, "verify", "--man=no", vsock],
                                   capture_output=True, text=True)
                out = (r.stdout + r.stderr).strip()
                mine = [l for l in out.splitlines() if "gst-spice" in l]
                check(r.returncode == 0 and not mine,
                      "systemd-analyze verify socket: rc %d %s" %
                      (r.returncode, out))
        else:
            print("skip systemd-analyze verify: not installed")

        # the guide: copy example.conf to CONFDIR/vm1.conf, edit UPSTREAM
        # and the port
        gport, lport = free_ports(2)
        conf = os.path.join(rel(confdir), "vm1.conf")
        lines = write_conf(os.path.join(rel(docdir), "examples",
                                        "example.conf"), conf, gport, lport)
        check("LISTEN_ADDRESS=127.0.0.1\n" in lines,
              "example.conf listens on loopback")

        guest = subprocess.Popen(
            [os.path.join(BUILD, "tools", "spice-test-guest"), "--port",
             str(gport), "--activity", "idle"], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        libdir = rel(d["libdir"])
        lib = os.path.join(libdir, "libgstspice-1.0.so.0")
        check(not ldconfig_knows("libgstspice-1.0.so.0"),
              "libgstspice-1.0 is not in ld.so's cache (else the RPATH "
              "check proves nothing)")
        cache = os.path.join(dest, "var", "cache", "gst-spice")
        os.makedirs(cache)
        registry = [relocate(a.split("=", 1)[1]) for k, v in items
                    if k == "Environment" for a in shlex.split(v)
                    if a.startswith("GST_REGISTRY=")][0]
        plugin_path = [relocate(a.split("=", 1)[1]) for k, v in items
                       if k == "Environment" for a in shlex.split(v)
                       if a.startswith("GST_PLUGIN_PATH=")][0]
        # the stale cache: the plugin scanned while its library was missing
        stale_registry(lib, plugin_path, registry)

        why = unitsandbox.available()
        if why:
            print("skip the unit's sandbox: %s; the service runs without "
                  "it" % why)
        else:
            print("the unit's sandbox: " + "; ".join(
                "%s: %s" % kv for kv in sorted(unitsandbox.COVERED.items())))
            print("not applied here: " + "; ".join(
                "%s: %s" % kv for kv in sorted(unitsandbox.NOT_COVERED.items())))
        # the DynamicUser's uid reads the installed tree, as from /usr
        os.chmod(tmp, 0o755)

        def run_service(extra_env, password, creds=None):
            """The unit's ExecStart with its environment under its
            sandbox; True if a client gets a picture (with @password) and
            SIGTERM stops it with 0."""
            env = {"PATH": "/usr/bin:/bin"}
            for key, value in items:
                if key == "Environment":
                    for a in shlex.split(value):
                        k, v = a.split("=", 1)
                        env[k] = relocate(v)
            envfile = [v for k, v in items if k == "EnvironmentFile"][0]
            envfile = relocate(envfile.replace("%i", "vm1"))
            env.update(read_env_file(envfile))
            env.update(extra_env)
            exec_start = [v for k, v in items if k == "ExecStart"][0]
            argv = [relocate(a.replace("%i", "vm1"))
                    for a in shlex.split(exec_start)]
            log = open(os.path.join(tmp, "runner.log"), "w+")
            info = None
            if not why:
                # CacheDirectory= and LoadCredential= as systemd makes them:
                # the service's own
                for p in [cache] + ([creds] if creds else []):
                    for r, ds, fs in os.walk(p):
                        for n in [r] + [os.path.join(r, f) for f in fs]:
                            os.chown(n, SERVICE_UID, SERVICE_UID)
                info = os.pipe()
                argv = unitsandbox.command(
                    items, argv, os.path.join(tmp, "seccomp.json"),
                    ro_binds=[tmp], rw_binds=[cache], uid=SERVICE_UID,
                    info_fd=info[1], user="gst-spice-vm1")
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT,
                                    cwd="/", pass_fds=info[1:] if info else ())
            service = proc.pid
            if info:
                os.close(info[1])
                service = unitsandbox.sandboxed_pid(info[0])

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
            code, text = stop_service(proc, service, log.name)
            if not ok or code != 0:
                print(text)
            return text

        text = run_service({}, None)
        check("libgstspice.so (loads now)" in text,
              "the runner scanned the plugin the stale cache had "
              "blacklisted again")
        check(not blacklisted(plugin_path, registry),
              "the registry cache no longer blacklists the plugin")

        # the password as a systemd credential, as example.conf says
        creds = os.path.join(tmp, "credentials")
        os.makedirs(creds)
        with open(os.path.join(creds, "password"), "w") as f:
            f.write("Install-Secret-7\n")
        text = open(conf).read().replace("#PASSWORD_FILE=", "PASSWORD_FILE=")
        check("PASSWORD_FILE=${CREDENTIALS_DIRECTORY}/password" in text,
              "example.conf's PASSWORD_FILE line")
        open(conf, "w").write(text)
        text = run_service({"CREDENTIALS_DIRECTORY": creds},
                           "Install-Secret-7", creds)
        check("blacklisted" not in text,
              "a sound registry cache: nothing scanned again")

        if not why:
            sandbox_refuses(items, tmp)

        # a second prefix: the installed tree moved elsewhere
        second_prefix(rel(prefix), d, prefix, tmp)
    finally:
        if guest:
            guest.terminate()
            guest.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


main()
