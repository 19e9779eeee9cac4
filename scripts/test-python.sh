#!/usr/bin/env bash
# The Python binding's tests: build the abi3 wheel once, install it into a fresh virtual
# environment for each CPython version found (the machine's python3, plus 3.9 and 3.13 from pyenv
# when present: abi3 means one wheel for all of them) and run python/tests with pytest there.
# numpy is installed too: the eval worker's tests (test_eval_worker.py) run numpy problems.
set -euo pipefail
cd "$(dirname "$0")/.."
work=target/python-tests
rm -rf "$work/wheels"
mkdir -p "$work"
wheel=$(python/build-wheel.sh "$work/wheels" | tail -1)
# Its metadata, licenses and stripped executables; nothing left staged for `pip install ./python`.
python3 scripts/check-wheel.py "$wheel"
[[ ! -e python/polyprof/bin ]] || { echo "python/polyprof/bin was left behind by build-wheel.sh" >&2; exit 1; }
interpreters=(python3)
for version in 3.9 3.13; do
  found=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python"$version" 2>/dev/null | tail -1 || true)
  [[ -n "$found" ]] && interpreters+=("$found")
done
for py in "${interpreters[@]}"; do
  name=$("$py" -c 'import sys; print("py%d%d" % sys.version_info[:2])')
  venv="$work/$name"
  [[ -x "$venv/bin/python" ]] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  "$venv/bin/python" -m pip install -q pytest numpy billiard llnl-hatchet pandas 2>/dev/null ||
    "$venv/bin/python" -m pip install -q pytest numpy 2>/dev/null ||
    "$venv/bin/python" -m pip install -q pytest ||
    { echo "note: cannot install pytest for $name; skipping it" >&2; continue; }
  "$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
  echo "== Python binding tests on $("$venv/bin/python" --version)"
  # From outside python/, so `import polyprof` is the installed wheel, not the source folder.
  (cd "$work" && "$name/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests")
done
