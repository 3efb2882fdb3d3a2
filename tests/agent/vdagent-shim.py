#!/usr/bin/env python3
# tests/agent: a shim on the agent's virtio socket between Xorg's spiceqxl
# driver (libspice-server) and spice-vdagentd, for test-agent-desktop.sh.
#
# Why: spice-gtk >= 0.39 sends every VD_AGENT_MONITORS_CONFIG with
# VD_AGENT_CONFIG_MONITORS_FLAG_PHYSICAL_SIZE and a VDAgentMonitorMM array
# after the monitors (unconditionally, no agent capability for it), while
# spice-vdagentd 0.22.1 accepts only exactly
# sizeof (VDAgentMonitorsConfig) + n * sizeof (VDAgentMonConfig) bytes and
# drops the rest ("invalid message size for VDAgentMonitorsConfig"). Xorg's
# spiceqxl has no QXLInterface client_monitors_config, so libspice-server
# hands the config to the agent as it came. The shim rewrites that one
# message the way an agent that knew the flag would read it (flag cleared,
# the physical sizes cut off) and passes everything else through, so the
# test can check the rest of the resize path: the pipeline, Xorg's
# libspice-server, spice-vdagentd, spice-vdagent and RandR.
#
#   vdagent-shim.py LISTEN_PATH XORG_PATH
# spice-vdagentd -s LISTEN_PATH connects to the shim; the shim connects to
# Xorg's SpiceVdagentVirtioPath. One line on stderr per rewritten message.
# Wire layout (<spice/vd_agent.h>): VDIChunkHeader {u32 port, u32 size};
# VDAgentMessage {u32 protocol, u32 type, u64 opaque, u32 size} + data;
# VDAgentMonitorsConfig {u32 num_of_monitors, u32 flags} + 20-byte monitors.
# SPDX-License-Identifier: LGPL-2.1-or-later
import os
import select
import socket
import struct
import sys

VD_AGENT_MONITORS_CONFIG = 2
FLAG_PHYSICAL_SIZE = 1 << 1
MON_CONFIG_SIZE = 20
MAX_DATA_SIZE = 2048  # VD_AGENT_MAX_DATA_SIZE: one chunk's payload


class Rewriter:
    """Xorg -> vdagentd: reassembles each port's messages, re-chunks them."""

    def __init__(self):
        self.buf = b""
        self.ports = {}

    def feed(self, data):
        self.buf += data
        out = []
        while len(self.buf) >= 8:
            port, size = struct.unpack_from("<II", self.buf)
            if len(self.buf) < 8 + size:
                break
            self.ports[port] = self.ports.get(port, b"") + self.buf[8:8 + size]
            self.buf = self.buf[8 + size:]
            out.append(self.messages(port))
        return b"".join(out)

    def messages(self, port):
        out = []
        s = self.ports[port]
        while len(s) >= 20:
            proto, mtype, opaque, size = struct.unpack_from("<IIQI", s)
            if len(s) < 20 + size:
                break
            body = s[20:20 + size]
            s = s[20 + size:]
            if mtype == VD_AGENT_MONITORS_CONFIG and len(body) >= 8:
                n, flags = struct.unpack_from("<II", body)
                if flags & FLAG_PHYSICAL_SIZE:
                    body = struct.pack("<II", n, flags & ~FLAG_PHYSICAL_SIZE) \
                        + body[8:8 + n * MON_CONFIG_SIZE]
                    print("shim: monitors config of %d bytes (%d monitors, "
                          "flags 0x%x) -> %d bytes" % (size, n, flags,
                                                        len(body)),
                          file=sys.stderr, flush=True)
            msg = struct.pack("<IIQI", proto, mtype, opaque, len(body)) + body
            for i in range(0, len(msg), MAX_DATA_SIZE):
                part = msg[i:i + MAX_DATA_SIZE]
                out.append(struct.pack("<II", port, len(part)) + part)
        self.ports[port] = s
        return b"".join(out)


def main():
    listen_path, xorg_path = sys.argv[1], sys.argv[2]
    try:
        os.unlink(listen_path)
    except FileNotFoundError:
        pass
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(listen_path)
    ls.listen(1)
    while True:
        agent, _ = ls.accept()
        xorg = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        xorg.connect(xorg_path)
        rw = Rewriter()
        alive = True
        while alive:
            r, _, _ = select.select([agent, xorg], [], [])
            for s in r:
                data = s.recv(65536)
                if not data:
                    alive = False
                    break
                if s is xorg:
                    agent.sendall(rw.feed(data))
                else:
                    xorg.sendall(data)
        agent.close()
        xorg.close()


if __name__ == "__main__":
    main()
