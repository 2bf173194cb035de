"""The VM's initramfs: a static busybox, the modules a 9p root needs (in dependency order) and the init."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# What the initramfs must load: virtio PCI transport, 9p over virtio, overlay for the writable root.
TARGETS = ("virtio_pci", "9pnet_virtio", "9p", "overlay")


def module_dependencies(modules_dir: Path) -> dict[str, tuple[str, list[str]]]:
    """name -> (relative path, [dependency paths]) from modules.dep (made by depmod)."""
    table = {}
    for line in (modules_dir / "modules.dep").read_text().splitlines():
        path, _, deps = line.partition(":")
        name = Path(path).name.split(".ko")[0].replace("-", "_")
        table[name] = (path, deps.split())
    return table


def load_order(modules_dir: Path, targets: tuple[str, ...] = TARGETS) -> list[str]:
    """Module paths so that each comes after what it needs (virtio_ring before virtio, ...).

    A target missing from modules.dep must be built into the kernel (modules.builtin), else it is an error."""
    table = module_dependencies(modules_dir)
    by_path = {path: name for name, (path, _) in table.items()}
    builtin = (modules_dir / "modules.builtin").read_text() if (modules_dir / "modules.builtin").exists() else ""
    order: list[str] = []

    def visit(path: str) -> None:
        if path in order:
            return
        for dep in table[by_path[path]][1]:
            visit(dep)
        order.append(path)

    for target in targets:
        if target in table:
            visit(table[target][0])
        elif f"/{target}.ko" not in builtin.replace("-", "_"):
            raise RuntimeError(f"module {target} is neither in modules.dep nor built in")
    return order


def build(rootfs: Path, kernel_version: str, busybox: Path, output: Path) -> list[str]:
    """Write a gzip'd newc cpio to output; returns the module load order it contains."""
    modules_dir = rootfs / "lib" / "modules" / kernel_version
    order = load_order(modules_dir)
    with tempfile.TemporaryDirectory() as staging_name:
        staging = Path(staging_name)
        for folder in ("bin", "dev", "proc", "sys", "modules"):
            (staging / folder).mkdir()
        shutil.copy2(busybox, staging / "bin" / "busybox")
        for path in order:
            if not path.endswith(".ko"):
                raise RuntimeError(f"compressed module {path}: busybox insmod needs plain .ko files")
            shutil.copy2(modules_dir / path, staging / "modules" / Path(path).name)
        (staging / "modules.order").write_text("".join(Path(p).name + "\n" for p in order))
        init = staging / "init"
        shutil.copy2(HERE / "initramfs_init.sh", init)
        init.chmod(0o755)
        files = sorted(str(p.relative_to(staging)) for p in staging.rglob("*"))
        # The host has no cpio; busybox has one. Sorted names and a gzip mtime of 0 keep it reproducible.
        archive = subprocess.run([str(busybox), "cpio", "-o", "-H", "newc"], cwd=staging, check=True,
                                 input=("\n".join(files) + "\n").encode(), capture_output=True)
        output.write_bytes(gzip.compress(archive.stdout, mtime=0))
    return order
