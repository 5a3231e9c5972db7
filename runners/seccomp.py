"""The seccomp filter every sandboxed script runs under, built by hand as classic BPF.

What it refuses (with EPERM, so a well-behaved program sees an ordinary error):
- everything that changes what the process can see of the machine: mount, umount2, pivot_root,
  the new mount API (open_tree, move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr),
  setns, unshare, and clone with any CLONE_NEW* flag;
- everything that reaches into another process or the kernel: ptrace, process_vm_readv/writev,
  pidfd_getfd, bpf, perf_event_open, userfaultfd, the keyring (keyctl, add_key, request_key),
  module loading and kexec, and io_uring (whose operations would bypass this filter).
- sockets of the one address family network namespaces do not separate, AF_VSOCK (a VM's channel
  to its host: on a runner that is a VM, the host's services).
clone3 answers ENOSYS: its flags live in memory a filter cannot read, and glibc then falls back
to clone, whose flags it can. A syscall from another ABI (i386 via int 0x80, or anything but the
one the filter was built for) kills the process; x86-64's x32 numbers are refused.

`profile="server"` is the warm fork-server's: the same minus mount, umount2 and unshare, which
its per-run children need to build their own namespaces before they install the strict one on
themselves (filters stack: the strictest answer wins).

Standalone (stdlib only): `_worker_server.py` installs a program built here, handed to it as bytes.
"""
from __future__ import annotations

import ctypes
import errno
import platform
import struct
from functools import lru_cache

# classic BPF opcodes (linux/filter.h)
BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
BPF_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
BPF_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
BPF_RET_K = 0x06  # BPF_RET | BPF_K

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0_LOW = 0, 4, 16  # args[0]'s low word (both ABIs are little-endian)

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000

AF_VSOCK = 40
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x10000000, 0x20000000, 0x40000000
# CLONE_NEWTIME (0x80) is not here: in clone()'s first argument that bit is part of the exit signal
# (clone takes CLONE_NEWTIME only through clone3, which is refused as a whole).
CLONE_NAMESPACES = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET

# From the kernel's syscall tables (arch/x86/entry/syscalls/syscall_64.tbl; include/uapi/asm-generic/unistd.h
# for arm64); numbers from 424 up are shared by every architecture.
SYSCALLS = {
    "x86_64": {
        "mount": 165, "umount2": 166, "pivot_root": 155, "setns": 308, "unshare": 272, "clone": 56, "clone3": 435,
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
        "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
        "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "open_tree_attr": 467,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "socket": 41,
    },
    "aarch64": {
        "mount": 40, "umount2": 39, "pivot_root": 41, "setns": 268, "unshare": 97, "clone": 220, "clone3": 435,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438,
        "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
        "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "open_tree_attr": 467,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "socket": 198,
    },
}
DENIED = ("pivot_root", "setns", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
          "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
          "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
          "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "open_tree_attr",
          "io_uring_setup", "io_uring_enter", "io_uring_register")
DENIED_STRICT_ONLY = ("mount", "umount2", "unshare")  # the warm server's children use them, then install "strict"
PROFILES = ("strict", "server")


class UnsupportedArchitecture(RuntimeError):
    """No syscall table for this machine: the sandbox cannot build its filter here."""


def native_arch() -> str:
    machine = platform.machine()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)
    if arch not in SYSCALLS:
        raise UnsupportedArchitecture(f"no seccomp syscall table for {machine} (supported: x86_64, aarch64)")
    return arch


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple:
    return code, jt, jf, k


def build_filter(profile: str = "strict", arch: str | None = None) -> bytes:
    """The filter program as the kernel wants it (an array of struct sock_filter), for bwrap --seccomp
    or `install`. Raises UnsupportedArchitecture off x86-64 and aarch64."""
    if profile not in PROFILES:
        raise ValueError(f"unknown seccomp profile {profile!r}")
    return _build(profile, arch or native_arch())


@lru_cache(maxsize=8)
def _build(profile: str, arch: str) -> bytes:
    table = SYSCALLS[arch]
    denied = DENIED + (DENIED_STRICT_ONLY if profile == "strict" else ())
    # Instructions refer to three shared endings by label; jump offsets are filled in at the end.
    body: list[tuple] = [
        ("insn", _insn(BPF_LD_W_ABS, OFFSET_ARCH)),
        ("jump", BPF_JEQ_K, AUDIT_ARCH[arch], "next", "kill"),
        ("insn", _insn(BPF_LD_W_ABS, OFFSET_NR)),
    ]
    if arch == "x86_64":
        body.append(("jump", BPF_JGE_K, X32_SYSCALL_BIT, "eperm", "next"))
    for name in denied:
        body.append(("jump", BPF_JEQ_K, table[name], "eperm", "next"))
    body.append(("jump", BPF_JEQ_K, table["clone3"], "enosys", "next"))
    body += [("jump", BPF_JEQ_K, table["socket"], "next", "skip_socket"),
             ("insn", _insn(BPF_LD_W_ABS, OFFSET_ARG0_LOW)),
             ("jump", BPF_JEQ_K, AF_VSOCK, "eperm", "allow"),
             ("label", "skip_socket")]
    if profile == "strict":
        body += [("jump", BPF_JEQ_K, table["clone"], "next", "allow"),
                 ("insn", _insn(BPF_LD_W_ABS, OFFSET_ARG0_LOW)),
                 ("jump", BPF_JSET_K, CLONE_NAMESPACES, "eperm", "allow")]
    endings = {"allow": SECCOMP_RET_ALLOW, "eperm": SECCOMP_RET_ERRNO | errno.EPERM,
               "enosys": SECCOMP_RET_ERRNO | errno.ENOSYS, "kill": SECCOMP_RET_KILL_PROCESS}
    # labels mark the next instruction; they take no room
    positions, index = {}, 0
    for item in body:
        if item[0] == "label":
            positions[item[1]] = index
        else:
            index += 1
    where = {label: index + i for i, label in enumerate(endings)} | positions
    program = []
    for item in body:
        if item[0] == "label":
            continue
        if item[0] == "insn":
            program.append(item[1])
            continue
        _, code, k, when_true, when_false = item
        here = len(program)
        offsets = [0 if label == "next" else where[label] - here - 1 for label in (when_true, when_false)]
        if max(offsets) > 255:
            raise AssertionError("seccomp program too long for classic BPF jumps")
        program.append(_insn(code, k, *offsets))
    program += [_insn(BPF_RET_K, value) for value in endings.values()]
    return b"".join(struct.pack("=HBBI", *insn) for insn in program)


PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(program: bytes) -> None:
    """Install `program` on the calling thread (and what it forks), after setting no_new_privs."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
