"""Socket and qdisc statistics straight from netlink (sock_diag and
RTM_GETQDISC), with no process per sample. A socket opened inside a
namespace keeps reporting that namespace, so the sampler opens one per
namespace once and never switches again."""

import socket
import struct

import netns

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
INET_DIAG_INFO, INET_DIAG_CONG = 2, 4
TCPF_ESTABLISHED_ETC = 0xFFF & ~((1 << 10) | (1 << 7))  # all but LISTEN and CLOSE

RTM_GETQDISC = 38
TCA_KIND, TCA_STATS2 = 1, 7
TCA_STATS_BASIC, TCA_STATS_QUEUE = 1, 3

# struct tcp_info (include/uapi/linux/tcp.h), the fields we sample.
TCP_INFO_FIELDS = {
    "state": (0, "B"), "ca_state": (1, "B"), "rto": (8, "I"), "unacked": (24, "I"),
    "lost": (32, "I"), "retrans": (36, "I"), "rtt_us": (68, "I"), "rttvar_us": (72, "I"),
    "ssthresh": (76, "I"), "cwnd": (80, "I"), "total_retrans": (100, "I"),
    "pacing_rate": (104, "Q"), "bytes_acked": (120, "Q"), "bytes_received": (128, "Q"),
    "min_rtt_us": (148, "I"), "delivery_rate": (160, "Q"), "delivered": (192, "I"),
    "delivered_ce": (196, "I"), "bytes_sent": (200, "Q"), "bytes_retrans": (208, "Q"),
}


def _attrs(buf, off, end):
    while off + 4 <= end:
        ln, ty = struct.unpack_from("HH", buf, off)
        if ln < 4:
            break
        yield ty & 0x7FFF, buf[off + 4:off + ln]
        off += (ln + 3) & ~3


def _dump(sock, msg):
    sock.send(msg)
    out = []
    while True:
        data = sock.recv(1 << 20)
        off = 0
        while off + 16 <= len(data):
            ln, ty, _flags, _seq, _pid = struct.unpack_from("IHHII", data, off)
            if ln < 16:
                return out
            if ty == NLMSG_DONE:
                return out
            if ty == NLMSG_ERROR:
                err = struct.unpack_from("i", data, off + 16)[0]
                if err:
                    raise OSError(-err, "netlink dump failed")
                return out
            out.append(data[off + 16:off + ln])
            off += (ln + 3) & ~3


class Sockets:
    """TCP sockets of one namespace, of one address family (a dump costs
    milliseconds of guest CPU under TCG: don't ask for what isn't there)."""

    def __init__(self, ns, v6=False):
        self.family = socket.AF_INET6 if v6 else socket.AF_INET
        with netns.inside(ns):
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)

    def dump(self):
        flows = []
        # struct inet_diag_req_v2 + an all-zero inet_diag_sockid
        req = struct.pack("BBBBI", self.family, socket.IPPROTO_TCP,
                          (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_CONG - 1)), 0,
                          TCPF_ESTABLISHED_ETC) + bytes(48)
        hdr = struct.pack("IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
        for m in _dump(self.sock, hdr + req):
            # struct inet_diag_msg: family, state, timer, retrans, id (48), expires, rqueue, wqueue, uid, inode
            sport, dport = struct.unpack_from("!HH", m, 4)
            f = {"sport": sport, "dport": dport}
            for ty, val in _attrs(m, 72, len(m)):
                if ty == INET_DIAG_INFO:
                    for name, (o, fmt) in TCP_INFO_FIELDS.items():
                        if o + struct.calcsize(fmt) <= len(val):
                            f[name] = struct.unpack_from(fmt, val, o)[0]
                elif ty == INET_DIAG_CONG:
                    f["cc"] = val.split(b"\0")[0].decode()
            flows.append(f)
        return flows


class Qdiscs:
    """Root-qdisc counters of one namespace's ports: backlog (bytes, packets),
    bytes and packets dequeued, and drops."""

    def __init__(self, ns):
        with netns.inside(ns):
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)

    def dump(self):
        req = struct.pack("BxxxiIII", socket.AF_UNSPEC, 0, 0, 0, 0)
        hdr = struct.pack("IHHII", 16 + len(req), RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
        ports = {}
        for m in _dump(self.sock, hdr + req):
            _fam, ifindex, _handle, parent, _info = struct.unpack_from("BxxxiIII", m, 0)
            st = {"bytes": 0, "packets": 0, "qlen": 0, "backlog": 0, "drops": 0}
            for ty, val in _attrs(m, 20, len(m)):
                if ty == TCA_STATS2:
                    for sty, sval in _attrs(val, 0, len(val)):
                        if sty == TCA_STATS_BASIC and len(sval) >= 12:
                            st["bytes"], st["packets"] = struct.unpack_from("QI", sval, 0)
                        elif sty == TCA_STATS_QUEUE and len(sval) >= 12:
                            st["qlen"], st["backlog"], st["drops"] = struct.unpack_from("III", sval, 0)
            p = ports.setdefault(ifindex, {"bytes": 0, "packets": 0, "qlen": 0, "backlog": 0,
                                           "drops": 0, "child_drops": 0})
            if parent == 0xFFFFFFFF:  # the root qdisc: what the port sent and holds
                for k in ("bytes", "packets", "qlen", "backlog", "drops"):
                    p[k] = st[k]
            else:
                p["child_drops"] += st["drops"]
        # A leaf's drop also counts at an HTB root, except netem's losses:
        # take whichever saw more.
        for p in ports.values():
            p["drops"] = max(p["drops"], p.pop("child_drops"))
        return ports
