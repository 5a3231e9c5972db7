"""The seccomp program: its shape per architecture, and what it answers for real."""
from __future__ import annotations

import errno
import struct

import pytest

from runners import seccomp
from runners.sandbox import RunSpec, run


def decode(program: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
@pytest.mark.parametrize("profile", ["strict", "server"])
def test_programs_check_the_architecture_first_and_jump_inside_the_program(arch, profile):
    program = decode(seccomp.build_filter(profile, arch))
    assert program[0] == (seccomp.BPF_LD_W_ABS, 0, 0, seccomp.OFFSET_ARCH)
    assert program[1][0] == seccomp.BPF_JEQ_K and program[1][3] == seccomp.AUDIT_ARCH[arch]
    kill = len(program) - 1
    assert program[kill] == (seccomp.BPF_RET_K, 0, 0, seccomp.SECCOMP_RET_KILL_PROCESS)
    assert 1 + 1 + program[1][2] == kill  # a foreign architecture jumps straight to the kill
    for index, (code, jt, jf, _) in enumerate(program):
        if code & 0x07 == 0x05:  # a jump: both targets inside the program
            assert index + 1 + max(jt, jf) < len(program)
    denied = {k for code, _, _, k in program if code == seccomp.BPF_JEQ_K}
    table = seccomp.SYSCALLS[arch]
    assert {table[name] for name in seccomp.DENIED} <= denied
    assert ({table[name] for name in seccomp.DENIED_STRICT_ONLY} <= denied) == (profile == "strict")


def test_an_unknown_architecture_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(seccomp.platform, "machine", lambda: "riscv64")
    with pytest.raises(seccomp.UnsupportedArchitecture, match="riscv64"):
        seccomp.build_filter()


def test_the_filter_as_installed_by_bubblewrap():
    script = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "print(libc.unshare(0x00020000), ctypes.get_errno())\n"  # CLONE_NEWNS
              "print(libc.unshare(0x00000400), ctypes.get_errno())\n"  # CLONE_FS: harmless, refused all the same
              "print(open('/proc/self/status').read().count('Seccomp:\\t2'))\n")
    result = run(RunSpec(script=script))
    assert result.stdout.split("\n")[:3] == [f"-1 {errno.EPERM}", f"-1 {errno.EPERM}", "1"]

