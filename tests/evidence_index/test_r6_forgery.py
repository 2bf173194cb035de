"""Reviewer r6: one fact of committed evidence edited, the folder re-indexed and verified (each against the
checkout that made it), where the edit verified PASS before. Each is refused as not authentic, naming the field;
the untouched copies still pass. Every figure is read from the committed bytes."""

from __future__ import annotations

import pytest
from core.one_run import _key

from tests.evidence_index.checkouts import CUDA_COMMIT, checkout_of
from tests.evidence_index.test_crossfile_forgery import assert_refused, copy, edit_json
from tests.evidence_index.test_one_run_forgery import cuda_pair, rebuild_and_verify, rebuild_and_verify_at


def test_the_untouched_cuda_pair_passes(tmp_path):
    code, report = rebuild_and_verify_at(cuda_pair(tmp_path), checkout_of(CUDA_COMMIT))
    assert (code, report["outcome"]) == (0, "pass"), report["problems"]


def test_the_untouched_ext4_folder_passes(tmp_path):
    code, report = rebuild_and_verify(copy(tmp_path, "local/filesystems"))
    assert (code, report["outcome"]) == (0, "pass"), report["problems"]


# --- F2: platform.python with a suffix no Python writes was cut to X.Y.Z and matched the others ------------------

@pytest.mark.parametrize("written, same", [("3.14.0rc1", "3.14.0"), ("3.13.0+", "3.13.0"), ("3.12.3b2", "3.12.3"),
                                           ("3.12.3x", None), ("3.12.3 ", None), ("3.12.3.1", None)])
def test_only_the_forms_python_writes_are_cut_to_their_release(written, same):
    assert (_key("python", written) == same) if same else _key("python", written) != "3.12.3"


def test_the_cuda_gates_python_with_a_suffix_is_not_authentic(tmp_path):
    folder = cuda_pair(tmp_path)
    edit_json(folder / "platform-runtime-cuda.json", lambda d: d["platform"].update(python=d["platform"]["python"]
                                                                                      + "x"))
    assert_refused(*rebuild_and_verify_at(folder, checkout_of(CUDA_COMMIT)), "platform.python is '")


def test_one_ext4_gates_python_with_a_suffix_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/filesystems")
    edit_json(folder / "platform-runtime-cpu-ext4-root.json",
              lambda d: d["platform"].update(python=d["platform"]["python"] + "x"))
    assert_refused(*rebuild_and_verify(folder), "platform-runtime-cpu-ext4-root.json: platform.python is '")
