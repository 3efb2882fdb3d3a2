#!/usr/bin/env python3
"""Writes the seed corpus of fuzz-session (tests/fuzz/corpus/session/):
hand-written programs in the harness's operation format (fuzz-session.c,
the OP_* enum). Each seed is a scenario a real client, guest or pipeline
goes through, so that the fuzzer starts from deep states.

    tests/fuzz/session-seeds.py [OUT_DIR]
"""
import os
import struct
import sys

(OP_CONNECT, OP_LINK, OP_AUTH, OP_MSG, OP_MSG2, OP_AGENT, OP_HOLD, OP_UNHOLD,
 OP_SHUT, OP_RST, OP_CLOSE, OP_STALL, OP_WAIT, OP_DRAW, OP_FRAME, OP_PAD,
 OP_STATE, OP_GUEST, OP_CURSOR, OP_AUDIO, OP_SETTING, OP_SLEEP, OP_SESSION,
 OP_SURFACE) = range(24)
N_SOCKS = 6

# channel selectors (chan_table in the harness)
MAIN, DISPLAY, INPUTS, CURSOR, PLAYBACK, RECORD, USBREDIR = 0, 2, 5, 7, 8, 9, 12
# message type selectors (msg_types in the harness)
T = {name: i for i, name in enumerate(
    ["ACK_SYNC", "ACK", "PONG", "FLUSH_MARK", "MIGRATE_DATA", "DISCONNECTING"]
    + [str(n) for n in range(101, 115)])}
# settings
(SET_MAX_CLIENTS, SET_MAX_CLIPBOARD, SET_PASSWORD, SET_QUEUE,
 SET_CLIENT_TIMEOUT, SET_IDLE, SET_SOURCE_LIMITS, SET_PACING,
 SET_REFRESH, SET_REDIRECT) = range(10)
SESSION_CHANS = [DISPLAY, INPUTS, CURSOR, PLAYBACK, RECORD]


class Program:
    """Builds a program and keeps track of the harness's socket slots (a
    connect takes the lowest free slot; a "sock" byte picks the n-th open
    one), so that scenarios can name their sockets."""

    def __init__(self):
        self.b = bytearray()
        self.slots = [None] * N_SOCKS

    def op(self, code, *args):
        self.b.append(code)
        for a in args:
            if isinstance(a, (bytes, bytearray)):
                self.b += a
            else:
                self.b.append(a & 0xff)
        return self

    def _take(self, name):
        i = self.slots.index(None)
        self.slots[i] = name
        return name

    def pick(self, name):
        open_ = [s for s in self.slots if s is not None]
        return open_.index(name)

    def connect(self, name, flags=0):
        self._take(name)
        return self.op(OP_CONNECT, flags)

    def link(self, name, chan, idmode=0, caps=0, flags=1, *extra):
        """flags 1: with the ticket that links; @extra: a u32 connection
        id (id mode 3)"""
        return self.op(OP_LINK, self.pick(name), chan, idmode, caps, flags,
                       *extra)

    def auth(self, name, mode=0):
        return self.op(OP_AUTH, self.pick(name), mode)

    def msg(self, name, tsel, sm=0, *fields):
        """a natural body (sm & 7 < 5) starts with its selector byte v,
        then the fields natural_body() reads for the type"""
        return self.op(OP_MSG, self.pick(name), T[tsel], sm, *fields)

    def agent(self, name, kind, *fields, chunk=0):
        return self.op(OP_AGENT, self.pick(name), kind, chunk, *fields)

    def close(self, name, rst=False):
        self.op(OP_RST if rst else OP_CLOSE, self.pick(name))
        self.slots[self.slots.index(name)] = None
        return self

    def sock_op(self, code, name, *args):
        return self.op(code, self.pick(name), *args)

    def session(self, prefix, mask, caps=0):
        """main + the channels of @mask (OP_SESSION); names: prefix+chan"""
        self._take(prefix + "main")
        names = ["display", "inputs", "cursor", "playback", "record"]
        for i, n in enumerate(names):
            if mask & (1 << i):
                self._take(prefix + n)
        return self.op(OP_SESSION, mask, caps)

    def wait(self, n=7):
        return self.op(OP_WAIT, n)


def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v)


# OP_SESSION's caps byte: every channel over WebSocket, deflate offered
WS, WS_DEFLATE = 0x08, 0x10
# OP_CONNECT's flags: WebSocket, its framing (ws_frame()), deflate offered
C_WS, C_DEFLATE = 0x04, 0x40


def full_session(caps=0):
    p = Program()
    p.session("a", 0x3f, caps)                  # every channel, ATTACH first
    p.wait().op(OP_DRAW, 1, 0).op(OP_DRAW, 2, 0).wait()
    p.op(OP_FRAME, 0, 0, 1, 0x10).op(OP_FRAME, 0, 1, 1, 0x11).wait()
    p.msg("amain", "105", 0, 0)                 # MOUSE_MODE_REQUEST client
    p.msg("amain", "PONG", 0, 1, u32(1), u16(100))
    p.msg("amain", "101", 0, 0, b"12345678")    # CLIENT_INFO
    p.msg("ainputs", "101", 0, 0x10, 0x1e)      # KEY_DOWN 'a'
    p.msg("ainputs", "102", 0, 0x10, 0x1e)      # KEY_UP
    p.msg("ainputs", "104", 0, 3, b"\xe0\x48\xe0\xc8")  # KEY_SCANCODE
    p.msg("ainputs", "103", 0, 0, u16(7))       # KEY_MODIFIERS
    for x in range(5):
        p.msg("ainputs", "112", 0, 0, u16(10 * x), u16(20), 1)  # POSITION
    p.msg("ainputs", "113", 0, 0, 1, 1)         # PRESS
    p.msg("ainputs", "114", 0, 0, 1, 0)         # RELEASE
    p.msg("ainputs", "111", 0, 0, u16(3), u16(0xfffd), 0)  # MOTION
    p.msg("adisplay", "101", 0, 0, bytes(14))   # DISPLAY_INIT
    p.msg("adisplay", "102", 0, 0, 0, u32(0), u32(0), u32(0), 10, 0, 5,
          0)                                   # STREAM_REPORT
    p.op(OP_AUDIO, 0, 30).op(OP_AUDIO, 4, 2, u16(1000), u16(2000))
    p.msg("arecord", "102", 0, 0, u32(0), 0)    # RECORD_MODE raw
    p.msg("arecord", "103", 0, 0, u32(0))       # START_MARK
    p.msg("arecord", "101", 0, 0, u16(100), u32(1), bytes(16))  # DATA
    p.op(OP_CURSOR, 0x07, 10, 10).op(OP_CURSOR, 0x01, 12, 14)
    p.wait().op(OP_DRAW, 4, 0).op(OP_DRAW, 5, 0).wait()
    p.msg("amain", "DISCONNECTING", 0, 0, bytes(12))
    p.wait()
    return p


def ws_framings():
    """a session over WebSocket, then a main channel in each client
    framing of the harness (one binary frame, fragments with a ping
    between, the 64-bit length, text, unmasked, 7-byte fragments, an
    unsolicited pong, a close after the link) linking and talking"""
    p = Program()
    p.session("a", 0x03, WS)
    p.wait().op(OP_DRAW, 1, 0).wait()
    for style in range(8):
        name = "w%d" % style
        p.connect(name, C_WS | (style << 3) | (C_DEFLATE if style & 1 else 0))
        p.link(name, MAIN, 0, 0, 1)
        p.wait(3)
        p.msg(name, "PONG", 0, 1, u32(1), u16(100))
        p.msg("ainputs", "101", 0, 0x10, 0x1e)  # KEY_DOWN 'a'
        p.wait(2)
        p.close(name, rst=bool(style & 2))
    p.msg("ainputs", "102", 0, 0x10, 0x1e)      # KEY_UP
    p.wait()
    return p


def ws_deflate_display():
    """inputs over WebSocket with permessage-deflate, and a display
    without channel caps (no LZ4: BITMAP draws, deflated): draws, a
    stream, partial writes"""
    p = Program()
    p.session("a", 0x02, WS | WS_DEFLATE | 1)
    p.connect("d", C_WS | C_DEFLATE)
    p.link("d", DISPLAY, 0, 0x08, 1)            # caps selector: none
    p.wait().op(OP_DRAW, 1, 0).op(OP_DRAW, 2, 0).wait()
    p.op(OP_FRAME, 0, 0, 1, 0x10).wait()
    p.sock_op(OP_HOLD, "ainputs", u16(5))
    p.msg("ainputs", "112", 0, 0, u16(10), u16(20), 1)  # POSITION
    p.wait(2)
    p.sock_op(OP_UNHOLD, "ainputs")
    p.wait().op(OP_DRAW, 4, 0).wait()
    return p


def link_rst(chan, stage):
    """a channel reset at @stage of its link (main first for others)"""
    p = Program()
    if chan != MAIN:
        p.session("a", 0)
    p.connect("c")
    if stage >= 1:
        p.sock_op(OP_HOLD, "c", u16(20))        # a partial link message
        p.link("c", chan, 0, 0, 0)
    if stage >= 2:
        p.sock_op(OP_UNHOLD, "c")
    if stage >= 3:
        p.wait(2)
        p.auth("c", 0)                           # mechanism + ticket
    if stage >= 4:
        p.wait(5)
        p.op(OP_DRAW, 1, 0)
    p.close("c", rst=True)
    p.wait(3)
    return p


def ticket_then_rst(chan):
    p = Program()
    if chan != MAIN:
        p.session("a", 0)
    p.connect("c").link("c", chan, 0, 0, 1)     # link + ticket in one go
    p.close("c", rst=True)
    return p


def agent_exchange():
    p = Program()
    p.op(OP_SETTING, SET_MAX_CLIPBOARD, 2)       # 4096
    p.op(OP_GUEST, 0, 0x02)                      # the guest agent is there
    p.session("a", 0).session("b", 0)
    p.wait()
    for s in ("amain", "bmain"):
        p.msg(s, "106", 0, 3)                    # AGENT_START 10 tokens
        p.agent(s, 0, 0)                         # capabilities, selection
    p.wait()
    p.agent("amain", 1, 0x20)                    # grab CLIPBOARD UTF8+PNG
    p.wait()
    p.agent("bmain", 2, 0x00)                    # request UTF8
    p.wait()
    p.agent("amain", 3, 0x00, 2, b"abcdefgh")     # data, 3000 bytes
    p.wait()
    p.op(OP_GUEST, 1, 0x01)                      # guest grabs PRIMARY
    p.agent("bmain", 2, 0x01)                    # b pastes PRIMARY
    p.wait()
    p.op(OP_GUEST, 3, 0x01, 1, b"hello")         # guest answers
    p.op(OP_GUEST, 2, 0x00)                      # guest pastes CLIPBOARD
    p.wait()
    p.agent("amain", 3, 0x00, 1, b"fives")       # a answers
    p.agent("amain", 5, 0, 0, u16(800), u16(600))  # monitors config
    p.agent("bmain", 4, 0x00)                    # release
    p.msg("amain", "108", 0, 2)                  # AGENT_TOKEN 5
    p.wait()
    p.close("amain")
    p.wait()
    return p


def agent_withheld_tokens():
    """a client that gives no tokens back while clipboards come to it"""
    p = Program()
    p.op(OP_GUEST, 0, 0)
    p.session("a", 0)
    p.wait()
    p.msg("amain", "106", 0, 0)                  # AGENT_START 0 tokens
    p.agent("amain", 0, 0)
    p.op(OP_GUEST, 1, 0x00)                      # guest grabs CLIPBOARD
    p.wait()
    p.agent("amain", 2, 0x00)                    # two pastes
    p.agent("amain", 2, 0x00)
    p.wait()
    p.op(OP_GUEST, 3, 0x00, 3, bytes(8))         # 64 KiB answers
    p.op(OP_GUEST, 3, 0x00, 3, bytes(8))
    p.wait().wait()
    return p


def pad_release_blocked():
    p = Program()
    p.op(OP_SETTING, SET_QUEUE, 0)               # queue-size 1024
    p.session("a", 0x1 | 0x40 | 0x80)            # display stalls, small rcvbuf
    p.wait()
    for i in range(6):
        p.op(OP_FRAME, 0, i, 1, 0x10)
        p.op(OP_DRAW, 9, 0)
    p.op(OP_WAIT, 5)
    p.op(OP_PAD, 0, 1)                           # release stream_0
    p.op(OP_PAD, 1, 0).op(OP_FRAME, 1, 0, 1, 0x10)
    p.wait()
    return p


def states():
    p = Program()
    p.session("a", 0x7)
    p.wait().op(OP_DRAW, 1, 0).op(OP_FRAME, 0, 0, 1, 0x10)
    p.op(OP_STATE, 0).op(OP_DRAW, 2, 0).op(OP_STATE, 2)
    p.op(OP_STATE, 5)                            # READY and back
    p.op(OP_DRAW, 0, 0).op(OP_FRAME, 0, 0, 1, 0x10)
    p.op(OP_STATE, 7).wait()
    p.op(OP_PAD, 1, 0).op(OP_PAD, 1, 3 | (1 << 2))  # a VP8 pad
    p.op(OP_FRAME, 1, 0, 2, 0x10, 0, 0, 100, 50)
    p.op(OP_PAD, 0, 2)                           # EOS on stream_0
    p.wait()
    return p


def hostile_messages():
    p = Program()
    p.session("a", 0x7)
    p.wait()
    p.msg("ainputs", "101", 5, 0x41)             # KEY_DOWN, bad size
    p.msg("adisplay", "102", 7, u16(1))          # huge header
    p.msg("acursor", "101", 6, 3, b"abc")        # nothing is expected here
    p.msg("amain", "104", 0, 0).msg("amain", "104", 0, 0)  # ATTACH twice
    p.wait()
    for n in ("ainputs", "adisplay", "acursor", "amain"):
        p.close(n)
    p.session("b", 0x3)
    p.msg("binputs", "ACK_SYNC", 8, 0, u32(5))   # the other header
    p.op(OP_MSG, p.pick("bdisplay"), 0xf0, 0, u16(0x1234), 0)  # unknown
    p.msg("bmain", "105", 0, 0xf5, u16(9))       # bad mouse mode
    p.wait()
    return p


def partial_writes():
    p = Program()
    p.session("a", 0x3)
    p.wait()
    p.sock_op(OP_HOLD, "ainputs", u16(5))
    for k in range(4):
        p.msg("ainputs", "101", 0, 0x10, 0x1e + k)
        p.wait(1)
    p.sock_op(OP_UNHOLD, "ainputs")
    p.sock_op(OP_HOLD, "amain", u16(3))
    p.msg("amain", "106", 0, 3)
    p.sock_op(OP_SHUT, "amain")                  # half close, 3 bytes missing
    p.wait()
    p.sock_op(OP_SHUT, "adisplay")
    p.wait()
    return p


def limits():
    p = Program()
    p.op(OP_SETTING, SET_PASSWORD, 0)            # password on
    p.op(OP_SETTING, SET_MAX_CLIENTS, 0)         # max-clients 1
    p.connect("a").link("a", MAIN, 0, 0, 1 | (1 << 1))   # right ticket
    p.connect("b").link("b", MAIN, 0, 0, 1 | (2 << 1))   # wrong ticket
    p.connect("c").link("c", MAIN, 0, 0, 1 | (1 << 1))   # max-clients
    p.wait()
    p.connect("d").link("d", DISPLAY, 3, 0, 1 | (1 << 1), u32(12345))
    p.connect("e").link("e", USBREDIR, 0, 0, 1)  # not served
    p.wait()
    return p


def surface_switch():
    p = Program()
    p.session("a", 0x1)
    p.wait().op(OP_FRAME, 0, 0, 1, 0x10).wait()
    p.op(OP_SURFACE).op(OP_DRAW, 2, 0).op(OP_FRAME, 0, 1, 1, 0x10).wait()
    p.op(OP_SURFACE).op(OP_DRAW, 3, 0).wait()
    return p


def audio():
    p = Program()
    p.session("a", 0x18)                         # playback + record
    p.wait()
    p.op(OP_AUDIO, 0, 30).op(OP_AUDIO, 4, 6, u16(100), u16(200))
    p.op(OP_AUDIO, 3, 0).op(OP_AUDIO, 0, 0x81)   # stop, odd size
    p.op(OP_AUDIO, 2, 2, b"\x80" + bytes(7))    # an Opus packet
    p.op(OP_AUDIO, 1, 5)                         # raw 44.1 kHz
    p.msg("arecord", "102", 0, 1, u32(0), 0)     # RECORD_MODE Opus: refused
    p.wait()
    return p


def timers():
    p = Program()
    p.op(OP_SETTING, SET_IDLE, 30)               # idle 50 ms, handshake 130
    p.connect("x")                               # never links
    p.session("a", 0x1)
    p.op(OP_SLEEP, 4)                            # 150 ms
    p.wait()
    return p


def null_state():
    p = Program()
    p.session("a", 0x3).wait()
    p.op(OP_STATE, 6, 0x5a)                      # NULL and back
    p.session("b", 0x1).wait()
    return p


def agent_self_close():
    """a client that returns no agent tokens asks for the capabilities
    until what waits for it passes max-clipboard + 64 KiB: the endpoint
    closes the client inside its own AGENT_DATA, in the middle of a
    chunk"""
    p = Program()
    p.op(OP_SETTING, SET_MAX_CLIPBOARD, 0)      # max-clipboard 0
    p.op(OP_GUEST, 0, 0)
    p.session("a", 0)
    p.op(OP_SLEEP, 1)
    p.msg("amain", "106", 0, 0)                  # AGENT_START, no tokens
    # VD_AGENT_ANNOUNCE_CAPABILITIES (6), request: 28 bytes back each; the
    # bound is 65536 bytes: passed by the 28th of the 35th chunk
    ask = struct.pack("<IIQII", 1, 6, 0, 4, 1)
    for _ in range(35):
        body = ask * 68
        p.msg("amain", "107", 0, 0, u16(len(body) - 1), body)
    p.op(OP_SLEEP, 3)                            # 60 ms: all is read
    return p


def redirect(host):
    """a reload's redirect (redirect-clients) with a live session, then a
    main channel accepted before it links (told at once, after
    MAIN_INIT)"""
    p = Program()
    p.session("a", 0x07)                        # main, display, inputs, cursor
    p.connect("c")                              # accepted, not linked yet
    p.wait().op(OP_DRAW, 1, 0).wait()
    p.op(OP_SETTING, SET_REDIRECT, 3 if host else 0)  # host: fuzz.example
    p.wait(3)
    p.link("c", MAIN, 0, 0, 1)                  # links after the redirect
    p.wait(5)
    p.msg("amain", "DISCONNECTING", 0, 0, bytes(12))
    p.wait()
    return gated(p)


def fnv1a(data):
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xffffffff
    return h


def gated(p, rarity=8):
    """@p with waits added until the harness's input_gate(NULL_RARITY)
    passes it (the FNV-1a hash of the input): a costly operation runs in
    one input of @rarity"""
    for n in range(256):
        if fnv1a(bytes(p.b) + bytes((OP_WAIT, n))) % rarity == 0:
            return p.wait(n)
    raise ValueError("no wait makes the input pass the gate")


SEEDS = {
    "full-session": full_session,
    "ws-full-session": lambda: full_session(WS),
    "ws-framings": ws_framings,
    "ws-deflate-display": ws_deflate_display,
    "agent-exchange": agent_exchange,
    "agent-withheld-tokens": agent_withheld_tokens,
    "pad-release-blocked": pad_release_blocked,
    "states": states,
    "hostile-messages": hostile_messages,
    "partial-writes": partial_writes,
    "limits": limits,
    "surface-switch": surface_switch,
    "audio": audio,
    "timers": timers,
    "null-state": null_state,
    "redirect": lambda: redirect(False),
    "redirect-host": lambda: redirect(True),
}


def zero_client_timeout():
    """client-timeout=0 and a display client with a small receive buffer
    that reads (6 of 6 on one core; with the default buffer 0 of 6): the
    render path's wait for room never sleeps"""
    p = Program()
    p.op(OP_SETTING, SET_CLIENT_TIMEOUT, 0)      # client-timeout 0
    p.op(OP_SETTING, SET_QUEUE, 0)               # queue-size 1024
    p.session("a", 0x1 | 0x80)                   # display, 2 KiB SO_RCVBUF
    p.wait()
    for _ in range(30):
        p.op(OP_DRAW, 9, 0)                      # the 256 KB bitmap
        p.wait(7)
    p.wait(7)
    return p


def release_pad_during_caps():
    """a stream pad requested, given other caps, fed a frame (its caps go
    down with it) and released, 250 times: the caps event meets the pad
    being released (on two cores; 4 of 6 runs)"""
    p = Program()
    for i in range(250):
        p.op(OP_PAD, 1, 0)                       # request stream slot 1
        p.op(OP_PAD, 1, 3 | ((1 + i % 3) << 2))  # caps of another codec
        p.op(OP_FRAME, 1, 0, 1, 0x10)
        p.op(OP_PAD, 1, 1)                       # release it
    return p


# reproducers of what fuzz-session found (tests/fuzz/crashes-found/, see
# its README.md); the others there are seeds of the list above
CRASHES = {
    "agent-self-close": agent_self_close,
    "zero-client-timeout-spins": zero_client_timeout,
    "release-pad-during-caps": release_pad_during_caps,
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "corpus", "session")
    crashes = os.path.join(here, "crashes-found")
    os.makedirs(out, exist_ok=True)
    for name, f in CRASHES.items():
        with open(os.path.join(crashes, name), "wb") as fd:
            fd.write(bytes(f().b))
    progs = {n: f() for n, f in SEEDS.items()}
    for chan, cname in ((MAIN, "main"), (DISPLAY, "display"),
                        (INPUTS, "inputs")):
        for stage in range(5):
            progs["link-rst-%s-%d" % (cname, stage)] = link_rst(chan, stage)
        progs["ticket-rst-%s" % cname] = ticket_then_rst(chan)
    for name, p in progs.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes(p.b))
    print("%d seeds in %s" % (len(progs), out))


if __name__ == "__main__":
    main()
