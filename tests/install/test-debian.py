#!/usr/bin/env python3
# debian/ against the build, without building the package (that and the
# package on a clean Debian 12 are debian-package.sh, the
#   suite's debian-package test):
# - every file `meson install` installs, at the path it gets with Debian's
#   prefix and directories, is in exactly one package's .install list, and
#   every .install line names something installed (or a source file);
# - the unit and the socket go where dh_installsystemd looks
#   (/lib/systemd/system on bookworm), the configuration directory and the
#   example the operator guide copies are packaged under the guide's paths,
#   and dh_compress leaves the files the unit and the guide name as they
#   are;
# - Build-Depends are the build section of tools/debian-packages.txt (but
#   what a build without the tests does not need), and debian/changelog
#   has the project's version.
#
#   test-debian.py SOURCE_DIR BUILD_DIR
# SPDX-License-Identifier: LGPL-2.1-or-later

import fnmatch
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optest import check, finish  # noqa: E402

SRC, BUILD = (os.path.abspath(a) for a in sys.argv[1:3])
DEBIAN = os.path.join(SRC, "debian")
MULTIARCH = "x86_64-linux-gnu"
# in the build section of tools/debian-packages.txt, not Build-Depends
NOT_BUILD_DEPENDS = {
    "gcc": "build-essential, which dpkg-buildpackage assumes",
    "check": "the tests (the package is built with -Dtests=disabled)",
    "indent": "the format test (tools/gst-indent.sh)",
}
# in Build-Depends, not in the build section
PACKAGING_ONLY = {
    "debhelper-compat": "debhelper",
    "help2man": "the manual pages (debian/rules)",
    "systemd": "systemd.pc: the unit directory, /lib/systemd/system",
}


def introspect(what):
    out = subprocess.run(["meson", "introspect", what, BUILD], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def debian_path(path, opts):
    """@path as meson installs it for this build, as it is for Debian's
    prefix (/usr), libdir (lib/MULTIARCH) and sysconfdir (/etc)."""
    prefix = opts["prefix"]

    def absolute(name):
        v = opts[name]
        return v if v.startswith("/") else os.path.join(prefix, v)
    for name, deb in (("libdir", "usr/lib/" + MULTIARCH),
                      ("bindir", "usr/bin"), ("includedir", "usr/include"),
                      ("datadir", "usr/share"), ("sysconfdir", "etc")):
        d = absolute(name) + "/"
        if path.startswith(d):
            return deb + "/" + path[len(d):]
    units = os.path.join(prefix, "lib", "systemd", "system") + "/"
    for d in (units, "/lib/systemd/system/", "/usr/lib/systemd/system/"):
        if path.startswith(d):
            return "lib/systemd/system/" + path[len(d):]
    return None


def install_lists():
    """{package: [(pattern, source or None)]}"""
    lists = {}
    for f in sorted(os.listdir(DEBIAN)):
        if not f.endswith(".install"):
            continue
        entries = []
        for line in open(os.path.join(DEBIAN, f)):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            pat = words[0].replace("${DEB_HOST_MULTIARCH}", MULTIARCH)
            entries.append((pat, words[1] if len(words) > 1 else None))
        lists[f[:-len(".install")]] = entries
    return lists


def matches(pattern, path):
    """dh_install's: a glob for a file, or a directory and all below"""
    return fnmatch.fnmatchcase(path, pattern) or \
        path.startswith(pattern.rstrip("/") + "/")


def main():
    opts = {o["name"]: o["value"] for o in introspect("--buildoptions")}
    installed = set()
    for path in introspect("--installed").values():
        p = debian_path(path, opts)
        check(p is not None, "%s maps to a Debian path" % path)
        if p:
            installed.add(p)
    # install_emptydir: the configuration directory
    installed.add("etc/gst-spice")
    lists = install_lists()
    check(set(lists) == {"gst-spice", "libgstspice-1.0-0",
                         "libgstspice-1.0-dev"},
          "one .install list per package of debian/control: %s" %
          sorted(lists))
    control = open(os.path.join(DEBIAN, "control")).read()
    packages = re.findall(r"^Package: (\S+)$", control, re.M)
    check(sorted(packages) == sorted(lists),
          "the packages of debian/control: %s" % packages)
    for path in sorted(installed):
        owners = [pkg for pkg, entries in lists.items()
                  if any(src is None and matches(pat, path)
                         for pat, src in entries)]
        check(len(owners) == 1, "%s is in one package: %s" % (path, owners))
    for pkg, entries in lists.items():
        for pat, src in entries:
            if src is None:
                ok = any(matches(pat, p) for p in installed)
            else:
                ok = os.path.exists(os.path.join(SRC, pat))
            check(ok, "%s.install: %s names something installed" %
                  (pkg, pat))
    gst = [pat for pat, src in lists.get("gst-spice", [])]
    for want in ("lib/systemd/system/gst-spice@.service",
                 "lib/systemd/system/gst-spice@.socket",
                 "usr/share/doc/gst-spice/examples/example.conf",
                 "usr/share/doc/gst-spice/operator-guide.md"):
        check(want in installed and any(matches(p, want) for p in gst),
              "gst-spice installs /%s" % want)
    check("etc/gst-spice" in gst, "gst-spice has /etc/gst-spice")
    check(("tools/fail2ban/gst-spice.conf", "etc/fail2ban/filter.d") in
          lists.get("gst-spice", []),
          "the fail2ban filter in /etc/fail2ban/filter.d")

    # what the unit and the guide name, as they are packaged
    unit = open(os.path.join(SRC, "tools", "systemd",
                             "gst-spice@.service.in")).read()
    check("EnvironmentFile=@CONFDIR@/%i.conf" in unit,
          "the unit reads CONFDIR/NAME.conf")
    doc = re.search(r"^Documentation=file://@DOCDIR@/(\S+)$", unit, re.M)
    guide = open(os.path.join(SRC, "docs", "operator-guide.md")).read()
    for cmd in ("dpkg-buildpackage -us -uc -b",
                "apt install ../gst-spice_*_amd64.deb "
                "../libgstspice-1.0-0_*_amd64.deb",
                "cp /usr/share/doc/gst-spice/examples/example.conf "
                "/etc/gst-spice/vm1.conf",
                "systemctl enable --now gst-spice@vm1"):
        check(cmd in guide, "the operator guide's recipe: %s" % cmd)
    rules = open(os.path.join(DEBIAN, "rules")).read()
    m = re.search(r"^\s*dh_compress (.*)$", rules, re.M)
    excluded = m.group(1).split() if m else []
    for name in ((doc.group(1) if doc else "?"), "example.conf"):
        check(any(x.startswith("-X") and x[2:] in name for x in excluded),
              "dh_compress leaves %s as the unit and the guide name it: %s"
              % (name, excluded))
    check("-Dtests=disabled" in rules, "built with -Dtests=disabled")

    # Build-Depends and tools/debian-packages.txt
    m = re.search(r"^Build-Depends:(.*?)^\S", control, re.M | re.S)
    bdeps = {re.split(r"[\s(]", d.strip())[0]
             for d in (m.group(1) if m else "").split(",") if d.strip()}
    text = open(os.path.join(SRC, "tools", "debian-packages.txt")).read()
    sec = re.search(r"^# build$(.*?)^# ", text, re.M | re.S)
    build = {l.strip() for l in (sec.group(1) if sec else "").splitlines()
             if l.strip() and not l.startswith("#")}
    check(bdeps - set(PACKAGING_ONLY) == build - set(NOT_BUILD_DEPENDS),
          "Build-Depends are tools/debian-packages.txt's build section: "
          "only in Build-Depends %s, only in the list %s" % (
              sorted(bdeps - set(PACKAGING_ONLY) - build),
              sorted(build - set(NOT_BUILD_DEPENDS) - bdeps)))
    version = re.search(r"version : '([^']+)'",
                        open(os.path.join(SRC, "meson.build")).read())
    first = open(os.path.join(DEBIAN, "changelog")).readline()
    m = re.match(r"gst-spice \(([^)-]+)(-[^)]*)?\)", first)
    check(version and m and m.group(1) == version.group(1),
          "debian/changelog's version is the project's: %s" % first.strip())
    finish()


main()
