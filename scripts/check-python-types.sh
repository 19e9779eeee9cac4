#!/usr/bin/env bash
# The Python package and its typed example under `mypy --strict` (settings in python/pyproject.toml,
# [tool.mypy]), and a misspelt attribute of a result must be a type error: result attributes
# are declared, not `Any` through `__getattr__`. mypy lives in a virtual environment of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
tools="${CARGO_TARGET_DIR:-target}/tmp/typing-venv"
[[ -x "$tools/bin/mypy" ]] || { python3 -m venv "$tools" && "$tools/bin/python" -m pip install -q mypy; }
mypy="$(cd "$tools/bin" && pwd)/mypy"
cd python
"$mypy"
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
printf 'import polyprof\nrun = polyprof.load("runs/x")\nprint(run.kernals)\n' > "$probe_dir/misspelt.py"
if out=$("$mypy" --strict "$probe_dir/misspelt.py" 2>&1); then
  echo "check-python-types: a misspelt attribute (run.kernals) passed mypy --strict" >&2
  exit 1
fi
grep -q 'has no attribute "kernals"' <<<"$out" || { echo "$out" >&2; exit 1; }
# A misspelt option of profile() is a type error too (typed **options: TypedDict + Unpack).
printf 'import polyprof\nrun = polyprof.profile(["true"], timout=5)\n' > "$probe_dir/option.py"
if out=$("$mypy" --strict "$probe_dir/option.py" 2>&1); then
  echo "check-python-types: a misspelt option (timout=5) passed mypy --strict" >&2
  exit 1
fi
grep -q '"timout"' <<<"$out" || { echo "$out" >&2; exit 1; }
printf 'import polyprof\nrun = polyprof.profile(["true"], timeout=5, env={"A": "1"})\nerrors: list[polyprof.RunError] = run.errors\n' > "$probe_dir/typed.py"
"$mypy" --strict "$probe_dir/typed.py"
echo "check-python-types: mypy --strict clean; a misspelt attribute or option is a type error"
