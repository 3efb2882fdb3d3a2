#!/usr/bin/python3
# The Debian package on a clean Debian 12, as docs/operator-guide.md's first
# recipe uses it: a minbase bookworm (mmdebstrap, cached as a tarball),
# `apt install ./gst-spice_*.deb` in it (without Recommends: what Depends
# names must be enough), /etc/gst-spice/vm1.conf written from the installed
# example.conf, then the installed unit's ExecStart= run with the unit's
# Environment= and EnvironmentFile= and under its sandbox
# (tests/install/unitsandbox.py with the chroot as /: bwrap, setpriv,
# seccomp), against a test guest on the host. The picture spicy-screenshot
# gets through the service must equal, pixel for pixel, the one it gets from
# the guest itself in the same run. Also checked: the package enabled and
# started nothing (the units are templates), gst-spice-run --check of every
# shipped pipeline that needs no display with only the package's Depends.
# Run by debian-package.sh (root; needs deb.debian.org).
#
#   debian-chroot.py ROOTFS.tar DEB_DIR HOST_BUILD_DIR
# SPDX-License-Identifier: LGPL-2.1-or-later

import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
from optest import check, finish, free_ports, read_env_file, \
    screenshot_once, stop_service, unit_service_section, \
    wait_for, write_conf  # noqa: E402
import unitsandbox  # noqa: E402

ROOTFS, DEBS, BUILD = (os.path.abspath(a) for a in sys.argv[1:4])
# downloaded packages, kept between runs
ARCHIVES = "/var/cache/gst-spice-debian/archives"
SERVICE_UID = 61234
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def in_root(root, argv, binds=(), **kw):
    """@argv as root inside @root (bwrap: the chroot writable, its own
    /proc, /dev and /tmp, the host's DNS), like `chroot`."""
    b = ["bwrap", "--bind", root, "/", "--dev", "/dev", "--proc", "/proc",
         "--perms", "1777", "--tmpfs", "/tmp",
         "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf",
         "--chdir", "/", "--clearenv", "--setenv", "PATH", PATH,
         "--setenv", "DEBIAN_FRONTEND", "noninteractive"]
    for src, dst in binds:
        b += ["--bind", src, dst]
    return subprocess.run(b + ["--"] + argv, capture_output=True, text=True,
                          **kw)


def ppm(path):
    return open(path, "rb").read() if os.path.exists(path) else b""


def main():
    tmp = tempfile.mkdtemp(prefix="gst-spice-debian-")
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "root")
    guest = None
    t0 = time.time()
    try:
        os.makedirs(root)
        subprocess.run(["tar", "-xf", ROOTFS, "-C", root], check=True)
        os.makedirs(os.path.join(ARCHIVES, "partial"), exist_ok=True)
        debs = sorted(os.path.basename(d) for d in
                      glob.glob(os.path.join(DEBS, "*.deb"))
                      if "dbgsym" not in d and "-dev_" not in d)
        os.makedirs(os.path.join(root, "debs"))
        for d in debs:
            shutil.copy(os.path.join(DEBS, d), os.path.join(root, "debs"))
        r = in_root(root, ["sh", "-c", "apt-get update -q && apt-get "
                           "install -y -q --no-install-recommends " +
                           " ".join("./debs/" + d for d in debs)],
                    binds=[(ARCHIVES, "/var/cache/apt/archives")])
        if not check(r.returncode == 0, "apt install %s into a clean "
                     "bookworm minbase (%.0f s)" % (" ".join(debs),
                                                    time.time() - t0)):
            print(r.stdout[-3000:], r.stderr[-3000:])
            return
        wants = glob.glob(os.path.join(root, "etc", "systemd", "system",
                                       "*", "gst-spice*"))
        check(not wants, "the package enabled no unit: %s" % wants)
        unit = os.path.join(root, "lib", "systemd", "system",
                            "gst-spice@.service")
        if not check(os.path.exists(unit), "the unit in /lib/systemd/system"):
            return
        check(os.path.exists(os.path.join(root, "lib", "systemd", "system",
                                          "gst-spice@.socket")),
              "the socket unit next to it")
        check(os.path.exists(os.path.join(
            root, "etc", "fail2ban", "filter.d", "gst-spice.conf")),
            "the fail2ban filter in /etc/fail2ban/filter.d")
        items = unit_service_section(unit)

        def unit_env():
            env = {"PATH": PATH}
            for key, value in items:
                if key == "Environment":
                    for a in shlex.split(value):
                        k, v = a.split("=", 1)
                        env[k] = v.replace("%C", "/var/cache")
            return env
        for p in ("transcode-vp8", "transcode-mjpeg", "transcode-lossless"):
            env = unit_env()
            env["GST_REGISTRY"] = "/tmp/registry.bin"
            r = in_root(root, ["env"] + ["%s=%s" % kv for kv in env.items()]
                        + ["gst-spice-run", "--check", "-D",
                           "UPSTREAM=spice://127.0.0.1:1", p])
            check(r.returncode == 0, "gst-spice-run --check %s with the "
                  "package's Depends only: rc %d %s" % (p, r.returncode,
                                                       r.stderr[-500:]))

        # the harness: the unit's seccomp filters are loaded by python3
        r = in_root(root, ["apt-get", "install", "-y", "-q",
                           "--no-install-recommends", "python3-seccomp"],
                    binds=[(ARCHIVES, "/var/cache/apt/archives")])
        if not check(r.returncode == 0, "python3-seccomp for the harness"):
            print(r.stdout[-2000:], r.stderr[-2000:])
            return
        why = unitsandbox.available()
        if not check(why is None, "the unit's sandbox can be applied: %s"
                     % why):
            return

        # the operator guide: example.conf as /etc/gst-spice/vm1.conf, the
        # upstream and the port edited
        gport, lport = free_ports(2)
        conf = os.path.join(root, "etc", "gst-spice", "vm1.conf")
        write_conf(os.path.join(root, "usr", "share", "doc", "gst-spice",
                                "examples", "example.conf"), conf, gport,
                   lport)

        guest = subprocess.Popen(
            [os.path.join(BUILD, "tools", "spice-test-guest"), "--port",
             str(gport), "--activity", "idle"], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ref = os.path.join(tmp, "guest.ppm")
        check(wait_for(lambda: screenshot_once(gport, None, ref), 60),
              "the guest's own picture (spicy-screenshot)")

        # the unit's ExecStart with its environment, as systemd runs it
        env = unit_env()
        envfile = [v for k, v in items if k == "EnvironmentFile"][0]
        env.update(read_env_file(os.path.join(
            root, envfile.replace("%i", "vm1").lstrip("-/"))))
        exec_start = [v for k, v in items if k == "ExecStart"][0]
        argv = [a.replace("%i", "vm1") for a in shlex.split(exec_start)]
        cache = os.path.join(root, "var", "cache", "gst-spice")
        os.makedirs(cache, exist_ok=True)
        os.chown(cache, SERVICE_UID, SERVICE_UID)
        sbox = os.path.join(tmp, "sandbox")
        os.makedirs(sbox)
        os.chmod(sbox, 0o755)
        info = os.pipe()
        argv = unitsandbox.command(
            items, argv, os.path.join(sbox, "seccomp.json"),
            rw_binds=[(cache, "/var/cache/gst-spice")], uid=SERVICE_UID,
            info_fd=info[1], user="gst-spice-vm1", root=root)
        log = open(os.path.join(tmp, "service.log"), "w+")
        print("the unit's ExecStart: %s" % exec_start)
        t1 = time.time()
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, cwd="/",
                                pass_fds=info[1:])
        os.close(info[1])
        service = unitsandbox.sandboxed_pid(info[0])

        def logged(s):
            log.flush()
            return s in open(log.name).read()
        shot = os.path.join(tmp, "service.ppm")
        ok = check(wait_for(lambda: logged("playing"), 60),
                   "the installed service plays")
        attempts = [0]

        def exact():
            attempts[0] += 1
            return screenshot_once(lport, None, shot) and \
                ppm(shot) == ppm(ref)
        if ok:
            ok = check(wait_for(exact, 90),
                       "the picture through the installed service equals "
                       "the guest's (%d bytes, %d screenshot(s), %.1f s "
                       "after the start)" % (len(ppm(ref)), attempts[0],
                                             time.time() - t1))
        code, text = stop_service(proc, service, log.name)
        if not ok or code != 0:
            print(text[-4000:])
    finally:
        if guest:
            guest.terminate()
            guest.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        print("chroot test: %.0f s" % (time.time() - t0))
    finish()


main()
