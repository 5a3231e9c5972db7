"""The warm server's preload: import what every run would import, once, and check that a fork of
the result is still a faithful run (CUDA untouched, no bad-fork flag).

Runs inside the server's sandbox; imported by `_worker_server.py` from beside it (the directory
of the script is on sys.path there). Standalone on purpose: stdlib only, no project imports.
"""
import hashlib
import os
import platform
import sys


def preload(modules, seed=None, warm_imports=()):
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
            plant_seed(seed)
            warm_machine_answers()
            remember_compiles()
            import_present(warm_imports)
        keep_preload_finalizers_from_exit()
    finally:
        del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]
        if hidden is not None:
            sys.modules["torch"].cuda.is_available = hidden


WARM_IMPORTS = "_warm_imports.txt"  # beside this file; written by scripts/list_warm_imports.py


def read_warm_imports(directory):
    """The module names in the warm-imports list, or none if it is missing."""
    try:
        with open(os.path.join(directory, WARM_IMPORTS), encoding="utf-8") as listing:
            return tuple(line.strip() for line in listing if line.strip() and not line.startswith("#"))
    except OSError:
        return ()


def import_present(names):
    """Import each of `names` that this torch has: what runs would import lazily at their first
    compile or export (see scripts/list_warm_imports.py). A name that fails to import is skipped,
    leaving the run to import it itself, as a cold run would. Returns the names skipped."""
    import importlib
    skipped = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - another torch; the run imports what it needs itself
            skipped.append(name)
    return skipped


def keep_preload_finalizers_from_exit():
    """Mark the `weakref.finalize` callbacks the preload registered as not run at exit.

    Why: torch's imports create hundreds of `torch.library.Library` objects whose finalizers
    deregister their operators; a run's exit (`_bootstrap.finish`, atexit) ran every one of them,
    about 40 ms of each warm run's CPU (a `pass` run took 0.15 s), only to undo registrations in
    a process about to end. A cold `python repro.py` runs them too, but nothing in them can
    change what a run shows: they run after the script, an error in them is printed as "Exception
    ignored" and leaves the exit status alone. Finalizers the run's own code registers are
    untouched and run at its exit as under python."""
    import weakref
    for finalizer in list(getattr(weakref.finalize, "_registry", {})):
        finalizer.atexit = False


def warm_machine_answers():
    """Ask, once, the questions about the machine that Inductor asks at every process's first
    compile, so each fork inherits the answers instead of asking again: which CPU vector ISAs build
    and load (per ISA a g++ build of a test program and a Python child that dlopens it, about 1.1 s
    on 2 cores) and the hash of torch's own sources (0.25 s). A warm run that reaches Inductor's
    code cache took 2.0 s, 1.35 s of it these two. The answers depend on the machine, the compiler
    and the torch install, never on a run; the list of usable ISAs itself is asked again by each
    run (cheap once each ISA's answer is known), so a run that sets `cpp.vec_isa_ok` or
    ATEN_CPU_CAPABILITY still decides for itself. If an ISA the CPU has did not build here (a
    compiler or cache-directory problem of the server's own), the answers are forgotten and each
    run finds out for itself, as a cold run does. Any failure here only costs the saving."""
    try:
        from torch._inductor import codecache, cpu_vec_isa
        codecache.torch_key()
        usable = cpu_vec_isa.valid_vec_isa_list()
        cpu_vec_isa.valid_vec_isa_list.cache_clear()
        if hasattr(cpu_vec_isa, "x86_isa_checker") and platform.machine() in ("x86_64", "AMD64"):
            flags = cpu_vec_isa.x86_isa_checker()
            offered = [isa for isa in cpu_vec_isa.supported_vec_isa_list
                       if all(flag in flags for flag in str(isa).split())]
            if [str(isa) for isa in usable] != [str(isa) for isa in offered]:
                forget_isa_answers(cpu_vec_isa)
    except Exception:  # noqa: BLE001 - a torch without these internals: no saving, nothing else changes
        pass


def plant_seed(seed):
    """Copy the prebuilt ISA test libraries (runners/inductor_seed.py; `seed` is that store's
    directory, bound read-only) into this process's Inductor cache, so warm_machine_answers only
    dlopens them (1.2 s) instead of building each with g++ (8 s on 2 cores)."""
    if not seed or not os.path.isdir(seed):
        return
    import shutil
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    for sub in os.listdir(seed):
        source = os.path.join(seed, sub)
        if not os.path.isdir(source) or os.path.islink(source):
            continue
        os.makedirs(os.path.join(cache_dir(), sub), exist_ok=True)
        for name in os.listdir(source):
            target = os.path.join(cache_dir(), sub, name)
            if not os.path.exists(target):
                shutil.copyfile(os.path.join(source, name), target)


FAILED_COMPILES = "pt2-triage-failed-compiles"  # under the run's (its job's) Inductor cache directory
BUILT_OBJECTS = "pt2-triage-built-objects"  # likewise
MAX_REMEMBERED_OUTPUT = 1 << 20
MAX_REMEMBERED_OBJECT = 64 << 20


class _RememberingSubprocess:
    """`subprocess` as torch's cpp_builder sees it, except that a C++ build it has seen in this job
    is answered from memory: a build that failed fails again at once with the compiler's own
    output, and an object file (`-c -o X.o`) that was built is copied into place.

    Why: minimizing, most candidates generate the very same C++ (the edit was elsewhere), and g++
    was paid again by each. An Inductor C++ compile error's failing kernel took about 0.6 s of a
    1.2 s warm run on 2 cores. AOTInductor rebuilds its wrapper on every export, even from Inductor's
    warm cache: about 4 s of a 5.3 s warm run for a two-layer encoder, 6 s per candidate in all.
    Faithful because a compiler given the same command and the same sources answers the same: the
    key is the command and the content of every existing file it names (not the output it is to
    write). Only a diagnosed failure is kept (exit status > 0 and "error" in the output), never a
    killed or timed-out build. torch's own code still raises CppCompileError from the
    CalledProcessError, so the traceback and message read as without the memo. Linking and
    every other run pass through."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def run(self, cmd, *args, **kwargs):
        key = _memo_key(cmd) if self._is_compile(cmd, args, kwargs) else None
        built = _object_output(cmd)
        if key is not None:
            remembered = self._remembered(cmd, key, built)
            if remembered is not None:
                return remembered
        try:
            done = self._real.run(cmd, *args, **kwargs)
        except self._real.CalledProcessError as failed:
            output = failed.stdout or b""
            if key is not None and failed.returncode > 0 and b"error" in output and len(output) <= MAX_REMEMBERED_OUTPUT:
                _write_memo(_in_memo(FAILED_COMPILES, key), b"%d\n" % failed.returncode + output)
            raise
        if key is not None and built is not None:
            _keep_object(built, _in_memo(BUILT_OBJECTS, key), done.stdout or b"")
        return done

    def _remembered(self, cmd, key, built):
        """The answer for a build seen before: raise its failure, or put its object in place and
        return as the compiler did; None when it was never seen (or cannot be put in place)."""
        failure = _in_memo(FAILED_COMPILES, key)
        if os.path.isfile(failure):
            with open(failure, "rb") as remembered:
                returncode, output = remembered.read().split(b"\n", 1)
            raise self._real.CalledProcessError(int(returncode), cmd, output=output)
        kept = _in_memo(BUILT_OBJECTS, key)
        if built is None or not os.path.isfile(kept):
            return None
        try:
            with open(kept, "rb") as remembered:
                size, rest = remembered.read().split(b"\n", 1)
            output, data = rest[:int(size)], rest[int(size):]
        except (OSError, ValueError):
            return None
        return self._real.CompletedProcess(cmd, 0, stdout=output) if _write_memo(built, data) else None

    def _is_compile(self, cmd, args, kwargs):
        """The shape of cpp_builder's compile call (`_run_compile_cmd`), and no other of its runs."""
        return (isinstance(cmd, list) and not args and kwargs.get("check") is True and bool(kwargs.get("cwd"))
                and kwargs.get("stdout") == self._real.PIPE and kwargs.get("stderr") == self._real.STDOUT
                and not kwargs.get("text") and set(kwargs) == {"cwd", "check", "stdout", "stderr"})


def _object_output(cmd):
    """The object file a compile-only build (`-c ... -o X.o`) writes; None for any other build."""
    if not isinstance(cmd, list) or "-c" not in cmd or cmd.count("-o") != 1:
        return None
    at = cmd.index("-o") + 1
    target = cmd[at] if at < len(cmd) else ""
    return target if target.endswith(".o") and os.path.isabs(target) else None


def _memo_key(cmd):
    """The memo key for this build: sha256 of the command and of each file it names, except the
    object it writes (there from an earlier build or not, it is not an input); None if anything is
    unreadable (then no memo)."""
    try:
        digest = hashlib.sha256()
        output = _object_output(cmd)
        for arg in cmd:
            digest.update(arg.encode() + b"\0")
            if arg != output and os.path.isfile(arg):
                with open(arg, "rb") as named:
                    digest.update(hashlib.sha256(_without_trailing_comments(arg, named.read())).digest())
        return digest.hexdigest()
    except Exception:  # noqa: BLE001 - no memo, the build simply runs
        return None


def _without_trailing_comments(name, content):
    """A C++ source without the `//` comment lines at its end. AOTInductor appends its compile and
    link commands to the wrapper and kernel sources after each build, so the same source grows by
    a comment per build; comments after the last line of code do not change what g++ builds."""
    if not name.endswith(".cpp"):
        return content
    lines = content.split(b"\n")
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith(b"//")):
        if len(lines) > 1 and lines[-2].endswith(b"\\"):  # a continued line: the comment is part of it
            break
        lines.pop()
    return b"\n".join(lines)


def _in_memo(kind, key):
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    return os.path.join(cache_dir(), kind, key)


def _keep_object(built, kept, output):
    try:
        if os.path.getsize(built) > MAX_REMEMBERED_OBJECT or len(output) > MAX_REMEMBERED_OUTPUT:
            return
        with open(built, "rb") as made:
            _write_memo(kept, b"%d\n" % len(output) + output + made.read())
    except OSError:
        pass


def _write_memo(path, data):
    """Write whole or not at all (another run may read it meanwhile); whether it was written."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "wb") as out:
            out.write(data)
        os.replace(partial, path)
        return True
    except OSError:
        return False


def remember_compiles():
    """Route cpp_builder's compiler runs through _RememberingSubprocess (warm runs only)."""
    try:
        from torch._inductor import cpp_builder
        if not isinstance(cpp_builder.subprocess, _RememberingSubprocess):
            cpp_builder.subprocess = _RememberingSubprocess(cpp_builder.subprocess)
    except Exception:  # noqa: BLE001 - a torch without it: no saving, nothing else changes
        pass


def forget_isa_answers(cpu_vec_isa):
    cached = getattr(cpu_vec_isa.VecISA, "_VecISA__bool__impl", None)
    if cached is not None and hasattr(cached, "cache_clear"):
        cached.cache_clear()


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
