"""Leaving the sandbox: unmounting /proc, joining the host's namespaces, reaching the host's network
and sockets, tracing or reading other processes. Each syscall is refused by the seccomp filter."""
from __future__ import annotations

import errno
import json
import platform

import pytest

from runners.sandbox import RunSpec

from .conftest import leaked

SYSCALLS = """
import ctypes, errno, json, os, platform, threading
libc = ctypes.CDLL(None, use_errno=True)
X86 = platform.machine() == 'x86_64'
NR = dict(umount2=166, mount=165, setns=308, unshare=272, clone=56, clone3=435, ptrace=101, bpf=321, keyctl=250,
          pidfd_getfd=438, perf_event_open=298, userfaultfd=323, open_tree=428, fsopen=430, pivot_root=155,
          process_vm_readv=310, io_uring_setup=425) if X86 else dict(
          umount2=39, mount=40, setns=268, unshare=97, clone=220, clone3=435, ptrace=117, bpf=280, keyctl=219,
          pidfd_getfd=438, perf_event_open=241, userfaultfd=282, open_tree=428, fsopen=430, pivot_root=41,
          process_vm_readv=270, io_uring_setup=425)
def call(name, *args):
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) for a in args])
    return 0 if result >= 0 else ctypes.get_errno()
out = {}
out['umount2 /proc'] = libc.umount2(b'/proc', 2) and ctypes.get_errno()  # MNT_DETACH
out['mount tmpfs'] = libc.mount(b'none', b'/tmp', b'tmpfs', 0, None) and ctypes.get_errno()
netns = os.open('/proc/self/ns/net', os.O_RDONLY)  # even our own: setns is refused
out['setns net'] = libc.setns(netns, 0) and ctypes.get_errno()
out['unshare user'] = call('unshare', 0x10000000)
out['unshare net'] = call('unshare', 0x40000000)
out['clone newuser'] = call('clone', 0x10000000 | 17, 0, 0, 0, 0)
out['clone3'] = call('clone3', 0, 0)
out['ptrace attach 1'] = call('ptrace', 16, 1, 0, 0)
for name in ('bpf', 'keyctl', 'pidfd_getfd', 'perf_event_open', 'userfaultfd', 'open_tree', 'fsopen', 'pivot_root',
             'process_vm_readv', 'io_uring_setup'):
    out[name] = call(name, 0, 0, 0, 0, 0)
if X86:
    libc.syscall.restype = ctypes.c_long
    out['x32 getpid'] = 0 if libc.syscall(ctypes.c_long(0x40000000 | 39)) >= 0 else ctypes.get_errno()
import socket
try:
    socket.socket(40, socket.SOCK_STREAM)  # AF_VSOCK: a VM's line to its host, in no network namespace
    out['vsock'] = 0
except OSError as exc:
    out['vsock'] = exc.errno
out['unix socket'] = socket.socket(socket.AF_UNIX).fileno() > 0 and 0
pid = os.fork()
if pid == 0:
    os._exit(7)
out['fork'] = os.waitpid(pid, 0)[1] >> 8
thread = threading.Thread(target=lambda: out.__setitem__('thread', 1)); thread.start(); thread.join()
try:
    open('/proc/1/mem', 'rb').read(1)
    out['/proc/1/mem'] = 0
except OSError as exc:
    out['/proc/1/mem'] = exc.errno
print(json.dumps(out))
"""


def test_namespace_mount_and_tracing_syscalls_are_refused(runner):
    result = runner(RunSpec(script=SYSCALLS))
    assert result.status == "ok", result.stderr
    out = json.loads(result.stdout)
    assert out.pop("clone3") == errno.ENOSYS  # glibc falls back to clone, whose flags the filter can read
    assert (out.pop("fork"), out.pop("thread"), out.pop("unix socket")) == (7, 1, 0)  # ordinary things still work
    assert out.pop("/proc/1/mem") in (errno.EACCES, errno.EPERM)  # PID 1 is not dumpable
    if platform.machine() == "x86_64":
        assert out.pop("x32 getpid") == errno.EPERM
    assert out == {name: errno.EPERM for name in out}, out


NETWORK = """
import json, socket
out = {{}}
for label, family, address in [('tcp host loopback', socket.AF_INET, ('127.0.0.1', {port})),
                               ('unix socket in host /tmp', socket.AF_UNIX, {unix!r}),
                               ('abstract unix socket', socket.AF_UNIX, '\\0' + {abstract!r}),
                               ('internet', socket.AF_INET, ('1.1.1.1', 53))]:
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(address)
        out[label] = 'connected'
    except OSError as exc:
        out[label] = exc.strerror or str(exc)
print(json.dumps(out))
"""


def test_no_network_no_host_sockets(runner, planted):
    before = planted.connections()
    result = runner(RunSpec(script=NETWORK.format(port=planted.tcp_port, unix=planted.unix_path,
                                                  abstract=planted.abstract_name)))
    assert result.status == "ok", result.stderr
    out = json.loads(result.stdout)
    assert "connected" not in out.values(), out
    assert planted.connections() == before
    assert result.network_isolated


def test_the_host_proc_stays_hidden_even_after_trying_to_unmount(runner, planted):
    script = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "print(libc.umount2(b'/proc', 2), ctypes.get_errno())\n"
              "pids = [p for p in os.listdir('/proc') if p.isdigit()]\nprint(len(pids))\n"
              "for pid in pids:\n    try:\n        print(open(f'/proc/{pid}/cmdline', 'rb').read())\n"
              "    except OSError:\n        pass\n")
    result = runner(RunSpec(script=script))
    lines = result.stdout.splitlines()
    assert lines[0] == f"-1 {errno.EPERM}"
    assert int(lines[1]) <= 3 and leaked(result, planted) == []
    assert "pytest" not in result.stdout


@pytest.mark.parametrize("path", ["/proc/sysrq-trigger", "/sys/kernel/mm/transparent_hugepage/enabled"])
def test_kernel_knobs_are_read_only(runner, path):
    result = runner(RunSpec(script=f"open({path!r}, 'w').write('x')"))
    assert result.status == "failed"
    assert result.uncaught_exception["type"] in ("builtins.PermissionError", "builtins.OSError",
                                                 "builtins.FileNotFoundError")
