"""``examples/postgres/app.py`` runs as written against a real PostgreSQL (issue 68 item 3):
memory across threads, and the erasure reaches the threads in PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg

ROOT = Path(__file__).parents[2]


def test_the_postgres_example_runs_and_erases_its_threads(
    postgres_url: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": postgres_url,
        "TIERED_MEMORY_HOME": str(tmp_path / "memory"),
        "TIERED_MEMORY_MODEL": "fake",  # the demo's scripted model: no model to load
    }
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "postgres" / "app.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert "30" in lines[1]  # the new thread's answer came from memory
    assert lines[-1] == "forgot alice: 2 threads"
    with psycopg.connect(postgres_url) as conn:
        left = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id LIKE 'alice-%'"
        ).fetchone()
    assert left == (0,)
