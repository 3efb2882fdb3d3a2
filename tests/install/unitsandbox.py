#!/usr/bin/python3
# A systemd unit's sandbox, applied without systemd as PID 1 (this machine
# and most CI containers): the [Service] settings of the unit as built turn
# into a bubblewrap (bwrap) command line for the mount, PID, IPC and UTS
# namespaces, setpriv for the user and capabilities, and seccomp filters
# (python3-seccomp, the same libseccomp systemd uses) for the system call
# settings. The allowed system calls come from `systemd-analyze
# syscall-filter`, so the groups are systemd's own, of the installed
# version. What is applied (and what is not) is in COVERED / NOT_COVERED.
#
#   as a module: argv = command(items, argv, binds=..., ...)
#   inside the sandbox: unitsandbox.py exec SPEC.json -- ARGV...
# SPDX-License-Identifier: LGPL-2.1-or-later

import errno
import json
import os
import shutil
import subprocess
import sys
import time

PYTHON = "/usr/bin/python3"      # Debian's, which has python3-seccomp
HERE = os.path.dirname(os.path.abspath(__file__))

# the unit's settings this module applies, and how
COVERED = {
    "DynamicUser": "setpriv: an unprivileged uid/gid without groups, "
                   "known to /etc/passwd and /etc/group (as nss-systemd "
                   "makes it known), HOME=/, USER, LOGNAME, SHELL",
    "CapabilityBoundingSet": "setpriv --bounding-set (empty: -all)",
    "AmbientCapabilities": "setpriv --inh-caps=-all --ambient-caps=-all",
    "NoNewPrivileges": "setpriv --no-new-privs",
    "UMask": "umask() before exec",
    "ProtectSystem": "strict: bwrap --ro-bind / / (writable: the binds)",
    "ProtectHome": "yes: tmpfs over /home, /root, /run/user",
    "PrivateTmp": "tmpfs /tmp and /var/tmp",
    "PrivateDevices": "bwrap --dev (null, zero, full, random, urandom, tty)",
    "ProtectKernelTunables": "/proc/sys read-only (bwrap --proc), /sys "
                             "read-only",
    "ProtectControlGroups": "/sys/fs/cgroup read-only",
    "ProtectKernelLogs": "no /dev/kmsg; syslog() refused",
    "ProtectKernelModules": "module system calls refused",
    "ProtectClock": "clock-setting system calls refused",
    "ProtectHostname": "own UTS namespace; sethostname() refused",
    "ProtectProc": "own PID namespace: /proc shows only the service",
    "RestrictNamespaces": "unshare(), setns(), clone(CLONE_NEW*) refused, "
                          "clone3() ENOSYS (as systemd does)",
    "RestrictRealtime": "sched_setscheduler(FIFO/RR/DEADLINE) refused",
    "RestrictSUIDSGID": "chmod() family with S_ISUID/S_ISGID refused",
    "LockPersonality": "personality() other than PER_LINUX refused",
    "MemoryDenyWriteExecute": "mmap(W|X), mprotect/pkey_mprotect(X), "
                              "shmat(SHM_EXEC) refused",
    "RestrictAddressFamilies": "socket() of other families: EAFNOSUPPORT",
    "SystemCallArchitectures": "native only (other ABIs: killed)",
    "SystemCallFilter": "allow-list from systemd-analyze syscall-filter; "
                        "anything else kills the process (SIGSYS)",
    "RemoveIPC": "own IPC namespace",
}
NOT_COVERED = {
    "PrivateUsers": "no user namespace (setpriv runs the service as an "
                    "unmapped uid instead)",
    "ProcSubset": "bwrap cannot mount /proc with subset=pid",
    "DevicePolicy": "no device cgroup (the private /dev has only the "
                    "pseudo devices)",
    "PrivateMounts": "the mount namespace is bwrap's own",
}

CLONE_NEW = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000,
             0x20000000, 0x40000000, 0x00000080)   # NS UTS IPC USER PID NET
# CGROUP TIME
PROT_WRITE, PROT_EXEC, SHM_EXEC = 0x2, 0x4, 0o100000
S_ISUID, S_ISGID = 0o4000, 0o2000
SCHED_FIFO, SCHED_RR, SCHED_DEADLINE = 1, 2, 6
AF = {"AF_UNIX": 1, "AF_LOCAL": 1, "AF_INET": 2, "AF_INET6": 10,
      "AF_NETLINK": 16, "AF_PACKET": 17}
# implicitly allowed by systemd whatever the filter says (systemd.exec(5))
IMPLICIT = ["execve", "exit", "exit_group", "getrlimit", "rt_sigreturn",
            "sigreturn", "clock_gettime", "gettimeofday", "time",
            "nanosleep", "clock_nanosleep", "clock_getres"]


def _expand(group, seen):
    """System call names of a systemd group (@name), recursively."""
    out = subprocess.run(["systemd-analyze", "syscall-filter", group],
                         capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines()[1:]:
        w = line.strip()
        if not w or w.startswith("#"):
            continue
        if w.startswith("@"):
            if w not in seen:
                seen.add(w)
                names |= _expand(w, seen)
        else:
            names.add(w)
    return names


def _names(words):
    names = set()
    for w in words:
        names |= _expand(w, {w}) if w.startswith("@") else {w}
    return names


def yes(items, key):
    return any(k == key and v.strip() in ("yes", "true", "1", "on")
               for k, v in items)


def values(items, key):
    return [v.strip() for k, v in items if k == key]


def spec_of(items):
    """The seccomp part of the unit's settings as plain data (JSON)."""
    allow, deny = None, set()
    for v in values(items, "SystemCallFilter"):
        if not v:
            allow, deny = None, set()
        elif v.startswith("~"):
            names = _names(v[1:].split())
            if allow is None:
                deny |= names
            else:
                allow -= names
        else:
            names = _names(v.split())
            allow = names if allow is None else allow | names
    families = None
    for v in values(items, "RestrictAddressFamilies"):
        families = [AF[f] for f in v.split()]
    umask = values(items, "UMask")
    return {
        "allow": sorted(allow | set(IMPLICIT)) if allow is not None else None,
        "deny": sorted(deny),
        "families": families,
        "namespaces": yes(items, "RestrictNamespaces"),
        "mdwe": yes(items, "MemoryDenyWriteExecute"),
        "realtime": yes(items, "RestrictRealtime"),
        "suid": yes(items, "RestrictSUIDSGID") or yes(items, "DynamicUser"),
        "personality": yes(items, "LockPersonality"),
        "kernel_logs": yes(items, "ProtectKernelLogs"),
        "clock": yes(items, "ProtectClock"),
        "modules": yes(items, "ProtectKernelModules"),
        "hostname": yes(items, "ProtectHostname"),
        "umask": int(umask[-1], 8) if umask else 0o022,
    }


def available():
    """None if this machine can apply the sandbox, else why not."""
    if not shutil.which("bwrap"):
        return "bwrap is not installed (bubblewrap)"
    if not shutil.which("setpriv"):
        return "setpriv is not installed (util-linux)"
    if not shutil.which("systemd-analyze"):
        return "systemd-analyze is not installed"
    if os.geteuid() != 0:
        return "not root (bwrap without a user namespace needs root)"
    r = subprocess.run([PYTHON, "-c", "import seccomp"], capture_output=True)
    if r.returncode != 0:
        return "python3-seccomp is not installed"
    return None


def command(items, argv, spec_path, ro_binds=(), rw_binds=(), uid=61234,
            info_fd=None, user="gst-spice", root="/"):
    """The argv running @argv under the unit's sandbox (@items: its
    [Service] assignments). @spec_path: where to write the seccomp spec
    (it must be inside a bound path). @ro_binds / @rw_binds: paths the
    service sees (read-only / writable) through PrivateTmp= and
    ProtectSystem=strict, as ReadWritePaths=, CacheDirectory= and the
    install do; a (SOURCE, DEST) pair binds SOURCE at DEST. @info_fd: bwrap
    writes the service's pid there (JSON). @uid, @user: the DynamicUser's.
    @root: the file system the service sees as / (another installation,
    e.g. a chroot with the package installed: its python3 needs
    python3-seccomp); this helper and the spec are bound into its /run
    there, and copied beside the spec here (the checkout may be hidden)."""
    spec = spec_of(items)
    spec["env"] = {}
    etc = []
    if yes(items, "DynamicUser"):
        # what systemd sets for a dynamic user, and nss-systemd resolves
        spec["env"] = {"HOME": "/", "USER": user, "LOGNAME": user,
                       "SHELL": "/usr/sbin/nologin"}
        d = os.path.dirname(os.path.abspath(spec_path))
        for name, line in (
                ("passwd", "%s:x:%d:%d:Dynamic User:/:/usr/sbin/nologin\n"
                 % (user, uid, uid)),
                ("group", "%s:x:%d:\n" % (user, uid))):
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(open(os.path.join(root, "etc", name)).read() + line)
            os.chmod(path, 0o644)
            etc += ["--ro-bind", path, "/etc/" + name]
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    b = ["bwrap", "--die-with-parent", "--ro-bind", root, "/"]
    if yes(items, "PrivateDevices"):
        b += ["--dev", "/dev"]
    else:
        b += ["--dev-bind", "/dev", "/dev"]
    b += ["--unshare-pid", "--proc", "/proc"]
    if yes(items, "RemoveIPC") or yes(items, "DynamicUser"):
        b += ["--unshare-ipc"]
    if yes(items, "ProtectHostname"):
        b += ["--unshare-uts"]
    if yes(items, "PrivateTmp") or yes(items, "DynamicUser"):
        b += ["--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777",
              "--tmpfs", "/var/tmp"]
    home = values(items, "ProtectHome")
    if home and home[-1] in ("yes", "tmpfs"):
        for d in ("/home", "/root", "/run/user"):
            if os.path.isdir(os.path.join(root, d[1:])):
                b += ["--tmpfs", d]
    helper = os.path.join(HERE, "unitsandbox.py")
    if os.path.realpath(root) != "/":
        d = os.path.dirname(os.path.abspath(spec_path))
        shutil.copy(helper, d)
        os.makedirs(os.path.join(root, "run", "unitsandbox"), exist_ok=True)
        ro_binds = list(ro_binds) + [(d, "/run/unitsandbox")]
        helper = "/run/unitsandbox/unitsandbox.py"
        spec_path = "/run/unitsandbox/" + os.path.basename(spec_path)
    else:
        # beside the spec: a checkout under /tmp or /home is behind
        # PrivateTmp= / ProtectHome=, or not the service user's to read
        shutil.copy(helper, os.path.dirname(os.path.abspath(spec_path)))
        helper = os.path.join(os.path.dirname(os.path.abspath(spec_path)),
                              "unitsandbox.py")
    for opt, binds in (("--ro-bind", ro_binds), ("--bind", rw_binds)):
        for p in binds:
            src, dst = p if isinstance(p, tuple) else (p, p)
            b += [opt, src, dst]
    b += etc
    if info_fd is not None:
        b += ["--info-fd", str(info_fd)]
    b += ["--"]
    s = ["setpriv", "--reuid", str(uid), "--regid", str(uid),
         "--clear-groups"]
    if any(k == "CapabilityBoundingSet" and not v.strip() for k, v in items):
        s += ["--bounding-set", "-all"]
    if not any(k == "AmbientCapabilities" and v.strip() for k, v in items):
        s += ["--inh-caps", "-all", "--ambient-caps", "-all"]
    if yes(items, "NoNewPrivileges") or yes(items, "DynamicUser"):
        s += ["--no-new-privs"]
    s += ["--"]
    return b + s + [PYTHON, helper, "exec", spec_path, "--"] + list(argv)


def sandboxed_pid(fd):
    """The pid of the command bwrap runs (in our PID namespace), from its
    --info-fd: the child of the namespace's init."""
    with os.fdopen(fd) as f:
        data = f.read()
    try:
        init = json.loads(data)["child-pid"]
    except (ValueError, KeyError):
        return None
    end = time.time() + 10
    while time.time() < end:
        try:
            kids = open("/proc/%d/task/%d/children" % (init, init)).read()
        except OSError:
            return None
        if kids.split():
            return int(kids.split()[0])
        time.sleep(0.05)
    return None


def _load_filters(spec):
    import seccomp
    from seccomp import ALLOW, ERRNO, KILL_PROCESS, Arg, EQ, MASKED_EQ, \
        NE, GT

    def rule(f, action, name, *args):
        try:
            f.add_rule(action, name, *args)
        except (ValueError, RuntimeError, OSError):
            pass            # not a system call of this architecture

    filters = []
    if spec["allow"] is not None or spec["deny"]:
        if spec["allow"] is not None:
            f = seccomp.SyscallFilter(defaction=KILL_PROCESS)
            for n in spec["allow"]:
                rule(f, ALLOW, n)
        else:
            f = seccomp.SyscallFilter(defaction=ALLOW)
            for n in spec["deny"]:
                rule(f, KILL_PROCESS, n)
        filters.append(f)
    else:
        # SystemCallArchitectures=native alone: other ABIs killed
        filters.append(seccomp.SyscallFilter(defaction=ALLOW))
    f = seccomp.SyscallFilter(defaction=ALLOW)
    if spec["families"] is not None:
        fam = set(spec["families"])
        # every other family: EAFNOSUPPORT (as systemd does)
        for x in range(max(fam)):
            if x not in fam:
                rule(f, ERRNO(errno.EAFNOSUPPORT), "socket", Arg(0, EQ, x))
        rule(f, ERRNO(errno.EAFNOSUPPORT), "socket", Arg(0, GT, max(fam)))
    if spec["namespaces"]:
        for n in ("unshare", "setns"):
            rule(f, ERRNO(errno.EPERM), n)
        for flag in CLONE_NEW:
            rule(f, ERRNO(errno.EPERM), "clone",
                 Arg(0, MASKED_EQ, flag, flag))
        rule(f, ERRNO(errno.ENOSYS), "clone3")
    if spec["mdwe"]:
        wx = PROT_WRITE | PROT_EXEC
        rule(f, ERRNO(errno.EPERM), "mmap", Arg(2, MASKED_EQ, wx, wx))
        for n in ("mprotect", "pkey_mprotect"):
            rule(f, ERRNO(errno.EPERM), n,
                 Arg(2, MASKED_EQ, PROT_EXEC, PROT_EXEC))
        rule(f, ERRNO(errno.EPERM), "shmat",
             Arg(2, MASKED_EQ, SHM_EXEC, SHM_EXEC))
    if spec["realtime"]:
        for p in (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE):
            rule(f, ERRNO(errno.EPERM), "sched_setscheduler", Arg(1, EQ, p))
    if spec["suid"]:
        for bit in (S_ISUID, S_ISGID):
            rule(f, ERRNO(errno.EPERM), "chmod", Arg(1, MASKED_EQ, bit, bit))
            rule(f, ERRNO(errno.EPERM), "fchmod", Arg(1, MASKED_EQ, bit, bit))
            rule(f, ERRNO(errno.EPERM), "fchmodat",
                 Arg(2, MASKED_EQ, bit, bit))
    if spec["personality"]:
        rule(f, ERRNO(errno.EPERM), "personality", Arg(0, NE, 0))
    if spec["kernel_logs"]:
        rule(f, ERRNO(errno.EPERM), "syslog")
    if spec["clock"]:
        for n in ("adjtimex", "clock_adjtime", "clock_settime",
                  "settimeofday"):
            rule(f, ERRNO(errno.EPERM), n)
    if spec["modules"]:
        for n in ("init_module", "finit_module", "delete_module"):
            rule(f, ERRNO(errno.EPERM), n)
    if spec["hostname"]:
        for n in ("sethostname", "setdomainname"):
            rule(f, ERRNO(errno.EPERM), n)
    filters.append(f)
    # each load stacks and the most restrictive action wins, as with
    # systemd's several filters; the allow-list last, as it may not allow
    # seccomp() itself
    for f in reversed(filters):
        f.load()


def main():
    if len(sys.argv) < 5 or sys.argv[1] != "exec" or sys.argv[3] != "--":
        sys.exit("usage: unitsandbox.py exec SPEC.json -- ARGV...")
    spec = json.load(open(sys.argv[2]))
    argv = sys.argv[4:]
    os.umask(spec["umask"])
    os.environ.update(spec["env"])
    _load_filters(spec)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
