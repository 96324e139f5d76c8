"""notebooks/quickstart.ipynb runs top to bottom (nbclient, kernel ``python3``) without errors.

The kernel is the ``python3`` kernelspec of this interpreter. ``ipykernel`` (in the [test]
extra) ships it in ``<sys.prefix>/share/jupyter/kernels/python3``, and jupyter_client falls
back to ipykernel's native kernel anyway; if neither is found, the fixture installs it with
``python -m ipykernel install --sys-prefix`` (into this environment only).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"
KERNEL = "python3"


@pytest.fixture(scope="module")
def kernel_name() -> str:
    from jupyter_client.kernelspec import KernelSpecManager

    if KERNEL not in KernelSpecManager().find_kernel_specs():
        subprocess.run(
            [sys.executable, "-m", "ipykernel", "install", "--sys-prefix"],
            check=True,
            capture_output=True,
        )
    return KERNEL


def _text(cell: Any) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


def test_notebook_is_stored_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def test_notebook_runs_and_shows_the_story(kernel_name: str, tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=kernel_name,
        timeout=180,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code:
        assert not any(o.get("output_type") == "error" for o in cell.outputs), _text(cell)
    everything = "\n".join(_text(c) for c in code)
    assert "Nice to meet you, Alice!" in everything
    assert '{"age": "30", "name": "Alice"}' in everything  # tags in the memory section
    assert "From my memory:" in everything and "May 8" in everything  # recalled item used
    # thread-1's 4 messages (human, tool call, tool result, answer) outlived two restarts
    assert "thread-1 still holds 4 messages" in everything
    *_, tags_cell, forget_cell = code
    assert "tags: {'name': 'Alice', 'age': '30'}" in _text(tags_cell)
    assert "after forget: {}" in _text(forget_cell)
