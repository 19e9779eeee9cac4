#!/usr/bin/env python3
"""The layering and file-graph check behind scripts/check-layers.sh (which says the rules).

Reads every `src/**/*.rs` under the root given (default: the repository), resolves the paths
each file names (`crate::…`, `super::…`, `self::…`, its child modules and the names its `use`
statements bind) to the file that defines the item, following `pub use` re-exports, and fails
on an upward import, a vendor module or a vendor tool (`nvidia-smi`, `nvcc`, …) named in the
pipeline, a process started outside the
pipeline, or files that import each other in a circle. Standard library only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# Allowed top-level modules per layer folder (besides the folder itself).
ALLOWED = {
    "model": {"model"},
    "profilers": {"model", "error", "profilers"},
    "results": {"model", "error", "results"},
    "pipeline": {"model", "error", "profilers", "results", "eval", "pipeline", "pipeline/runner"},
    "pipeline/runner": {"model", "error", "pipeline/runner"},
    "metal": {"model", "error", "results", "metal"},
    "eval": {"model", "error", "results", "eval"},
}
# Most specific first.
LAYERS = ["pipeline/runner", "model", "profilers", "results", "pipeline", "metal", "eval"]
VENDORS = ("ncu", "unitrace", "rocprofv3", "vtune", "metal")
# Vendor tools the pipeline must not run by name: a backend's capability or its vendor's device
# tool (`profilers::device_tool`) names them.
VENDOR_TOOLS = ("nvidia-smi", "nvcc", "rocm-smi", "amd-smi", "hipcc", "xpu-smi", "icpx")
VENDOR_TOOL_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*?\b(' + "|".join(re.escape(t) for t in VENDOR_TOOLS) + r')\b(?:[^"\\\n]|\\.)*"')

ITEM_KEYWORDS = r"(?:fn|struct|enum|trait|const|static|type|union|mod|macro_rules!)"
TOP_ITEM = re.compile(
    r"^(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe|extern\s+\"C\")\s+)*"
    r"(fn|struct|enum|trait|const|static|type|union|impl|macro_rules!)\s*([A-Za-z_][A-Za-z0-9_]*)?",
    re.M,
)
CHILD_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;", re.M)
USE_STMT = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]*);", re.M)
PATH = re.compile(r"(?<![A-Za-z0-9_:])([A-Za-z_][A-Za-z0-9_]*)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def strip_comments(text: str) -> str:
    """Line comments (docs too) and block comments out; strings are left alone."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand_use(tree: str) -> list[tuple[str, str]]:
    """`a::{b, c::{d as e, self}}` into [(binding, "a::b"), (binding, "a::c::d"), …]."""
    tree = re.sub(r"\s*(::|[{},])\s*", r"\1", re.sub(r"\s+", " ", tree.strip()))
    out: list[tuple[str, str]] = []

    def walk(prefix: str, text: str) -> None:
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(text):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        parts.append(text[start:])
        for part in filter(None, parts):
            brace = part.find("{")
            if brace >= 0 and part.endswith("}"):
                walk(prefix + part[:brace], part[brace + 1 : -1])
                continue
            alias = None
            if " as " in part:
                part, alias = (x.strip() for x in part.rsplit(" as ", 1))
            full = prefix + part
            if full.endswith("::self"):
                full = full[: -len("::self")]
            elif part == "self":
                full = prefix.rstrip(":")
            binding = alias or full.rsplit("::", 1)[-1]
            out.append((binding, full))

    walk("", tree)
    return out


INLINE_MOD = re.compile(r"\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{")


def inline_modules(text: str) -> list[tuple[int, int, str, bool]]:
    """The spans of `mod name { … }` blocks (a test module's `super::` is the file's module),
    and whether `#[cfg(test)]` precedes each."""
    spans = []
    for m in INLINE_MOD.finditer(text):
        test = bool(re.search(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?$", text[: m.start()]))
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        spans.append((m.end(), i, m.group(1), test))
    return spans


# Whether an item a module re-exports counts as an edge to the file that defines it. Off: an
# import lands on the file it names (a hub that only re-exports is then no node at all, as
# before); on, the profilers' settings and backends show as circles through `pub use`.
FOLLOW_REEXPORTS = False


class Tree:
    def __init__(self, root: Path):
        self.root = root
        self.src = root / "src"
        self.files = sorted(str(p.relative_to(root)) for p in self.src.rglob("*.rs"))
        self.text = {f: strip_comments((root / f).read_text(encoding="utf-8", errors="replace")) for f in self.files}
        self.module_file: dict[str, str] = {}
        for f in self.files:
            self.module_file[self.module_of(f)] = f
        self.defined = {f: self._defined(f) for f in self.files}
        self.reexports = {f: self._reexports(f) for f in self.files}

    @staticmethod
    def module_of(f: str) -> str:
        """`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `src/lib.rs` and `src/main.rs` are ``."""
        rel = f[len("src/") :][: -len(".rs")]
        if rel in ("lib", "main"):
            return ""
        if rel.endswith("/mod"):
            rel = rel[: -len("/mod")]
        return rel.replace("/", "::")

    def _defined(self, f: str) -> set[str]:
        """Names of the items a file defines at its top level (rustfmt puts them at column 0)."""
        names = set()
        for m in TOP_ITEM.finditer(self.text[f]):
            if m.group(1) != "impl" and m.group(2):
                names.add(m.group(2))
            elif m.group(1) == "impl":
                names.add("<impl>")
        for m in CHILD_MOD.finditer(self.text[f]):
            names.discard(m.group(1))
        return names

    def is_hub(self, f: str) -> bool:
        """A file that only declares modules and re-exports: not a node of the graph."""
        return not self.defined[f]

    def _reexports(self, f: str) -> dict[str, str]:
        """`pub use` bindings of a file: name -> absolute path (`*` entries keyed `*n`)."""
        out = {}
        module = self.module_of(f)
        for n, m in enumerate(USE_STMT.finditer(self.text[f])):
            if not m.group(1):
                continue
            for binding, path in expand_use(m.group(2)):
                absolute = self.absolute(path, module, f)
                if absolute is None:
                    continue
                out[f"*{n}" if binding == "*" else binding] = absolute.rsplit("::*", 1)[0] if binding == "*" else absolute
        return out

    def children(self, f: str) -> set[str]:
        return {m.group(1) for m in CHILD_MOD.finditer(self.text[f])}

    def absolute(self, path: str, module: str, f: str) -> str | None:
        """`crate::…`, `super::…`, `self::…` or `child::…` as `crate::…`; None for other crates."""
        parts = path.split("::")
        here = module.split("::") if module else []
        if parts[0] == "crate":
            return path
        if parts[0] in ("self", "super"):
            while parts and parts[0] in ("self", "super"):
                if parts.pop(0) == "super":
                    here = here[:-1]
            return "::".join(["crate", *here, *parts])
        if parts[0] in self.children(f):
            return "::".join(["crate", *here, *parts])
        return None

    def resolve(self, path: str, seen: frozenset = frozenset()) -> str | None:
        """The file that defines what `crate::a::b::Item` names, through re-exports; None when
        it names only a module, or an item of a hub that is not found."""
        if path in seen:
            return None
        seen = seen | {path}
        segs = path.split("::")[1:]
        best, rest = "src/lib.rs", segs
        for i in range(1, len(segs) + 1):
            module = "::".join(segs[:i])
            if module in self.module_file:
                best, rest = self.module_file[module], segs[i:]
            else:
                break
        if best not in self.defined:
            return None
        if not rest:
            return None  # a module itself: its uses (`module::item`) are resolved where they are
        item = rest[0]
        if item in self.defined[best] or not FOLLOW_REEXPORTS:
            return best
        target = self.reexports[best].get(item)
        if target is not None:
            return self.resolve("::".join([target, *rest[1:]]), seen)
        for key, target in self.reexports[best].items():
            if key.startswith("*"):
                found = self.resolve("::".join([target, *rest]), seen)
                if found:
                    return found
        return None if self.is_hub(best) else best

    def imports(self, f: str) -> list[tuple[str, bool, bool]]:
        """Every absolute `crate::…` path a file names, whether only its tests do, and whether
        it is a `pub use` re-export (which passes through: no edge of the file graph)."""
        text = self.text[f]
        spans = inline_modules(text)

        def module_at(offset: int) -> str:
            inner = [name for start, end, name, _ in spans if start <= offset < end]
            return "::".join(filter(None, [self.module_of(f), *inner]))

        def in_test(offset: int) -> bool:
            return any(test and start <= offset < end for start, end, _, test in spans)

        bindings: dict[str, str] = {}
        paths: list[str] = []
        for m in USE_STMT.finditer(text):
            module = module_at(m.start())
            for binding, path in expand_use(m.group(2)):
                absolute = self.absolute(path, module, f)
                if absolute is None:
                    continue
                if binding != "*":
                    bindings[binding] = absolute
                paths.append((absolute, in_test(m.start()), bool(m.group(1))))
        body = USE_STMT.sub(lambda m: " " * len(m.group(0)), text)
        for m in PATH.finditer(body):
            head, tail = m.group(1), m.group(2)
            module = module_at(m.start())
            if head in ("crate", "self", "super") or head in self.children(f):
                absolute = self.absolute(head + tail, module, f)
            elif head in bindings:
                absolute = bindings[head] + tail
            else:
                continue
            if absolute:
                paths.append((absolute, in_test(m.start()), False))
        return paths


def is_ancestor(tree: Tree, target: str, f: str) -> bool:
    """Whether `target` is the file of a module `f` lies in (a child using its parent's items:
    in Rust a module's facade and its children are one unit)."""
    module, own = tree.module_of(target), tree.module_of(f)
    return target != "src/main.rs" and (module == "" or own.startswith(module + "::"))


def layer_of(f: str) -> str | None:
    for layer in LAYERS:
        if f.startswith(f"src/{layer}/"):
            return layer
    return None


def top_of(path: str) -> str:
    top = path.split("::")[1] if "::" in path else path
    if top == "pipeline" and path.startswith("crate::pipeline::runner"):
        return "pipeline/runner"
    return top


def check(root: Path) -> list[str]:
    tree = Tree(root)
    problems: list[str] = []
    edges: dict[str, list[str]] = {}
    for f in tree.files:
        layer = layer_of(f)
        targets: list[str] = []
        for path, test_only, reexport in dict.fromkeys(tree.imports(f)):
            if layer and top_of(path) not in ALLOWED[layer]:
                problems.append(
                    f"{f}: layer `{layer}` must not import `{path}` (allowed: {' '.join(sorted(ALLOWED[layer]))})"
                )
            if f.startswith("src/pipeline/") and not test_only:
                parts = path.split("::")
                if len(parts) > 2 and parts[1] == "profilers" and parts[2] in VENDORS:
                    problems.append(
                        f"{f}: the pipeline names the vendor backend `{path}` (ask the registry for the capability instead)"
                    )
            target = tree.resolve(path)
            if (
                target
                and not test_only
                and not reexport
                and target != f
                and not tree.is_hub(target)
                and not is_ancestor(tree, target, f)
                and target not in targets
            ):
                targets.append(target)
        edges[f] = targets

    # The pipeline runs no vendor tool by name (outside its tests).
    for f in tree.files:
        if not f.startswith("src/pipeline/"):
            continue
        text = strip_comments(tree.text[f])
        spans = inline_modules(text)
        for m in VENDOR_TOOL_LITERAL.finditer(text):
            if any(test and start <= m.start() < end for start, end, _, test in spans):
                continue
            line = text.count("\n", 0, m.start()) + 1
            problems.append(
                f"{f}:{line}: the pipeline names the vendor tool `{m.group(1)}` (a capability or "
                "the vendor's device tool in src/profilers/ names it)"
            )

    # Processes start only in the pipeline (the supervised runner and the probe runner).
    for f in tree.files:
        if f.startswith("src/pipeline/"):
            continue
        for n, line in enumerate(tree.text[f].splitlines(), 1):
            if re.search(r"Command::new|duct::|process::Command", line):
                problems.append(f"process start outside src/pipeline/: {f}:{n}: {line.strip()}")

    # Depth-first search for circles in the file graph (white/grey/black colouring).
    colour: dict[str, str] = {}
    stack: list[str] = []
    sys.setrecursionlimit(10000)

    def visit(node: str) -> None:
        colour[node] = "grey"
        stack.append(node)
        for nxt in edges.get(node, []):
            state = colour.get(nxt, "white")
            if state == "grey":
                cycle = stack[stack.index(nxt) :] + [nxt]
                problems.append("file circle: " + " → ".join(cycle))
            elif state == "white":
                visit(nxt)
        stack.pop()
        colour[node] = "black"

    for f in tree.files:
        if colour.get(f, "white") == "white":
            visit(f)
    return problems, len(tree.files)


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    if not (root / "src").is_dir():
        print(f"check-layers: {root} has no src/ folder", file=sys.stderr)
        return 2
    problems, count = check(root)
    for p in problems:
        print(f"check-layers: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"check-layers: {count} files, layering and file graph clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
