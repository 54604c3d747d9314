"""A network namespace of the test's own, and a partition inside it made with iptables.

The scenario runs as ``unshare --net python -m tests.integration.netfaults.scenario …``: a new network
namespace with nothing but its own loopback device, down until :func:`loopback_up` brings it up (all of
127.0.0.0/8 then answers on it, so 127.0.0.2 needs no address of its own). Its iptables rules are its own
too, so cutting a port there (:class:`PortCut`) cannot touch the machine's network, and they vanish with the
namespace when its last process exits. :class:`PortCut` also refuses to run in the namespace the test
itself was started in.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import struct
import subprocess

#: Where Debian keeps iptables, not always on a user's PATH.
SBIN_DIRS = ("/usr/sbin", "/sbin")
#: ``iptables -w``: seconds to wait for the xtables lock (a file shared by every namespace).
XTABLES_WAIT_S = 5
PROBE_TIMEOUT_S = 20.0
# <linux/sockios.h> and <net/if.h>
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ_FLAGS = "16sh14x"  # struct ifreq: the interface name, then ifr_flags in its union


def this_netns() -> str:
    """The network namespace this process is in, as the kernel names it (``net:[4026531840]``)."""
    return os.readlink("/proc/self/ns/net")


def find_tool(name: str) -> str | None:
    """``name`` on PATH or in the sbin folders."""
    path = os.pathsep.join([os.environ.get("PATH", ""), *SBIN_DIRS])
    return shutil.which(name, path=path)


def unshare_argv() -> list[str]:
    """The command prefix that runs a program in a new network namespace; an unprivileged user also gets a
    user namespace in which it is root (``--map-root-user``), which iptables needs."""
    unshare = find_tool("unshare") or "unshare"
    return [unshare, "--net"] if os.geteuid() == 0 else [unshare, "--map-root-user", "--net"]


def net_tools_unavailable() -> str | None:
    """None when a new network namespace can be made here and iptables can add a rule in it, else what is
    missing or what the kernel said."""
    if find_tool("unshare") is None:
        return "unshare (Debian's util-linux) is not installed: the scenario needs a network namespace"
    iptables = find_tool("iptables")
    if iptables is None:
        return "iptables is not installed (scripts/install-net-tools.sh installs Debian's iptables package)"
    probe = [*unshare_argv(), iptables, "-w", str(XTABLES_WAIT_S), "-A", "INPUT", "-p", "tcp", "--dport", "9"]
    try:
        done = subprocess.run(
            [*probe, "-j", "DROP"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`{' '.join(probe)} -j DROP` could not run: {exc}"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return (
            f"the kernel refused a network namespace with an iptables rule here (`{' '.join(probe)} -j DROP` "
            f"exited {done.returncode}: {said[-1] if said else 'no output'})"
        )
    return None


def loopback_up() -> None:
    """Bring ``lo`` up in this (new) network namespace, as ``ip link set lo up`` does."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(_IFREQ_FLAGS, b"lo", 0)
        flags = struct.unpack(_IFREQ_FLAGS, fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        if not flags & _IFF_UP:
            fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ_FLAGS, b"lo", flags | _IFF_UP))


class PortCut:
    """Drops every TCP segment to or from ``port`` on this namespace's loopback: whatever listens there is
    cut off from everyone (established connections stall, new ones never connect) until :meth:`heal`.

    ``test_netns`` is the namespace of the test that started this process: rules are refused there.
    """

    def __init__(self, port: int, iptables: str, test_netns: str) -> None:
        self.port = port
        self.iptables = iptables
        self.test_netns = test_netns
        self.active = False

    def _rules(self) -> list[list[str]]:
        return [
            ["INPUT", "-p", "tcp", "--dport", str(self.port), "-j", "DROP"],
            ["INPUT", "-p", "tcp", "--sport", str(self.port), "-j", "DROP"],
        ]

    def _iptables(self, action: str, rule: list[str]) -> None:
        argv = [self.iptables, "-w", str(XTABLES_WAIT_S), action, *rule]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"`{' '.join(argv)}` exited {done.returncode}: {done.stderr.strip()}")

    def cut(self) -> None:
        here = this_netns()
        if here == self.test_netns:
            raise RuntimeError(f"refusing to add iptables rules in the test's own network namespace {here}")
        for rule in self._rules():
            self._iptables("-I", rule)
        self.active = True

    def heal(self) -> None:
        if not self.active:
            return
        for rule in self._rules():
            self._iptables("-D", rule)
        self.active = False

    def listed(self) -> str:
        """``iptables -S INPUT`` as it is now (for the report)."""
        done = subprocess.run(
            [self.iptables, "-w", str(XTABLES_WAIT_S), "-S", "INPUT"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
        return done.stdout.strip()
