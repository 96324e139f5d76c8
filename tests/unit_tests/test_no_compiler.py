"""Nothing is compiled at run time (issue 33): the test command runs pytest with a PATH
that has no C or C++ compiler (``scripts/test.sh`` sets ``TIERED_MEMORY_NO_COMPILER=1``),
so a JIT that needs one (torch inductor behind ``torch.compile``) fails the local-model
tests and the demo runs there. This checks that the PATH really has none.
"""

from __future__ import annotations

import os
import shutil

import pytest

COMPILERS = ("cc", "c++", "gcc", "g++", "clang", "clang++")


@pytest.mark.skipif(
    os.environ.get("TIERED_MEMORY_NO_COMPILER") != "1",
    reason="only under scripts/test.sh, which removes the compilers from PATH",
)
def test_the_test_run_has_no_compiler_on_its_path() -> None:
    found = {name: shutil.which(name) for name in COMPILERS}
    assert not any(found.values()), f"compilers on PATH: {found}"
    assert shutil.which("sh"), "the PATH must still hold the other commands"
