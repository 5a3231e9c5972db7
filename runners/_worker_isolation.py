"""Isolating one warm run (bwrap mode): the namespaces, filesystem view and lock-down a fork of the
server goes through before it becomes the run (see `_worker_server.py`'s docstring for the fork tree).

Runs inside the server's sandbox; imported by `_worker_server.py` and `_worker_target.py` from
beside them. Standalone on purpose: stdlib only (ctypes for the syscalls), no project imports.
"""
import ctypes
import errno
import fcntl
import os
import socket
import struct

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 0x1000, 0x4000, 0x40000
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40
LINUX_CAPABILITY_VERSION_3 = 0x20080522
libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def write_file(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def mount(source, target, fstype, flags, data=None):
    check(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                     data and data.encode()), f"mount {target}")


def enter_namespaces():
    """C1: a user namespace of our own (uid/gid 65534 mapped to ourselves) with new mount, PID,
    network, IPC and UTS namespaces; the next fork is PID 1 of the new PID namespace."""
    uid, gid = os.getuid(), os.getgid()
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
          "unshare")
    write_file("/proc/self/setgroups", "deny")
    write_file("/proc/self/uid_map", f"{uid} {uid} 1\n")
    write_file("/proc/self/gid_map", f"{gid} {gid} 1\n")


def fresh_tmp_keeping(kept_dirs, tmp_size):
    """A fresh /tmp for the run, with the interpreter's directories that live under the host's /tmp
    (a venv or a CI clone there) bound back in, read-only as bubblewrap bound them: the new tmpfs
    would hide them, and every import the script makes after the server's preload would fail.
    They are held by O_PATH descriptors across the mount and re-bound through /proc/self/fd."""
    held = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in kept_dirs]
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmp_size)
    for path, fd in held:
        os.makedirs(path, 0o755, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)


def build_view(request, config):
    """C2, as PID 1: the run's filesystem view and network, then no way to change either."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    tmp_size = f"size={int(request['tmp_bytes'])},mode=0755"
    fresh_tmp_keeping(config.get("tmp_keep", ()), tmp_size)
    os.mkdir(config["home"], 0o755)
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, tmp_size)
    if "/" in request["run_dir"] or "/" in (request.get("cache_dir") or ""):
        raise ValueError("run and cache directories are plain names")
    mount(os.path.join(config["runs"], request["run_dir"]), config["workdir"], None, MS_BIND | MS_REC)
    if request.get("cache_dir"):
        job_cache = os.path.join(config["caches"], request["cache_dir"])
        mount(job_cache, config["cache"], None, MS_BIND | MS_REC)
        # Inductor's default cache dir (precompiled headers) was fixed at import: /tmp/torchinductor_<user>.
        # A link resolved in the run's own view, never a mount of a path in the cache: the runs sharing
        # the cache can write there, and one could swap `inductor_tmp` for a symlink before this mount.
        os.symlink(os.path.join(config["cache"], "inductor_tmp"), config["inductor_tmp"])
    else:  # the server's scratch /cache would otherwise be shared by every run without a job cache
        mount("tmpfs", config["cache"], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
    for hidden in (config["runs"], config["caches"]):  # every other run's workdir, every other job's cache
        mount("tmpfs", hidden, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
    loopback_up()
    check(libc.sethostname(b"sandbox", 7), "sethostname")


def loopback_up():
    """As under bubblewrap: the run's own loopback works (and reaches nothing but the run)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING))


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def lock_down(program):
    """Drop every capability (bounding and ambient sets too), stop being dumpable (so the script
    cannot open /proc/1/fd or /proc/1/mem), set no_new_privs and install the strict filter."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as last:
            last_cap = int(last.read())
    except (OSError, ValueError):
        last_cap = 63
    for cap in range(last_cap + 1):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
            check(-1, f"dropping capability {cap} from the bounding set")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    data = (CapData * 2)()
    check(libc.capset(ctypes.byref(CapHeader(LINUX_CAPABILITY_VERSION_3, 0)), data), "capset")
    check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "PR_SET_DUMPABLE")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("CapEff:", "CapPrm:", "CapBnd:")) and int(line.split()[1], 16) != 0:
                raise OSError(errno.EPERM, f"capabilities left after dropping them: {line.strip()}")
