"""Warm fork-server: the process runners/worker.py starts (and nothing else does).

    python _worker_server.py CTRL_FD CONFIG_JSON MODULE...

It imports MODULE... once (for torch also Dynamo and Inductor, without compiling anything), then
serves run requests on CTRL_FD, a SOCK_SEQPACKET unix socket: one JSON message per packet.

  -> {"op": "run", "run_dir", "cache_dir", "cwd", "script", "env", "cpu_s", "as_bytes", "nproc",
      "fsize_bytes", "tmp_bytes", "term_grace_s"}
     with three file descriptors attached (SCM_RIGHTS): the write ends of the stdout, stderr and
     evidence pipes
  -> {"op": "kill"}                       stop the current run (timeout, output flood)
  <- {"event": "ready", ...}              once, after the preload
  <- {"event": "done", "wait_status", "maxrss_kb", "clean"}   once per run; clean=false: a process
     of the run could not be reaped, so the owner replaces this server instead of reusing it

CONFIG_JSON: {"mode": "bwrap" | "unsafe", "seccomp": hex of the strict filter program, "runs": the
directory holding every run's workdir, "caches": the one holding the jobs' caches, "workdir" and
"cache": where a run sees its own, "home", "inductor_tmp": Inductor's default cache directory, where
a run with a job cache gets the job's `inductor_tmp` (precompiled headers, as for a cold run)}.

In "bwrap" mode the server itself runs inside bubblewrap (as a cold run does, minus --disable-userns
and with the seccomp "server" profile, because its children build namespaces), and each run is:

  server ─fork─> C1: setsid; unshare(user, mount, pid, net, ipc, uts); map uid/gid 65534 to itself
                 └─fork─> C2, PID 1 of the new PID namespace: a fresh /proc, size-capped tmpfs on
                          /tmp and /dev/shm, the run's own workdir bound at /sandbox (and its job's
                          cache at /cache), every other run's directory hidden under an empty tmpfs,
                          loopback up; then all capabilities dropped (bounding set too),
                          not dumpable, no_new_privs, the strict seccomp filter
                          └─fork─> T: rlimits, the scrubbed environment, repro.py run by _bootstrap
                                   as __main__, exactly as a cold run does

C2 reports T's wait status on a pipe only it holds (T closes its copy before any user code runs),
and when C2 exits the kernel kills everything left in its namespace. So a run's mounts, daemons,
files in /tmp and everything else it did die with it; the server's own namespace never changes.
The server never runs user code and never initialises CUDA, so every fork starts from the same
pristine, never-compiled state. "unsafe" mode (no bubblewrap) keeps the old, weaker behaviour: the
target is a direct child with rlimits, in the server's unshare namespaces if it has any.

Cleanup: the server is PID 1 of its own PID namespace (or, without namespaces, a child subreaper),
so everything a run leaves behind is re-parented to it; after each run it kills and reaps all its
children, then checks that no process but itself is left, before it reports.
Standalone on purpose (stdlib only, no project imports but _bootstrap.py beside it).
"""
import ctypes
import errno
import fcntl
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time

import _bootstrap

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
MAX_MESSAGE = 1 << 20
libc = ctypes.CDLL(None, use_errno=True)


# --- preload -------------------------------------------------------------------------------------
def preload(modules):
    """Import what every run would import anyway; compile nothing, and never touch CUDA.

    Some imports ask `torch.cuda.is_available()` (torch._inductor.runtime.benchmarking does, at
    import): through the CUDA runtime that initialises the driver and marks every later fork
    "bad" (the child then fails with "Cannot re-initialize CUDA in forked subprocess", even for a
    CPU script, as soon as Dynamo saves the CUDA RNG state). PYTORCH_NVML_BASED_CUDA_CHECK=1
    makes torch answer through NVML instead, with the same answer; it is set only while importing
    (runs get their own environment)."""
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    hidden = None
    try:
        if "torch" in modules and not os.path.exists("/dev/nvidiactl"):
            # No GPU is shown to this sandbox (warm runs are CPU runs): NVML cannot answer, and torch's
            # fallback, cudaGetDeviceCount, would poison every fork. A run here gets False anyway.
            import torch
            hidden = torch.cuda.is_available
            torch.cuda.is_available = lambda: False
        for name in modules:
            __import__(name)
        if "torch" in modules:
            import torch  # noqa: F401
            import torch._dynamo  # noqa: F401
            import torch._inductor.compile_fx  # noqa: F401
            import torch._inductor.config  # noqa: F401
    finally:
        del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]
        if hidden is not None:
            sys.modules["torch"].cuda.is_available = hidden


def fork_hazards():
    """Reasons a fork of this process could not be a faithful run: CUDA initialised here, or a
    child that torch considers a bad fork (asked in a throw-away child, so any cause is caught)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    if torch.cuda.is_initialized():
        return ["CUDA was initialised by the preload"]
    in_bad_fork = getattr(torch.cuda, "_is_in_bad_fork", None)
    if in_bad_fork is None:
        return []
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        os.write(write_fd, b"1" if in_bad_fork() else b"0")
        os._exit(0)
    os.close(write_fd)
    answer = os.read(read_fd, 1)
    os.close(read_fd)
    os.waitpid(child, 0)
    return ["a fork of the preloaded server cannot use CUDA (torch's bad-fork flag is set)"] if answer != b"0" else []


def thread_names():
    """Threads the preload started. Not refused: BLAS pools (OpenBLAS starts one per core when numpy
    is imported) handle fork with pthread_atfork, and forking such a process is what
    multiprocessing's fork start method does too; reported so the owner can log it."""
    names = []
    for task in sorted(os.listdir("/proc/self/task"), key=int)[1:]:
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                names.append(comm.read().strip())
        except OSError:
            pass
    return names


# --- messages ------------------------------------------------------------------------------------
def send(ctrl, message):
    ctrl.sendall(json.dumps(message).encode())


def receive(ctrl):
    """(message, fds), or (None, []) once the other side is gone."""
    data, fds, _, _ = socket.recv_fds(ctrl, MAX_MESSAGE, 3)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), fds


# --- isolation of one run (bwrap mode) -----------------------------------------------------------------
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
        # Inductor's default cache dir (precompiled headers) was fixed at import: /tmp/torchinductor_<user>
        os.mkdir(config["inductor_tmp"], 0o755)
        mount(os.path.join(job_cache, "inductor_tmp"), config["inductor_tmp"], None, MS_BIND | MS_REC)
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


def isolated_run(request, fds, status_w, config):
    """C1 (this fork of the server): namespaces, then C2; never returns."""
    try:
        os.setsid()
        enter_namespaces()
        init = os.fork()
    except BaseException as exc:  # noqa: BLE001 - report, never fall back into the server loop
        os.write(fds[1], f"warm worker: cannot isolate the run: {exc!r}\n".encode())
        os._exit(126)
    if init:
        for fd in (*fds, status_w):
            os.close(fd)
        _, status = os.waitpid(init, 0)
        os._exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1)
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # C1 killed (a kill, a timeout): the namespace goes
        build_view(request, config)
        lock_down(bytes.fromhex(config["seccomp"]))
    except BaseException as exc:  # noqa: BLE001
        os.write(fds[1], f"warm worker: cannot isolate the run: {exc!r}\n".encode())
        os._exit(126)
    run_as_init(request, fds, status_w)


def run_as_init(request, fds, status_w):
    """C2, PID 1: fork the target, reap everything, report the target's ending; our exit ends the rest."""
    target = os.fork()
    if target == 0:
        os.close(status_w)
        become_target(request, fds)
    for fd in fds:
        os.close(fd)
    while True:
        try:
            pid, status, usage = os.wait4(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if pid == target:
            break
    os.write(status_w, json.dumps({"wait_status": status, "maxrss_kb": usage.ru_maxrss}).encode())
    os.close(status_w)
    os._exit(0)


# --- the target (in the forked child) ----------------------------------------------------------------
def become_target(request, fds):
    """Turn this fork into `python repro.py` in the run's workdir; never returns."""
    evidence_fd = -1
    try:
        if request.get("isolated"):
            libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # the script's own /proc/self, as after exec
        else:
            os.setsid()
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        evidence_fd = os.dup(fds[2]) if len(fds) > 2 else -1
        for fd in fds:
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the server ignores it; python does not
        set_limits(request)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import tempfile
        tempfile.tempdir = None  # re-read TMPDIR
        apply_env_after_import(request["env"])
        script = os.path.join(request["workdir"], request["script"])
        sys.argv = [request["script"]]
        sys.path[0] = os.path.dirname(script)
    except BaseException as exc:  # noqa: BLE001 - report, never fall back into the server loop
        os.write(2, f"warm worker: cannot start the run: {exc!r}\n".encode())
        os._exit(126)
    _bootstrap.finish(_bootstrap.run_as_main(script, evidence_fd))


def set_limits(request):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if request.get("cpu_s"):  # a fork starts with zero CPU time, so this counts from here
        resource.setrlimit(resource.RLIMIT_CPU, (request["cpu_s"], request["cpu_s"] + 5))
    if request.get("as_bytes"):
        resource.setrlimit(resource.RLIMIT_AS, (request["as_bytes"], request["as_bytes"]))
    if request.get("fsize_bytes"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (request["fsize_bytes"], request["fsize_bytes"]))
    if request.get("nproc"):
        resource.setrlimit(resource.RLIMIT_NPROC, (request["nproc"], request["nproc"]))


def apply_env_after_import(env):
    """The few variables a warm run can still honour after the preload (worker.WARM_SAFE_ENV)."""
    if env.get("PYTHONFAULTHANDLER"):
        import faulthandler
        faulthandler.enable()
    torch = sys.modules.get("torch")
    threads = env.get("OMP_NUM_THREADS", "")
    if torch is not None and threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))


# --- the server --------------------------------------------------------------------------------------
def supervise(ctrl, target, grace_s):
    """Wait for the target; a "kill" message gets it SIGTERM, then SIGKILL after `grace_s`.
    Returns (wait status, rusage), or None if our owner went away (the server should exit)."""
    pidfd = os.pidfd_open(target) if hasattr(os, "pidfd_open") else None
    term_at = None
    try:
        while True:
            reaped, status, usage = os.wait4(target, os.WNOHANG)
            if reaped:
                return status, usage
            waits = [ctrl] + ([pidfd] if pidfd is not None else [])
            timeout = 0.01 if pidfd is None else None
            if term_at is not None:
                timeout = max(0.0, min(timeout or grace_s, term_at + grace_s - time.monotonic()))
            ready, _, _ = select.select(waits, [], [], timeout)
            if ctrl in ready:
                message, fds = receive(ctrl)
                for fd in fds:
                    os.close(fd)
                if message is None:
                    kill_group(target, signal.SIGKILL)
                    return None
                if message.get("op") == "kill" and term_at is None:
                    kill_group(target, signal.SIGTERM)
                    term_at = time.monotonic()
            if term_at is not None and time.monotonic() >= term_at + grace_s:
                kill_group(target, signal.SIGKILL)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def kill_group(pid, sig):
    for kill in (os.killpg, os.kill):  # the group, and the target itself if it has no group yet
        try:
            kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(child) for child in listing.read().split()]
    except OSError:
        pass
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    if int(stat.read().rsplit(b")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


def kill_leftovers():
    """Kill and reap every child (orphans of the run re-parent to us) until none are left."""
    me = os.getpid()
    for _ in range(100):
        reap_zombies()
        leftovers = children_of(me)
        if not leftovers:
            return
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 1
        while children_of(me) and time.monotonic() < deadline:
            if not reap_zombies():
                time.sleep(0.005)


def reap_zombies():
    reaped = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped += 1


def alone():
    """Whether no process but this one is left: in our own PID namespace that means /proc lists only
    us (a run's namespace, nested in ours, shows there too); elsewhere, that we have no children."""
    me = os.getpid()
    if me != 1:
        return not children_of(me)
    deadline = time.monotonic() + 2
    while True:
        others = [e for e in os.listdir("/proc") if e.isdigit() and int(e) != me]
        if not others or time.monotonic() > deadline:
            return not others
        reap_zombies()
        time.sleep(0.005)


def serve(ctrl, request, fds, config):
    """One run: fork, supervise, clean up, report. False if the server should exit."""
    sys.stdout.flush()
    sys.stderr.flush()
    isolated = config["mode"] == "bwrap"
    status_r, status_w = os.pipe() if isolated else (None, None)
    request = dict(request, isolated=isolated)
    if isolated:
        request["workdir"] = config["workdir"]
        request["cwd"] = os.path.join(config["workdir"], *[p for p in (request.get("cwd") or "").split("/") if p])
    child = os.fork()
    if child == 0:
        ctrl.close()
        if isolated:
            os.close(status_r)
            isolated_run(request, fds, status_w, config)
        become_target(request, fds)
    for fd in fds:
        os.close(fd)
    if isolated:
        os.close(status_w)
    outcome = supervise(ctrl, child, float(request.get("term_grace_s", 1.0)))
    kill_leftovers()
    report = read_report(status_r) if isolated else None
    if outcome is None:
        return False
    status, usage = outcome
    if isolated:
        status, maxrss = (report["wait_status"], report["maxrss_kb"]) if report else (None, None)
    else:
        maxrss = usage.ru_maxrss
    clean = alone()
    send(ctrl, {"event": "done", "wait_status": status, "maxrss_kb": maxrss, "clean": clean})
    return clean


def read_report(fd):
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        report = json.loads(b"".join(chunks))
    except ValueError:
        return None
    if isinstance(report, dict) and type(report.get("wait_status")) is int and type(report.get("maxrss_kb")) is int:
        return report
    return None


def main():
    ctrl = socket.socket(fileno=int(sys.argv[1]))
    config = json.loads(sys.argv[2])
    modules = tuple(sys.argv[3:])
    if os.getpid() != 1:
        try:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a stray Ctrl-C must not end the server
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    preload(modules)
    hazards = fork_hazards()
    send(ctrl, {"event": "ready" if not hazards else "unsafe", "problems": hazards,
                "pid_namespace": os.getpid() == 1, "threads": thread_names(), "mode": config["mode"]})
    if hazards:
        return
    while True:
        request, fds = receive(ctrl)
        if request is None:
            return
        if request.get("op") != "run":  # e.g. a kill that raced with the end of its run
            for fd in fds:
                os.close(fd)
            continue
        if not serve(ctrl, request, fds, config):
            return


if __name__ == "__main__":
    main()
    os._exit(0)  # skip interpreter shutdown (torch's takes seconds); there is nothing to flush
