#!/usr/bin/env python3
# Docs that run: every command in README.md, docs/user-guide.md and
# docs/operator-guide.md (the ```sh blocks) is either run here, the way the
# doc says (from where the doc's shell is, through `meson devenv`, against
# the test guest, checked with spicy-screenshot), or named with the test in
# the suite that exercises it. A command the table below does not know
# fails the test, so a new command in the docs needs a check here.
#
# Ports: the docs' fixed ports (5900, 5930, 5910) are replaced by free
# ones; nothing else of a command changes. GUI programs run under Xvfb.
# Also checked: the operator guide's exit-code table against the unit's
# RestartPreventExitStatus= and the runner's --help, and that no doc puts
# a password on a command line.
#
#   test-docs.py SOURCE_DIR BUILD_DIR
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import pty
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(sys.argv[1])
BUILD = os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(SRC, "tests", "install"))
from optest import check, finish, free_port, free_ports, screenshot_once, \
    skip_if_sanitized, wait_port  # noqa: E402

DOCS = ["README.md", "docs/user-guide.md", "docs/operator-guide.md"]
# commands of a section this helper does not own, known not to do what the
# doc promises yet: reported, and a failure once they start to pass (so
# that the entry is removed)
KNOWN_BAD = {}
XVFB_SIZE = "1280x1024"


def doc_commands(path):
    """(command, block text) for each command line of each ```sh block."""
    lines = open(os.path.join(SRC, path)).read()
    cmds, cur = [], ""
    inside = False
    for line in lines.splitlines():
        if line.startswith("```"):
            inside = not inside and line.strip() == "```sh"
            continue
        if not inside:
            continue
        line = re.sub(r"\s{2,}#.*$", "", line.rstrip())
        cur += line
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip() + " "
            continue
        cmd = re.sub(r"\s+", " ", cur).strip()
        cur = ""
        if cmd and not cmd.startswith("#"):
            cmds.append(cmd)
    return cmds


def doc_block_starting(path, first_line):
    """The text of a ``` block whose first line is @first_line."""
    text = open(os.path.join(SRC, path)).read()
    m = re.search(r"```\n(" + re.escape(first_line) + r"\n.*?)```", text,
                  re.S)
    return m.group(1) if m else None


class Ctx:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="gst-spice-docs-")
        self.ports = {5900: free_port(), 5930: free_port(),
                      5910: free_port()}
        self.guests = {}
        self.server = None
        self.env = dict(os.environ)
        # the user's environment, not the test suite's plugin sandbox
        for k in ("GST_PLUGIN_SYSTEM_PATH_1_0", "GST_PLUGIN_PATH_1_0",
                  "GST_REGISTRY_1_0"):
            self.env.pop(k, None)
        self.env["GST_REGISTRY"] = os.path.join(self.tmp, "registry.bin")
        # what `meson devenv -C build` adds
        dump = subprocess.run(["meson", "devenv", "-C", BUILD, "--dump"],
                              capture_output=True, text=True,
                              check=True).stdout
        out = subprocess.run(["sh", "-c", dump + "\nenv -0"], env=self.env,
                             capture_output=True, text=True,
                             check=True).stdout
        self.env = dict(kv.split("=", 1) for kv in out.split("\0") if "=" in kv)
        # the runner's pipelines listen on ${LISTEN_PORT:-5910}: the
        # environment is one of the runner's documented inputs
        self.env["LISTEN_PORT"] = str(self.ports[5910])
        # autovideosink falls back to dfbvideosink when ximagesink cannot
        # open the display at once, and DirectFB's dispatch thread then
        # crashes (SIGSEGV in libfusion, seen in clean clones): keep it out
        # so that such a start fails with a message and is retried
        self.env["GST_PLUGIN_FEATURE_RANK"] = "dfbvideosink:NONE"
        self.xvfb = None

    def subst(self, cmd):
        for doc, real in self.ports.items():
            cmd = re.sub(r"(?<![0-9])%d(?![0-9])" % doc, str(real), cmd)
        return cmd.replace("-C build ", "-C %s " % BUILD)

    def guest(self, doc_port, activity="busy"):
        if doc_port not in self.guests:
            self.guests[doc_port] = subprocess.Popen(
                [os.path.join(BUILD, "tools", "spice-test-guest"), "--port",
                 str(self.ports[doc_port]), "--activity", activity],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
        wait_port(self.ports[doc_port])

    def display(self):
        # Xvfb names its display (-displayfd) in two writes, the number
        # and then "\n", and dies ("Cannot write display number to fd")
        # when the pipe is closed between them: read up to the newline
        # (reading once lost the display one start in three here, and
        # remote-viewer said "cannot open display: :0" in CI). xdpyinfo
        # must then open it before a client is started on it.
        if self.xvfb and self.xvfb.poll() is None:
            return
        for attempt in range(3):
            r, w = os.pipe()
            xlog = open(os.path.join(self.tmp, "xvfb.log"), "w+")
            # -noreset: without it Xvfb resets when its last client leaves,
            # and the next command's window, opened during the reset, gets
            # "Could not open display" (one in two here)
            self.xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(w),
                                          "-screen", "0", XVFB_SIZE + "x24",
                                          "-noreset", "-nolisten", "tcp"],
                                         pass_fds=(w,),
                                         stdout=subprocess.DEVNULL,
                                         stderr=xlog)
            os.close(w)
            got = b""
            while not got.endswith(b"\n"):
                more = os.read(r, 64)
                if not more:
                    break
                got += more
            os.close(r)
            num = got.decode().strip()
            info = None
            for _ in range(50):
                info = subprocess.run(["xdpyinfo", "-display", ":" + num],
                                      capture_output=True, text=True)
                if info.returncode == 0 or self.xvfb.poll() is not None:
                    break
                time.sleep(0.1)
            ours = re.search(r"dimensions:\s+%s pixels" % XVFB_SIZE,
                             info.stdout)
            if num and self.xvfb.poll() is None and ours:
                self.env["DISPLAY"] = ":" + num
                return
            print("Xvfb :%s did not start (attempt %d: "
                  "Xvfb said %r, %s; xdpyinfo: %s)" % (
                      num, attempt + 1, got, "running" if self.xvfb.poll()
                      is None else "exit %s" % self.xvfb.returncode,
                      info.stderr.strip()[-200:] or "another screen"))
            xlog.seek(0)
            print(xlog.read()[-1500:])
            self.xvfb.terminate()
            self.xvfb.wait()
        check(False, "Xvfb gives a display clients can open")

    def devenv(self, cmd, server=False):
        """a command typed in the guide's `meson devenv -C build --workdir .`
        shell (its environment, self.env), in the directory the user is in;
        a server is the shell's foreground job (Ctrl-C reaches it alone)"""
        return ["sh", "-c", ("exec " if server else "") + cmd]

    def start(self, argv, name):
        log = open(os.path.join(self.tmp, name + ".log"), "w+")
        p = subprocess.Popen(argv, env=self.env, cwd=self.tmp,
                             stdin=subprocess.DEVNULL, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True)
        p.logfile = log
        return p

    def stop_server(self):
        if self.server:
            stop(self.server, signal.SIGINT)
            self.server = None

    def cleanup(self):
        self.stop_server()
        for g in self.guests.values():
            g.terminate()
            g.wait()
        if self.xvfb:
            self.xvfb.terminate()
            self.xvfb.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def stop(p, sig=signal.SIGTERM, timeout=15):
    if p.poll() is None:
        os.killpg(p.pid, sig)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return p.returncode


def logtext(p):
    p.logfile.flush()
    return open(p.logfile.name).read()


def screenshot(ctx, doc_port, password=None, timeout=60):
    out = os.path.join(ctx.tmp, "shot.ppm")
    end = time.time() + timeout
    while time.time() < end:
        if screenshot_once(ctx.ports[doc_port], password, out):
            return True
        time.sleep(0.5)
    return False


# ---- handlers: how each command is exercised ----

def h_run(ctx, cmd, expect=None):
    r = subprocess.run(ctx.devenv(ctx.subst(cmd)) if not cmd.startswith(
        "meson devenv") else shlex.split(ctx.subst(cmd)), env=ctx.env,
        cwd=ctx.tmp, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    out = r.stdout + r.stderr
    ok = r.returncode == 0 and (expect is None or expect in out)
    check(ok, "%s -> %d %s" % (cmd, r.returncode, "" if ok else out[-2000:]))


def h_serve(ctx, cmd, guest=None, password=None, gui=False, wait=None,
            spice=True):
    """a long-running command: it keeps running; with a SPICE port, a
    client gets a picture from it; it stays up for the next command (a
    client)"""
    ctx.stop_server()
    if guest:
        ctx.guest(guest)
    if gui:
        ctx.display()
    argv = shlex.split(ctx.subst(cmd)) if cmd.startswith("meson devenv") \
        else ctx.devenv(ctx.subst(cmd), server=True)
    p = ctx.start(argv, "server")
    if gui:
        # a window on a just-started Xvfb: a first start that ends at once
        # (seen in clean clones, with no error printed) is tried once more,
        # and said
        time.sleep(1)
        if p.poll() is not None:
            print("note %s: ended at once (exit %s: %s), started again" % (
                cmd, p.returncode, logtext(p)[-300:].strip()))
            p = ctx.start(argv, "server")
    ok = True
    if wait:
        end = time.time() + 60
        while time.time() < end and wait not in logtext(p):
            time.sleep(0.2)
        ok = check(wait in logtext(p), "%s: logs '%s'" % (cmd, wait))
    if ok and spice:
        ok = check(screenshot(ctx, 5910, password),
                   "%s: a client gets a picture" % cmd)
    else:
        time.sleep(3)
    check(p.poll() is None, "%s: still running (%s)" % (
        cmd, "" if p.poll() is None else "exit %s: %s" % (
            p.returncode, logtext(p)[-1500:])))
    ctx.server = p
    return p


def h_client(ctx, cmd):
    """remote-viewer against the server the doc just started"""
    ctx.display()
    p = ctx.start(shlex.split(ctx.subst(cmd)), "client")
    time.sleep(4)
    alive = p.poll() is None
    check(alive and ctx.server is not None and ctx.server.poll() is None,
          "%s: stays connected (%s)" % (cmd, "" if alive else logtext(p)))
    stop(p)


def h_record(ctx, cmd):
    ctx.stop_server()
    ctx.guest(5930)
    out = os.path.join(ctx.tmp, "session.webm")
    p = ctx.start(ctx.devenv(ctx.subst(cmd), server=True), "record")
    time.sleep(5)
    code = stop(p, signal.SIGINT)
    check(code == 0 and os.path.exists(out) and os.path.getsize(out) > 1000,
          "%s: session.webm written where the user is (exit %s)" % (cmd, code))


def h_codec(ctx, cmd):
    """the codec recipe: it serves, and the encoder under test streams"""
    ctx.stop_server()
    p = ctx.start(ctx.devenv(ctx.subst(cmd) + " --stats-interval 1",
                             server=True), "codec")
    ok = screenshot(ctx, 5910)
    time.sleep(3)
    text = logtext(p)
    frames = [int(m) for m in re.findall(r"t: .*?stream-frames=(\d+)", text)]
    streams = bool(frames) and max(frames) > 0
    stop(p)
    known = KNOWN_BAD.get(cmd)
    if known:
        print("KNOWN %s: %s (streams: %s)" % (cmd, known, streams))
        check(ok and not streams, "%s: still known bad" % cmd)
    else:
        check(ok and streams, "%s: serves and streams (%s)" % (cmd, frames))


def h_check_my_pipeline(ctx, cmd):
    block = doc_block_starting("docs/user-guide.md",
                               "# my.pipeline: a VM at half size, MJPEG only")
    if not check(block is not None, "user-guide shows my.pipeline"):
        return
    with open(os.path.join(ctx.tmp, "my.pipeline"), "w") as f:
        f.write(block)
    h_run(ctx, cmd, expect="to run it, set UPSTREAM")


def h_password_file(ctx, cmd):
    h_run(ctx, cmd)
    path = os.path.join(ctx.tmp, "clients.pw")
    check(os.path.exists(path) and oct(os.stat(path).st_mode & 0o777) ==
          "0o600", "clients.pw written where the user is, mode 600")


def typed_in_interactive_shell(ctx, cmd):
    """@cmd typed into an interactive bash on a terminal (job control),
    inside the guide's devenv shell, followed by the next command a user
    types once the guest listens; returns (picture, state): whether a
    client then gets a picture from the guest on 5930, and the job's state
    as bash's `jobs` prints it ("Running", "Stopped", ...). Each step waits
    for what it needs (a prompt, the port), not for a fixed time, so that
    a loaded machine cannot reorder what the user types."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(ctx.tmp)
        env = dict(ctx.env, SHELL="/bin/bash", PS1="$ ")
        os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)

    seen = []       # the whole terminal, for a failure's message

    def typed(line):
        os.write(fd, (line + "\n").encode())

    def until(pattern, secs):
        """terminal output up to @pattern (a regex), or all of it after
        @secs seconds"""
        out, end = "", time.time() + secs
        while time.time() < end and not re.search(pattern, out):
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    out += os.read(fd, 4096).decode(errors="replace")
                except OSError:
                    break
        seen.append(out)
        return out

    def shell_ready(tag):
        # the typed line echoes "mark-$((1+1))"; only the shell prints 2
        typed("echo %s-$((1+1))" % tag)
        return until(r"%s-2" % tag, 60)

    typed(ctx.subst("meson devenv -C build --workdir ."))
    shell_ready("devenv")
    typed(ctx.subst(cmd))
    wait_port(ctx.ports[5930], 60)
    # terminal input while the guest runs: a background job that reads
    # the terminal stops now (SIGTTIN)
    typed("echo the next command")
    shell_ready("next")
    state = ""
    for _ in range(20):
        typed("jobs")
        out = shell_ready("jobs")
        m = re.search(r"\[1\][+-]?\s+(\w+)", out)
        state = m.group(1) if m else "none"
        if state != "Running" or "</dev/null" in cmd:
            break
        time.sleep(0.5)     # the guest has not read the terminal yet
    ok = state == "Running" and screenshot(ctx, 5930, timeout=15)
    typed("kill -9 %1")
    shell_ready("killed")       # the shell has sent the signal
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    if state not in ("Running", "Stopped"):
        # no job any more: what the guest said when it ended
        state += ", terminal: " + "".join(seen)[-800:]
    return ok, state


def h_interactive_guest(ctx, cmd):
    ok, state = typed_in_interactive_shell(ctx, cmd)
    check(ok, "interactive shell: '%s' runs (%s) and serves a picture"
          % (cmd, state))
    # the control: without </dev/null the guest is stopped (SIGTTIN)
    bad = cmd.replace(" </dev/null", "")
    if bad != cmd:
        ok, state = typed_in_interactive_shell(ctx, bad)
        check(state == "Stopped" and not ok,
              "interactive shell: '%s' (without </dev/null) is stopped "
              "(jobs: %s)" % (bad, state))
    # the guide's background guest is the one the next commands use
    ctx.guests.pop(5930, None)
    ctx.guest(5930)


def h_demo(ctx, cmd):
    if os.path.realpath(os.path.join(SRC, "build")) != os.path.realpath(BUILD):
        print("skip %s: it builds into SRC/build, not this build" % cmd)
        return
    # its ports from the environment (LISTEN_PORT, GUEST_PORT, as the demo
    # pipeline takes them): free ones, not the documented 5910 and 5930,
    # which anything else on the machine may hold
    listen, guest = free_ports(2)
    env = dict(ctx.env, LISTEN_PORT=str(listen), GUEST_PORT=str(guest))
    r = subprocess.run([os.path.join(SRC, "tools", "demo.sh"), "--verify"],
                       cwd=SRC, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, env=env)
    check(r.returncode == 0, "%s --verify -> %d %s" % (
        cmd, r.returncode, (r.stdout + r.stderr)[-1500:]))
    # never silent while it builds (README.md): it says what it does
    check("spice://127.0.0.1:%s\n" % env["LISTEN_PORT"] in r.stdout,
          "%s prints the URL of the port it was given: %s" % (
              cmd, r.stdout[-1500:]))
    check(re.search(r"^demo\.sh: (build/ is up to date|built)$", r.stdout,
                    re.M) is not None,
          "%s says whether it builds (build/ is up to date, built): %s"
          % (cmd, r.stdout[-1500:]))


def elsewhere(where):
    def h(ctx, cmd):
        print("ok   %s: exercised by %s" % (cmd, where))
    return h


INSTALL = elsewhere("tests/install (meson install into a DESTDIR, the unit "
                    "verified, the installed runner run with its environment)")
RELOAD = elsewhere("tests/runner (SIGHUP, the unit's ExecReload: unchanged, "
                   "broken, failing and changed reloads)")
CODEC = elsewhere("tests/rig (rig-quality: the quality measurement the "
                  "comparison tool reports) and tests/rig/rig-smoke; the full "
                  "comparison is a 30-minute benchmark (bench/)")
DEBIAN = elsewhere("tests/install/test-debian.py (debian/ against meson "
                   "install and tools/debian-packages.txt) and "
                   "debian-package (tests/install/debian-package.sh: the "
                   "build, lintian, the packages in a clean Debian 12 "
                   "chroot, where the unit's ExecStart with its environment "
                   "and sandbox serves the guest's exact picture)")


def h_build_dep(ctx, cmd):
    """apt-get build-dep, simulated (-s: nothing installed, no root): it
    reads debian/control and every Build-Depends can be installed"""
    r = subprocess.run(shlex.split(cmd) + ["-s"], cwd=SRC,
                       capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    out = r.stdout + r.stderr
    check(r.returncode == 0, "%s -s (from the top of the source tree) "
          "-> %d %s" % (cmd, r.returncode, out[-1500:]))


CI = elsewhere(".ci/run (tools/run-tests.sh runs tools/install-deps.sh and "
               "this suite)")

COMMANDS = {
    # README.md
    "tools/demo.sh": h_demo,
    "tools/run-tests.sh": CI,
    "meson devenv -C build gst-inspect-1.0 spicesrc":
        lambda c, x: h_run(c, x, expect="spicesrc"),
    "meson devenv -C build gst-launch-1.0 spicesrc uri=spice://127.0.0.1:5900 ! videoconvert ! autovideosink":
        lambda c, x: h_serve(c, x, guest=5900, gui=True, spice=False),
    # user-guide.md
    "meson devenv -C build --workdir .": elsewhere(
        "every command of this test, which runs in that shell"),
    "spice-test-guest --port 5930 --activity busy </dev/null &":
        h_interactive_guest,
    "gst-launch-1.0 spicesrc uri=spice://127.0.0.1:5930 ! videoconvert ! autovideosink":
        lambda c, x: h_serve(c, x, guest=5930, gui=True, spice=False),
    "gst-launch-1.0 spicesrc uri=spice://127.0.0.1:5930 ! spicetiler name=t t.draw ! s.draw t.stream ! queue max-size-buffers=1 leaky=downstream ! vp8enc deadline=1 ! s.stream_0 spicesink name=s port=5910":
        lambda c, x: h_serve(c, x, guest=5930),
    "remote-viewer spice://127.0.0.1:5910": h_client,
    "gst-launch-1.0 spicesrc uri=spice://127.0.0.1:5930 ! spicetiler streaming=off ! spicesink port=5910":
        lambda c, x: h_serve(c, x, guest=5930),
    "gst-launch-1.0 videotestsrc is-live=true pattern=ball ! video/x-raw,format=BGRx,width=1280,height=720 ! spicetiler name=t t.draw ! s.draw t.stream ! queue max-size-buffers=1 leaky=downstream ! vp8enc deadline=1 ! s.stream_0 spicesink name=s port=5910":
        h_serve,
    "gst-launch-1.0 ximagesrc use-damage=false ! videoconvert ! video/x-raw,format=BGRx ! spicetiler ! spicesink port=5910":
        lambda c, x: h_serve(c, x, gui=True),
    "gst-launch-1.0 -e spicesrc uri=spice://127.0.0.1:5930 ! videorate ! video/x-raw,framerate=15/1 ! videoconvert ! vp8enc deadline=1 ! webmmux ! filesink location=session.webm":
        h_record,
    "printf '%s\\n' 'choose-a-password' > clients.pw && chmod 600 clients.pw":
        h_password_file,
    "gst-spice-run -D UPSTREAM=spice://127.0.0.1:5930 -D LISTEN_ADDRESS=0.0.0.0 -D PASSWORD_FILE=clients.pw transcode-vp8":
        lambda c, x: h_serve(c, x, guest=5930, password="choose-a-password",
                             wait="playing"),
    "cp /usr/share/doc/gst-spice/examples/example.conf /etc/gst-spice/vm1.conf":
        INSTALL,
    "systemctl enable --now gst-spice@vm1": INSTALL,
    "gst-spice-run --check my.pipeline": h_check_my_pipeline,
    "gst-spice-run -D UPSTREAM=spice://127.0.0.1:5930 my.pipeline":
        lambda c, x: h_serve(c, x, guest=5930, wait="playing"),
    "gst-launch-1.0 spicesrc uri=spice://127.0.0.1:5930 ! spicetiler name=t t.draw ! s.draw t.stream ! spicestreamenc encoder=\"vp9enc deadline=1 cpu-used=8 target-bitrate=1500000\" ! s.stream_0 spicesink name=s port=5910":
        lambda c, x: h_serve(c, x, guest=5930),
    "bench/codec-compare.py run --build build --out /tmp/codecs --encoders jpegenc-70,vp8enc,vp9enc,x264enc,openh264enc,av1enc --encoder 'mine=vp9enc deadline=1 cpu-used=6 end-usage=cq cq-level=30' --profiles lan,80/10,150/2 --activities busy,video,film,desktop-video --docs docs/benchmarks/history --stem codec-mine":
        CODEC,
    "gst-spice-run -D PATTERN=snow -D ENCODER=\"vp9enc deadline=1 cpu-used=8\" serve-test":
        h_codec,
    "gst-spice-run -D PATTERN=snow -D ENCODER=\"jpegenc quality=60\" serve-test":
        h_codec,
    # operator-guide.md
    "apt-get build-dep ./": h_build_dep,
    "dpkg-buildpackage -us -uc -b": DEBIAN,
    "apt install ../gst-spice_*_amd64.deb ../libgstspice-1.0-0_*_amd64.deb":
        DEBIAN,
    "tools/install-deps.sh": CI,
    "meson setup build-release --prefix=/usr": INSTALL,
    "ninja -C build-release": INSTALL,
    "ninja -C build-release install": INSTALL,
    "$EDITOR /etc/gst-spice/vm1.conf": INSTALL,
    "systemctl reload gst-spice@vm1": RELOAD,
    "systemctl edit gst-spice@vm1.socket": INSTALL,
    "systemctl enable --now gst-spice@vm1.socket": elsewhere(
        "tests/install (the socket unit verified with the guide's drop-in) "
        "and tests/runner (runner-reload: gst-spice-run started by "
        "systemd-socket-activate when a client connects, serving on its "
        "socket through a changed reload)"),
    "journalctl -u gst-spice@vm1": elsewhere(
        "tests/runner (what the runner logs to stderr, the journal)"),
    # operator-guide.md, "TLS": the certificates are made here as written;
    # the pipeline and the client need a TLS upstream and names that
    # resolve, which tests/tls provides
    "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca-cert.pem -days 3650 -subj \"/CN=Example SPICE CA\"":
        h_run,
    "openssl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr -subj \"/C=XX/O=Example/CN=gw1.example.org\"":
        h_run,
    "printf 'subjectAltName=DNS:gw1.example.org\\n' > ext.cnf": h_run,
    "openssl x509 -req -in server.csr -CA ca-cert.pem -CAkey ca-key.pem -CAcreateserial -out server-cert.pem -days 825 -extfile ext.cnf":
        lambda c, x: h_run(c, x, expect="subject=C = XX, O = Example, "
                           "CN = gw1.example.org"),
    "gst-spice-run -D UPSTREAM=\"spice://vm1.lan?tls-port=5901\" -D UPSTREAM_CA_FILE=/etc/pki/qemu/ca-cert.pem -D UPSTREAM_HOST_SUBJECT=\"C=XX,O=Example,CN=vm1\" -D LISTEN_ADDRESS=0.0.0.0 -D PASSWORD_FILE=clients.pw -D LISTEN_PORT=-1 -D TLS_PORT=5911 -D TLS_CERT_FILE=server-cert.pem -D TLS_KEY_FILE=server-key.pem transcode-vp8":
        elsewhere("tests/tls (tls-runner: transcode-lossless with these "
                  "variables, TLS-only upstream to TLS-only listener, exact "
                  "picture; a wrong UPSTREAM_CA_FILE exits 77)"),
    "remote-viewer --spice-ca-file=ca-cert.pem --spice-host-subject=\"C=XX,O=Example,CN=gw1.example.org\" \"spice://gw1.example.org?tls-port=5911\"":
        elsewhere("tests/tls (tls-sink: spice-gtk with ca-file and "
                  "cert-subject, refused with a wrong CA or subject)"),
    # operator-guide.md, "Behind a proxy": needs a TLS upstream behind a
    # CONNECT proxy and a .vv file, which tests/tls provides
    "gst-spice-run -D UPSTREAM_VV=/run/gst-spice/vm101.vv -D LISTEN_ADDRESS=0.0.0.0 -D PASSWORD_FILE=clients.pw transcode-vp8":
        elsewhere("tests/tls (tls-proxy: transcode-vp8 with only "
                  "UPSTREAM_VV, the test guest's TLS port behind tinyproxy: "
                  "exact picture, the CONNECT in tinyproxy's log, no ticket "
                  "in the service log, the file deleted, a second start "
                  "exits 77 naming it)"),
    "systemd-analyze security gst-spice@vm1": elsewhere(
        "tests/install (unit-security: systemd-analyze security "
        "--offline=yes on the unit as built, at most 2.5)"),
    "kubectl create secret tls gst-spice-vm1-tls --cert=server-cert.pem --key=server-key.pem":
        elsewhere("tests/scale/test-k8s.py (a certificate and key made by "
                  "the test, mounted where the Secret is; a spice-gtk client "
                  "over TLS gets the picture)"),
    "podman build -f tools/k8s/Containerfile -t registry.example.com/gst-spice:0.1.0 .":
        elsewhere("tests/scale/test-k8s.py (lints the Containerfile; the "
                  "suite has no container runtime and pulls no image)"),
    "kubectl apply -f gst-spice-vm1.yaml": elsewhere(
        "tests/scale/test-k8s.py (the manifests against the Kubernetes API "
        "types, their container command run against a test guest)"),
    "nice -n -5 bench/sessions.py run --update-docs": elsewhere(
        "tests/scale/test-sessions.py (a short run, N=1 and 2); the full run "
        "is a 15-minute benchmark"),
    "bench/sessions.py report docs/benchmarks/sessions.json": elsewhere(
        "tests/scale/test-sessions.py (the committed tables are what it "
        "writes from the committed JSON)"),
}


def check_exit_codes():
    guide = open(os.path.join(SRC, "docs", "operator-guide.md")).read()
    rows = re.findall(r"^\| (\d+) \| .*\| (yes|no) \|$", guide, re.M)
    table = {int(c): r for c, r in rows}
    check(sorted(table) == [0, 64, 65, 66, 69, 75, 77, 78],
          "exit-code table lists %s" % sorted(table))
    unit = open(os.path.join(SRC, "tools", "systemd",
                             "gst-spice@.service.in")).read()
    m = re.search(r"^RestartPreventExitStatus=(.*)$", unit, re.M)
    prevent = sorted(int(x) for x in m.group(1).split()) if m else []
    check(prevent == sorted(c for c, r in table.items() if r == "no" and c),
          "the unit's RestartPreventExitStatus=%s matches the table" % prevent)
    out = subprocess.run([os.path.join(BUILD, "tools", "runner",
                                       "gst-spice-run"), "--help"],
                         capture_output=True, text=True).stdout
    for code in table:
        if code:
            check(str(code) in out, "--help mentions exit code %d" % code)


def check_passwords(all_cmds):
    bad = [c for c in all_cmds if re.search(r"(?<!_)PASSWORD=|password=", c)]
    check(not bad, "no password on a command line: %s" % bad)


def main():
    skip_if_sanitized(BUILD)
    ctx = Ctx()
    all_cmds = []
    try:
        for doc in DOCS:
            for cmd in doc_commands(doc):
                all_cmds.append(cmd)
                handler = COMMANDS.get(cmd)
                if not check(handler is not None,
                             "%s: '%s' is exercised" % (doc, cmd)):
                    continue
                handler(ctx, cmd)
        for cmd in COMMANDS:
            check(cmd in all_cmds, "table entry still in a doc: %s" % cmd)
        check_exit_codes()
        check_passwords(all_cmds)
    finally:
        ctx.cleanup()
    finish()


main()
