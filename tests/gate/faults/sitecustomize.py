"""Faults injected from outside the gate into its running child processes.

The tests put this folder on the sys.path of a throw-away venv (a .pth file in its site-packages, see
tests/conftest.py fault_python) and name the fault in PLATFORM_RUNTIME_FAULT: every Python process the gate
starts, isolated as it is (python -I), loads this file at start-up, and the process whose role matches breaks
one property for real.
None of this is in the product; the product only sees a torch or an os that misbehaves.
"""

import os
import sys

FAULT = os.environ.get("PLATFORM_RUNTIME_FAULT", "")
AUDIT_DIR = os.environ.get("PLATFORM_RUNTIME_AUDIT_DIR")


def _role_of(argv):
    """(script, role, role args) from a command line. The gate starts file-system checks as
    `platform_runtime_worker.py fs_worker MODE ...`, the device worker as its file; on POSIX a check forks its
    roles, each with sys.argv set to the command line it would have had (see _forked below)."""
    script = os.path.basename(argv[0]) if argv else ""
    if script == "platform_runtime_worker.py" and argv[1:2] == ["fs_worker"] and len(argv) > 2:
        return script, argv[2], argv[3:]
    if "--multiprocessing-fork" in argv:  # a rank of the collective check, started by spawn
        return script, "rank", []
    if script == "platform_runtime_worker.py" and argv[1:3] == ["killed_writer", "writer"]:
        return script, "killed-writer", argv[3:]
    if script == "platform_runtime_worker.py" and argv[1:2] == ["training_worker"] and len(argv) > 2:
        return script, f"training-{argv[2]}", argv[3:]
    return script, ("device" if script == "device_worker.py" else ""), []


SCRIPT, ROLE, ROLE_ARGS = _role_of(sys.argv)


def _torch_faults():
    import torch

    if FAULT == "load-returns-other-tensor":
        real_load = torch.load

        def load(*args, **kwargs):
            state = real_load(*args, **kwargs)
            first = next(iter(state["model"]))
            state["model"][first] = state["model"][first] + 1e-3
            return state

        torch.load = load
    elif FAULT == "optimizer-does-not-step":
        torch.optim.SGD.step = lambda self, closure=None: None
    elif FAULT == "matmul-wrong":
        real_matmul = torch.Tensor.__matmul__
        torch.Tensor.__matmul__ = lambda a, b: real_matmul(a, b) + 1
    elif FAULT == "cannot-allocate":
        def ones(*args, **kwargs):
            raise RuntimeError("CPU out of memory: tried to allocate 4096 bytes")

        torch.ones = ones
    elif FAULT == "loss-nan":
        real_mse = torch.nn.functional.mse_loss
        torch.nn.functional.mse_loss = lambda *a, **k: real_mse(*a, **k) * float("nan")


def _after_import(name, patch):
    """Run patch(module) right after `name` is imported (torch imports torch.distributed itself)."""
    import importlib.abc
    import importlib.machinery

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            real_exec = spec.loader.exec_module

            def exec_module(module):
                real_exec(module)
                patch(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Finder())


def _faulty_rank() -> bool:
    """Whether this rank is one PLATFORM_RUNTIME_FAULT_RANKS names (default 1; "all"), asked at call time: spawn
    imports torch before the rank's code runs, and the rank sets RANK (torchrun's variable) before it calls."""
    wanted = os.environ.get("PLATFORM_RUNTIME_FAULT_RANKS", "1")
    return wanted == "all" or os.environ.get("RANK") in wanted.split(",")


def _rank_faults(c10d):
    import functools
    import time

    def faulty(real, broken):
        @functools.wraps(real)
        def call(*args, **kwargs):
            return broken(real, *args, **kwargs) if _faulty_rank() else real(*args, **kwargs)
        return call

    def hang(real, *args, **kwargs):
        time.sleep(3600)

    def wrong_sum(real, tensor, op=c10d.ReduceOp.SUM, *args, **kwargs):
        work = real(tensor, op, *args, **kwargs)
        if op == c10d.ReduceOp.SUM:
            tensor.add_(1)
        return work

    if FAULT == "rank-never-joins":
        c10d.init_process_group = faulty(c10d.init_process_group, hang)
    elif FAULT == "rank-hangs-in-op":
        c10d.broadcast = faulty(c10d.broadcast, hang)
    elif FAULT == "rank-wrong-sum":
        c10d.all_reduce = faulty(c10d.all_reduce, wrong_sum)
    elif FAULT == "rank-wrong-device":
        c10d.init_process_group = faulty(c10d.init_process_group, init_then_report_another_device)


def init_then_report_another_device(real, *args, **kwargs):
    """After init (torch is whole by then), torch tells the rank's own code (not torch's, which would then
    route the op to CUDA) that this rank's CPU tensors live on a GPU that is not its own: the ops still run."""
    result = real(*args, **kwargs)
    torch = sys.modules["torch"]
    real_device = torch.Tensor.device
    other = torch.device("cuda", 0)

    def device(self):
        found = real_device.__get__(self)
        caller = sys._getframe(1).f_globals.get("__name__", "")
        return other if found.type == "cpu" and not caller.startswith("torch") else found

    torch.Tensor.device = property(device)
    return result


def _training_faults():
    """Break, in a training-stack check's worker, what its check must catch, through torch or the interpreter."""
    import multiprocessing

    if FAULT == "autocast-ignored":
        # An autocast that silently does nothing (the region runs in float32), as on a device without it.
        def patch(module):
            real_init = module.autocast.__init__

            def init(self, device_type, dtype=None, enabled=True, cache_enabled=None):
                real_init(self, device_type, dtype=dtype, enabled=False, cache_enabled=cache_enabled)

            module.autocast.__init__ = init

        _after_import("torch.amp.autocast_mode", patch)
    elif FAULT == "loader-worker-hangs":
        # Loader worker 1 hangs inside its first sample (a read from a mount that stopped answering): the forked
        # worker's torch.frombuffer, which the dataset calls, never returns there.
        def hang_in_worker_one():
            torch = sys.modules.get("torch")
            if torch is None:
                return
            real = torch.frombuffer

            def frombuffer(*args, **kwargs):
                info = torch.utils.data.get_worker_info()
                if info is not None and info.id == 1:
                    import time

                    time.sleep(3600)
                return real(*args, **kwargs)

            torch.frombuffer = frombuffer

        os.register_at_fork(after_in_child=hang_in_worker_one)
    elif FAULT in ("loader-start-method-spawn", "loader-dataset-unpicklable"):
        # The platform's default start method is spawn (macOS, Windows) ...
        multiprocessing.set_start_method("spawn", force=True)
        if FAULT == "loader-dataset-unpicklable":
            # ... and the dataset holds what pickle refuses (an open file), as datasets that open theirs early do.
            def patch(module):
                real_init = module.DataLoader.__init__

                def init(self, dataset, *args, **kwargs):
                    dataset.handle = open(os.devnull, "rb")  # noqa: SIM115 - held by the dataset
                    real_init(self, dataset, *args, **kwargs)

                module.DataLoader.__init__ = init

            _after_import("torch.utils.data.dataloader", patch)


def _killed_writer_fault():
    """A faulty writer for the killed-writer stage (in its writer processes only)."""
    import tempfile

    if FAULT == "killed-writer-in-place":
        # The writer truncates the target and writes it where it is: a kill mid-write leaves it torn.
        def mkstemp(suffix=None, prefix=None, dir=None, text=False):
            target = os.path.join(dir, prefix.strip(".").rsplit(".", 1)[0])
            return os.open(target, os.O_RDWR | os.O_CREAT | os.O_TRUNC), target

        tempfile.mkstemp = mkstemp
    elif FAULT == "killed-writer-renames-first":
        # The rename comes before the data is written and fsynced: the target is empty until the write lands.
        real_mkstemp, real_replace = tempfile.mkstemp, os.replace

        def mkstemp(suffix=None, prefix=None, dir=None, text=False):
            fd, temp = real_mkstemp(suffix=suffix, prefix=prefix, dir=dir, text=text)
            real_replace(temp, os.path.join(dir, prefix.strip(".").rsplit(".", 1)[0]))
            return fd, temp

        tempfile.mkstemp = mkstemp
        os.replace = lambda src, dst, **k: None if not os.path.exists(src) else real_replace(src, dst, **k)
    elif FAULT == "killed-writer-no-sweep":
        # The next writer leaves the killed writers' temporaries where they are (it "removes" none of them).
        real_unlink = os.unlink
        os.unlink = lambda path, *a, **k: None if str(path).endswith(".tmp") else real_unlink(path, *a, **k)


def _inject():
    """Break, in this process, what FAULT names for ROLE."""
    if ROLE == "rank" and FAULT.startswith("rank-"):
        _after_import("torch.distributed.distributed_c10d", _rank_faults)
    elif ROLE == "device" and FAULT == "device-hangs":
        import time

        time.sleep(3600)
    elif ROLE == "device" and FAULT == "device-escapes-holding-output":
        # Stands in for a process the kill cannot reap in time (uninterruptible sleep on a hung NFS mount): a
        # grandchild leaves the process group and keeps the worker's output open.
        import time

        if os.fork() == 0:
            os.setsid()
            with open(os.environ["PLATFORM_RUNTIME_FAULT_PIDFILE"], "w") as handle:
                handle.write(str(os.getpid()))
            time.sleep(3600)
            os._exit(0)
        time.sleep(3600)
    elif ROLE == "device" and FAULT == "device-crashes":
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    elif ROLE == "device" and FAULT:
        _torch_faults()
    elif ROLE.startswith("training-") and FAULT:
        _training_faults()
    elif ROLE == "probe" and FAULT == "probe-killed-after-report":
        # The probe's own report is written, then a signal ends it (as a racer that wrote a line into its stdout
        # and SIGKILLed it would): a report from a child that did not exit by itself must not count.
        import atexit
        import signal

        def _die() -> None:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)

        atexit.register(_die)
    elif ROLE == "probe" and FAULT == "probe-hangs-after-mkdir":
        # The probe makes the workspace, then hangs (a stuck mount): the global timeout must not leave it behind.
        import pathlib
        import time

        real_mkdir = pathlib.Path.mkdir

        def mkdir(self, *args, **kwargs):
            real_mkdir(self, *args, **kwargs)
            time.sleep(3600)

        pathlib.Path.mkdir = mkdir
    elif ROLE == "failing-writer" and FAULT == "writer-in-place":
        # The "temporary" file is the target itself: a writer that dies mid-write destroys the old file.
        import tempfile

        def mkstemp(suffix=None, prefix=None, dir=None, text=False):
            target = os.path.join(dir, prefix.strip(".").rsplit(".", 1)[0])  # ".<name>.<pid>-" -> "<name>"
            return os.open(target, os.O_RDWR | os.O_CREAT | os.O_TRUNC), target

        tempfile.mkstemp = mkstemp
    elif ROLE == "killed-writer" and FAULT.startswith("killed-writer-"):
        _killed_writer_fault()
    elif ROLE == "failing-writer" and FAULT.startswith("killed-writer-") and hasattr(os, "register_at_fork"):
        # On POSIX the stage forks its writers from the failing-writer process: break only those children.
        os.register_at_fork(after_in_child=_killed_writer_fault)
    elif ROLE == "failing-writer" and FAULT == "temp-left-behind":
        real_unlink = os.unlink
        os.unlink = lambda path, *a, **k: None if str(path).endswith(".tmp") else real_unlink(path, *a, **k)
    elif ROLE == "replace-writer" and FAULT == "replace-not-atomic":
        # A "replace" that truncates the target and writes it in two halves: readers can see half a file.
        import time

        def replace(src, dst):
            with open(src, "rb") as handle:
                data = handle.read()
            with open(dst, "wb") as handle:
                handle.write(data[: len(data) // 2])
                handle.flush()
                time.sleep(0.002)
                handle.write(data[len(data) // 2:])
            os.unlink(src)

        os.replace = replace
    elif ROLE == "append-writer" and FAULT in ("lost-line", "torn-line", "duplicated-line"):
        real_write = os.write

        def write(fd, data):
            if b'"pad": "003-00007-' in bytes(data):
                if FAULT == "lost-line":
                    return len(data)
                if FAULT == "torn-line":
                    real_write(fd, bytes(data)[:40])
                    return len(data)
                real_write(fd, data)
            return real_write(fd, data)

        os.write = write
    elif ROLE in ("append", "append-writer", "lock-attempt") and FAULT == "lock-noop":
        # A lock that does not lock: every call returns as if it had been granted.
        import fcntl

        fcntl.lockf = lambda *a, **k: None
    elif ROLE == "lock-attempt" and FAULT == "lock-attempt-silent":
        # A lock attempt that never answers (an interpreter that takes forever to start on a loaded machine).
        import time

        time.sleep(3600)
    elif ROLE == "lock-attempt" and FAULT in ("lock-granted-late", "lock-never-granted") and "0.000" not in ROLE_ARGS:
        # The attempts after the release are refused: the first three (a release that reaches the server late),
        # or all of them (a lock that stays taken).
        import errno
        import fcntl

        real_lockf, refusals = fcntl.lockf, []

        def lockf(fd, command, *args):
            if command & fcntl.LOCK_NB and (FAULT == "lock-never-granted" or len(refusals) < 3):
                refusals.append(1)
                raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
            return real_lockf(fd, command, *args)

        fcntl.lockf = lockf
    elif ROLE == "append-writer" and FAULT == "appender-disk-full" and ROLE_ARGS[1:2] == ["5"]:  # writer 5
        import errno

        def write(fd, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        os.write = write
    elif ROLE == "replace-writer" and FAULT == "replace-writer-silent" and ROLE_ARGS[1:2] == ["2"]:  # writer 2
        import time

        time.sleep(3600)
    elif ROLE == "replace-writer" and FAULT == "replace-unlinks-first":
        # A replace that is not one step: the name is absent for a moment (what NFS clients may show readers).
        import time

        def replace(src, dst):
            try:
                os.unlink(dst)
            except FileNotFoundError:  # another writer's unlink came first
                pass
            time.sleep(0.005)
            os.rename(src, dst)

        os.replace = replace
    elif ROLE == "append-writer" and FAULT == "appender-crashes" and ROLE_ARGS[1:2] == ["5"]:  # writer 5
        os._exit(3)
    elif ROLE == "cleanup" and FAULT in ("cleanup-hangs", "cleanup-does-nothing"):
        import shutil
        import time

        shutil.rmtree = (lambda *a, **k: time.sleep(3600)) if FAULT == "cleanup-hangs" else (lambda *a, **k: None)


_inject()


def _forked():
    """A process forked with another command line (a role forked from its check's process) is that role:
    its faults are injected at the fork, as they would be at a fresh interpreter's start-up."""
    global SCRIPT, ROLE, ROLE_ARGS
    script, role, role_args = _role_of(sys.argv)
    if (role, role_args) != (ROLE, ROLE_ARGS):
        SCRIPT, ROLE, ROLE_ARGS = script, role, role_args
        _inject()
        if AUDIT_DIR:  # it ends with os._exit, whose wrapper (below) writes its record
            import time

            STARTED[:] = ["fork", time.monotonic()]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)

if AUDIT_DIR:
    # Record, at exit, whether this process imported torch: only the device worker may.
    import atexit
    import json
    import time

    STARTED = ["interpreter", time.monotonic()]  # how this process became its role, and when

    def _record():
        name = f"{os.getpid()}.json"
        with open(os.path.join(AUDIT_DIR, name), "w") as handle:
            json.dump({"script": SCRIPT, "role": ROLE, "role_args": ROLE_ARGS, "torch": "torch" in sys.modules,
                       "pid": os.getpid(), "ppid": os.getppid(), "started": STARTED[0],
                       "ran": [STARTED[1], time.monotonic()]}, handle)

    atexit.register(_record)
    # A process that ends with os._exit (a forked role, the device worker) runs no exit handler: its record is
    # written first, as the real os._exit would skip it otherwise.
    _real_exit = os._exit

    def _exit_recorded(code):
        _record()
        _real_exit(code)

    os._exit = _exit_recorded
