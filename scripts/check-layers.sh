#!/usr/bin/env bash
# Fails when an import breaks the layering, or when files import each other in a circle.
#
#   model/                 imports no other polyprof module
#   profilers/  results/   model only (side by side: never each other, never pipeline or cli)
#   pipeline/              model, profilers, results (never cli); pipeline/runner/ model only;
#                          pipeline/batch/ no vendor backend's own module
#   metal/                 model and results (the lanes return KernelBenchmark, record into the session)
#   eval/                  model and results: the audit is pure and knows no vendor (its harness
#                          is pipeline/eval/)
#   cli/, lib.rs, main.rs  anything
#
# Processes are started only under src/pipeline/ (`Command::new`, `process::Command`, `duct::`).
#
# `crate::error` is the model's error re-exported at the root, so it counts as model.
# Imports are read from `crate::…` and `super::…` paths (comments skipped); a circle is found
# by a depth-first walk over the file graph those paths give.
set -euo pipefail
cd "$(dirname "$0")/.."

failed=0
say() { echo "check-layers: $*" >&2; failed=1; }

# Allowed top-level modules per layer folder (besides the folder itself).
declare -A allowed=(
    [model]="model"
    [profilers]="model error profilers"
    [results]="model error results"
    [pipeline]="model error profilers results eval pipeline pipeline/runner"
    [pipeline/runner]="model error pipeline/runner"
    [metal]="model error results metal"
    [eval]="model error results eval"
)

# The module path a file defines: src/a/b.rs and src/a/b/mod.rs are both `a::b`.
module_of() {
    local f=${1#src/}
    f=${f%.rs}
    f=${f%/mod}
    echo "${f//\//::}"
}

# Every `crate::x::y` path a file names, with `super::` resolved. Groups (`{a, b::c}`) are
# expanded one level, which is enough for this code base's style.
imports_of() {
    local file=$1 module parent
    module=$(module_of "$file")
    parent=${module%::*}
    [[ $parent == "$module" ]] && parent=""
    grep -v '^\s*//' "$file" |
        grep -oE '(crate|super)::[A-Za-z0-9_:]*(\{[^}]*\})?' |
        while read -r path; do
            if [[ $path == super::* ]]; then
                path="crate::${parent:+$parent::}${path#super::}"
            fi
            if [[ $path == *"{"* ]]; then
                local head=${path%%\{*} items=${path#*\{}
                items=${items%\}}
                IFS=',' read -ra parts <<<"$items"
                for part in "${parts[@]}"; do
                    part=$(echo "$part" | tr -d ' ')
                    [[ -z $part || $part == self ]] && { echo "${head%::}"; continue; }
                    echo "$head$part"
                done
            else
                echo "$path"
            fi
        done
}

# The source file a `crate::a::b::Item` path lands in: the longest prefix that is a file.
file_of() {
    local rest=${1#crate::} best="" prefix=""
    IFS=':' read -ra segs <<<"${rest//::/:}"
    for seg in "${segs[@]}"; do
        prefix=${prefix:+$prefix/}$seg
        if [[ -f src/$prefix.rs ]]; then
            best=src/$prefix.rs
        elif [[ -f src/$prefix/mod.rs ]]; then
            best=src/$prefix/mod.rs
        else
            break
        fi
    done
    echo "$best"
}

declare -A edges=()
mapfile -t files < <(find src -name '*.rs' | sort)
for file in "${files[@]}"; do
    layer=""
    for candidate in pipeline/runner model profilers results pipeline metal eval; do
        if [[ $file == src/$candidate/* ]]; then
            layer=$candidate
            break
        fi
    done
    targets=""
    while read -r path; do
        [[ -z $path ]] && continue
        target=$(file_of "$path")
        if [[ -n $layer ]]; then
            top=${path#crate::}
            top=${top%%::*}
            [[ $top == pipeline && $path == crate::pipeline::runner* ]] && top=pipeline/runner
            ok=0
            for a in ${allowed[$layer]}; do
                [[ $top == "$a" ]] && ok=1
            done
            if [[ $ok == 0 ]]; then
                say "$file: layer \`$layer\` must not import \`$path\` (allowed: ${allowed[$layer]})"
            fi
        fi
        # Module re-export hubs (mod.rs, lib.rs) are not circle members: they only gather.
        if [[ -n $target && $target != "$file" && $target != */mod.rs && $target != src/lib.rs &&
            " $targets " != *" $target "* ]]; then
            targets+=" $target"
        fi
    done < <(imports_of "$file" | sort -u)
    edges[$file]=$targets
done

# A batch knows no vendor: backend settings reach it through the registry's settings type
# (profilers/settings.rs), never a backend's own module.
while IFS= read -r hit; do
    say "src/pipeline/batch/ names a vendor backend's module: $hit"
done < <(grep -rnE 'profilers::(ncu|unitrace|rocprofv3|vtune|metal)\b' src/pipeline/batch --include='*.rs' |
    grep -vE '^[^:]+:[0-9]+:\s*//' || true)

# Processes start only in the pipeline (the supervised runner and the probe runner).
while IFS= read -r hit; do
    say "process start outside src/pipeline/: $hit"
done < <(grep -rnE 'Command::new|duct::|process::Command' src --include='*.rs' | grep -v '^src/pipeline/' || true)

# Depth-first search for a cycle in the file graph (white/grey/black colouring).
declare -A colour=()
stack=()
visit() {
    local node=$1 next
    colour[$node]=grey
    stack+=("$node")
    for next in ${edges[$node]:-}; do
        case ${colour[$next]:-white} in
            grey)
                local cycle="" seen=0 n
                for n in "${stack[@]}"; do
                    [[ $n == "$next" ]] && seen=1
                    [[ $seen == 1 ]] && cycle+="$n → "
                done
                say "file circle: ${cycle}$next"
                ;;
            white) visit "$next" ;;
        esac
    done
    unset 'stack[${#stack[@]}-1]'
    colour[$node]=black
}
for file in "${files[@]}"; do
    [[ ${colour[$file]:-white} == white ]] && visit "$file"
done

if [[ $failed == 0 ]]; then
    echo "check-layers: ${#files[@]} files, layering and file graph clean"
fi
exit "$failed"
