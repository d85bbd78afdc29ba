"""Network namespaces from one process: enter with setns(2) instead of forking
`ip netns exec` (which remounts sysfs per call: under qemu TCG that costs
longer than the flows we measure). setns changes the calling thread only;
sockets and child processes created inside keep that namespace."""

import contextlib
import ctypes
import os
import subprocess

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
_home = os.open("/proc/self/ns/net", os.O_RDONLY)


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: " + os.strerror(e))


@contextlib.contextmanager
def inside(name):
    """Run the body in network namespace `name` (None: stay where we are)."""
    if name is None:
        yield
        return
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        _setns(fd)
        yield
    finally:
        _setns(_home)
        os.close(fd)


def run(ns, argv, stdin=None, check=True):
    """Run argv inside namespace ns; raise with its stderr on failure."""
    with inside(ns):
        p = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"[{ns}] {' '.join(argv)}: {p.stderr.strip() or p.stdout.strip()}")
    return p.stdout


def batch(ns, tool, lines):
    """Many `ip`/`tc` commands in one process (`-batch -`)."""
    if lines:
        run(ns, [tool, "-batch", "-"], stdin="\n".join(lines) + "\n")


def popen(ns, argv, **kw):
    with inside(ns):
        return subprocess.Popen(argv, **kw)


def sysctl(ns, key, value):
    with inside(ns):
        with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
            f.write(str(value))


def add(name):
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)


def delete(name):
    """Kill every process of the namespace, then delete it."""
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), 9)
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


def existing():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]
