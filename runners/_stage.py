"""Root's way into an unprivileged bubblewrap: stage what uid 65534 cannot reach, drop to it, exec bwrap.

    python -I -S _stage.py STAGE_DIR UID GID CGROUP_PROCS SOURCE... -- BWRAP_ARGV...   (by runners/sandbox.py only)
    ("-" for an unused STAGE_DIR, UID/GID (keep ours) or CGROUP_PROCS)

Why: bubblewrap run by root maps the sandbox's uid to root outside, so the script could read every
root-owned file the sandbox shows (/etc/shadow). So root drops to uid/gid 65534 before bwrap. But an
unprivileged bwrap resolves its bind sources with its own rights, and a venv's base interpreter or a
workdir often sits under a directory only root may enter (/root/.pyenv, pytest's /tmp/pytest-of-root).
This helper, still root, enters a private mount namespace, mounts a small tmpfs on `stage_dir` and
bind-mounts each source onto `stage_dir/N` there (through an O_PATH fd, so only root walks the path),
then drops every privilege and execs bwrap, which binds `stage_dir/N` where the sandbox wants it.
The staging mounts exist only in this process's namespace and vanish with it.

With a cgroup (cgroup v2 limits), it first moves itself into the run's cgroup, so bwrap and all
it starts are charged there from their first instruction.
Standalone on purpose: stdlib only, no json (its import is most of a -I -S start-up); every module
is imported before the privileges go, since the interpreter's own files may be among those 65534
cannot read.
"""
import os
import stat
import sys

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x1000, 0x4000, 0x40000


def fail(message: str) -> None:
    os.write(2, f"sandbox stage: {message}\n".encode())
    os._exit(125)


def check(result: int, libc, what: str) -> None:
    if result != 0:
        import ctypes
        fail(f"{what}: {os.strerror(ctypes.get_errno())}")


def main() -> None:
    split = sys.argv.index("--")
    stage_dir, uid, gid, cgroup_procs = sys.argv[1:5]
    sources, argv = sys.argv[5:split], sys.argv[split + 1:]
    if cgroup_procs != "-":
        fd = os.open(cgroup_procs, os.O_WRONLY | os.O_NOFOLLOW)
        os.write(fd, b"0")
        os.close(fd)
    if sources:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        check(libc.unshare(CLONE_NEWNS), libc, "unshare(CLONE_NEWNS)")
        check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), libc, "making / private")
        fds = [os.open(source, os.O_PATH | os.O_NOFOLLOW) for source in sources]  # after unshare: our namespace
        check(libc.mount(b"tmpfs", stage_dir.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755,size=64k"), libc,
              "mounting the staging tmpfs")
        for index, fd in enumerate(fds):
            target = os.path.join(stage_dir, str(index))
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                os.mkdir(target, 0o755)
            else:
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            check(libc.mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None, MS_BIND | MS_REC, None), libc,
                  f"staging {sources[index]}")
            os.close(fd)
    if uid != "-":  # root: become the sandbox uid for good (no way back, no capabilities)
        uid, gid = int(uid), int(gid)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid or os.getresgid() != (gid, gid, gid):
            fail("could not drop to the sandbox uid")
    os.execv(argv[0], argv)


if __name__ == "__main__":
    try:
        main()
    except OSError as exc:
        fail(str(exc))
