"""The warm server's preload: import what every run would import, once, and check that a fork of
the result is still a faithful run (CUDA untouched, no bad-fork flag).

Runs inside the server's sandbox; imported by `_worker_server.py` from beside it (the directory
of the script is on sys.path there). Standalone on purpose: stdlib only, no project imports.
"""
import os
import sys


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
