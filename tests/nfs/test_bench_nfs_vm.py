"""benchmarks/bench_nfs_vm.py: a round that failed says why, even when the VM CLI wrote no run record.
Real processes: the CLI refuses the phases before it builds or boots anything."""

from __future__ import annotations

import os
import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_nfs_vm  # noqa: E402


def test_a_round_whose_cli_wrote_no_record_names_the_cli_s_own_words(tmp_path):
    verdict, wall, ok, failed = bench_nfs_vm.one_round(tmp_path, "action,no_such_phase")
    assert (verdict, wall, ok) == (None, 0.0, False)
    assert failed == ["no nfs-vm-run.json (FileNotFoundError): the CLI exited 2: nfs: --phases takes a "
                      "comma-separated subset of action,two_clients,server_restart,busy_unmount,busy_rename,"
                      "rename_race,server_gone"]
    assert "--phases takes" in (tmp_path / "out" / "cli-output.txt").read_text()


def test_the_host_load_is_the_kernel_s_three_averages():
    printed = [float(value) for value in bench_nfs_vm.host_load().split()]
    assert len(printed) == 3 and all(abs(a - b) < 5 for a, b in zip(printed, os.getloadavg(), strict=True))
