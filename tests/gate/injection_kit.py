"""Injections set up from OUTSIDE the project's code, as an adversary who controls the runner's environment or
can drop files into its Python installation would: shared libraries compiled here with gcc, sitecustomize
files, .pth files, a fake torch. Nothing here imports the gate; the tests only run it.

The common payload is a forged mount view: every mount in /proc/self/mountinfo shown as nfs4 with vers=4.2,
which would make `--require nfs` hold on this ext4 machine if the gate believed it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
import textwrap
from pathlib import Path

import pytest

# open()/fopen() of any path ending in "mountinfo" opens $FAKE_MOUNTINFO instead.
OPEN_HOOKS = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static const char *swap(const char *path) {
    const char *fake = getenv("FAKE_MOUNTINFO");
    size_t n = path ? strlen(path) : 0;
    return (fake && n >= 9 && strcmp(path + n - 9, "mountinfo") == 0) ? fake : path;
}
static mode_t mode_of(int flags, va_list ap) { return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0; }
#define OPEN(name) int name(const char *path, int flags, ...) { \
    static int (*real)(const char *, int, ...); va_list ap; va_start(ap, flags); mode_t mode = mode_of(flags, ap); \
    va_end(ap); if (!real) real = dlsym(RTLD_NEXT, #name); return real(swap(path), flags, mode); }
#define OPENAT(name) int name(int dirfd, const char *path, int flags, ...) { \
    static int (*real)(int, const char *, int, ...); va_list ap; va_start(ap, flags); \
    mode_t mode = mode_of(flags, ap); va_end(ap); if (!real) real = dlsym(RTLD_NEXT, #name); \
    return real(dirfd, swap(path), flags, mode); }
OPEN(open) OPEN(open64) OPENAT(openat) OPENAT(openat64)
FILE *fopen(const char *path, const char *mode) {
    static FILE *(*real)(const char *, const char *);
    if (!real) real = dlsym(RTLD_NEXT, "fopen");
    return real(swap(path), mode);
}
"""
# In place of the interpreter's libpython (found first on LD_LIBRARY_PATH): the same open() hooks, and the one
# symbol the python binary needs, which loads the real library and runs it.
LIBPYTHON_SHIM = OPEN_HOOKS + r"""
int Py_BytesMain(int argc, char **argv) {
    void *real = dlopen(REAL_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL);
    if (!real) { fprintf(stderr, "%s\n", dlerror()); return 127; }
    return ((int (*)(int, char **))dlsym(real, "Py_BytesMain"))(argc, argv);
}
"""
AUDIT_LIBRARY = r"""
#define _GNU_SOURCE
#include <link.h>
unsigned int la_version(unsigned int version) { return LAV_CURRENT; }
"""
# An OpenSSL 3 provider module whose constructor leaves a marker: loaded by any process whose OpenSSL reads a
# config naming it (OPENSSL_CONF), as hashlib does in every Python.
OPENSSL_PROVIDER = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void ran(void) {
    const char *marker = getenv("OPENSSL_MARKER"); FILE *f = marker ? fopen(marker, "a") : NULL; if (f) fclose(f); }
int OSSL_provider_init(void *handle, void *in, void *out, void **ctx) { return 0; }
"""
CUDA_RUNTIME_STUB = "int cudaRuntimeGetVersion(int *version) { *version = 12080; return 0; }\n"

# A sitecustomize that forges the mount view in Python, then hides (site.py ignores this ImportError).
SITECUSTOMIZE_FAKING_MOUNTS = textwrap.dedent("""
    import builtins, io, os
    _open = builtins.open
    def open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.fspath(file).endswith("mountinfo"):
            return _open(os.environ["FAKE_MOUNTINFO"], *args, **kwargs)
        return _open(file, *args, **kwargs)
    builtins.open = open
    import pathlib
    _read_text = pathlib.Path.read_text
    pathlib.Path.read_text = lambda self, *a, **k: (_open(os.environ["FAKE_MOUNTINFO"]).read()
                                                    if str(self).endswith("mountinfo") else _read_text(self, *a, **k))
    raise ImportError(name="sitecustomize")
""")
# On PYTHONPATH, for the gate's own (not isolated) process: every worker report it parses says nfs4, and
# PYTHONPATH is removed from os.environ so nothing the gate reads there shows it.
SITECUSTOMIZE_PATCHING_JSON = textwrap.dedent("""
    import json, os
    _loads = json.loads
    def loads(text, *args, **kwargs):
        value = _loads(text, *args, **kwargs)
        if isinstance(value, dict) and isinstance(value.get("filesystem"), dict):
            value["filesystem"].update(type="nfs4", nfs_version="4.2",
                                       mount_options=["rw", "vers=4.2", "hard", "proto=tcp", "sec=sys",
                                                      "local_lock=none"])
        return value
    json.loads = loads
    os.environ.pop("PYTHONPATH", None)
""")


def compile_library(source: str, output: Path, *flags: str) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    output.parent.mkdir(parents=True, exist_ok=True)
    c_file = output.with_suffix(output.suffix + ".c")
    c_file.write_text(source, encoding="utf-8")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(output), str(c_file), *flags, "-ldl"], check=True,
                   capture_output=True, timeout=120)
    return output


def nfs_mountinfo(folder: Path) -> Path:
    """This machine's mountinfo with every mount shown as nfs4, vers=4.2 (same mount ids, so the work dir's
    own mount is found in it)."""
    lines = []
    for line in Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines():
        fields = line.split(" ")
        separator = fields.index("-")
        fields[separator + 1:] = ["nfs4", "server:/export", "rw,vers=4.2,hard,proto=tcp,sec=sys,local_lock=none"]
        lines.append(" ".join(fields))
    path = folder / "mountinfo-nfs4"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def preload_shim(folder: Path) -> Path:
    return compile_library(OPEN_HOOKS, folder / "libmountview.so")


def libpython_shim(folder: Path) -> Path:
    """A libpython3.X.so.1.0 in `folder` (put it on LD_LIBRARY_PATH) that loads the interpreter's real one."""
    soname = sysconfig.get_config_var("INSTSONAME")
    libdir = sysconfig.get_config_var("LIBDIR")
    if not sysconfig.get_config_var("Py_ENABLE_SHARED") or not soname or not (Path(libdir) / soname).is_file():
        pytest.skip("this interpreter is linked statically: there is no libpython to shim")
    real = json.dumps(str(Path(libdir) / soname))
    return compile_library(LIBPYTHON_SHIM, folder / soname, f"-DREAL_LIBPYTHON={real}", f"-Wl,-soname,{soname}")


def audit_library(folder: Path) -> Path:
    return compile_library(AUDIT_LIBRARY, folder / "libaudit-none.so")


def cuda_toolkit_dir(folder: Path) -> Path:
    """A CUDA-toolkit-like lib64 folder (libcudart.so.12), as CUDA boxes name on LD_LIBRARY_PATH."""
    compile_library(CUDA_RUNTIME_STUB, folder / "lib64" / "libcudart.so.12")
    return folder / "lib64"


def openssl_config(folder: Path) -> Path:
    """An openssl.cnf (for OPENSSL_CONF) that activates the default provider and a module compiled here."""
    module = compile_library(OPENSSL_PROVIDER, folder / "libprovider.so")
    config = folder / "openssl.cnf"
    config.write_text("openssl_conf = init\n[init]\nproviders = providers\n[providers]\ndefault = default_sect\n"
                      f"planted = planted_sect\n[default_sect]\nactivate = 1\n[planted_sect]\nmodule = {module}\n"
                      "activate = 1\n", encoding="utf-8")
    return config


# A module named for an optional import the standard library probes on every platform (subprocess tries
# `import msvcrt` to learn whether it runs on Windows): dropped into site-packages on Linux it runs in every
# process that imports subprocess, then hides by raising the ImportError the probe expects. In the gate's
# file-system probe it rewrites the detected file system as NFS 4.2, the kernel's statfs magic included.
MODULE_FAKING_NFS = '''
import os, sys
if sys.argv[:1] and os.path.basename(sys.argv[0]) == "fs_worker.py" and sys.argv[1:2] == ["probe"]:
    import importlib.machinery

    def _patch(module):
        real = module.detect_linux

        def detect_linux(path, proc=module.Path("/proc")):
            found = real(path, proc)
            found.update(type="nfs4", mount_options=["rw", "relatime", "vers=4.2", "hard", "proto=tcp", "sec=sys",
                                                     "local_lock=none"], nfs_version="4.2", statfs_f_type=0x6969)
            return found
        module.detect_linux = detect_linux

    class _Finder:
        def find_spec(self, name, path=None, target=None):
            if name != "platform_runtime.filesystem":
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                _patch(module)
            spec.loader.exec_module = exec_module
            return spec
    loaded = sys.modules.get("platform_runtime.filesystem")
    if loaded is not None and hasattr(loaded, "detect_linux"):  # imported before subprocess was
        _patch(loaded)
    else:
        sys.meta_path.insert(0, _Finder())
raise ModuleNotFoundError("No module named 'msvcrt'", name="msvcrt")
'''

# Prepended to an installed module the device worker imports with torch (typing_extensions): every tensor product
# becomes wrong, and the worker's report still says the product equals the known answer (json.dumps rewritten).
# `forged_wrong_product` in the recorded matmul shows the payload ran and the product really was wrong.
WORKER_REPORT_FORGERY = '''
import json as _json, sys as _sys
class _BreakMatmul:
    def find_spec(self, name, path=None, target=None):
        torch = _sys.modules.get("torch")
        if torch is not None and hasattr(torch, "Tensor") and not getattr(torch, "_forged", False):
            torch._forged = True
            real = torch.Tensor.__matmul__
            torch.Tensor.__matmul__ = lambda a, b: real(a, b) + 1
        return None
_sys.meta_path.insert(0, _BreakMatmul())
_dumps = _json.dumps
def _forge(obj, *args, **kwargs):
    if isinstance(obj, dict) and isinstance(obj.get("matmul"), dict):
        obj["matmul"]["forged_wrong_product"] = not obj["matmul"]["equals_python_answer"]
        obj["matmul"]["equals_python_answer"] = True
        obj.update(ok=True, reason=None)
    return _dumps(obj, *args, **kwargs)
_json.dumps = _forge
'''


def forged_bytecode(source: Path, payload: str) -> Path:
    """A __pycache__ .pyc for `source` whose header carries the source's mtime and size (so Python runs it in the
    source's place) and whose code is `payload` followed by the source: the source itself is left untouched."""
    import importlib.util
    from importlib._bootstrap_external import _code_to_timestamp_pyc

    status = source.stat()
    code = compile(payload + source.read_text(encoding="utf-8"), str(source), "exec", dont_inherit=True)
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.parent.mkdir(exist_ok=True)
    cached.write_bytes(_code_to_timestamp_pyc(code, int(status.st_mtime), status.st_size))
    return cached
