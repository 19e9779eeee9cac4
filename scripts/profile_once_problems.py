#!/usr/bin/env python3
"""The profile-once batch: PROBLEMS problems x CANDIDATES candidates as small CUDA C++ programs.

    scripts/profile_once_problems.py OUTDIR [--problems 10] [--candidates 20]
        [--elements 8388608] [--margin 0.5] [--audit-share 0.05] [--preset NAME]
        [--timeout 120] [--baseline-parts 1]

Each problem is an elementwise, stencil or row-reduction op over --elements floats. Its
reference kernel lives in the problem's own translation unit (ref.cu -> ref.o, compiled once
and linked into every candidate), so every candidate loads the same reference module: the
same kernel image, the same fingerprint, as a library kernel shared by generated candidates.
Each candidate (cNN.cu) is one of four kernel variants with host details of its own (it
launches its kernel 3 to 6 times; names and messages differ): candidates of one variant share
their device code byte for byte.

    v0 plain        one thread per output, 256 per block               correct
    v1 grid-stride  4 blocks per SM, a grid-stride loop                correct
    v2 wrong        an off-by-one bound or a scaled result             fails the check (exit 1)
    v3 one-block    the whole array on one warp (<<<1, 32>>>), or on   correct, far slower
                    one thread for a row op

8 + 5 + 4 + 3 of every 20: 35 % fail the check or are far slower. A program fills its inputs,
runs the reference, runs its kernel, compares the two on the GPU and exits 1 on a mismatch.

Writes into OUTDIR:
    pNN_<op>/ref.cu, pNN_<op>/cMM.cu     the sources (ref.o, cMM.cu.bin once built)
    build.sh CANDIDATE.cu                 nvcc -O2 -arch=$ARCH (sm_90a): ref.o, then the binary
                                          unless it is newer than its sources (the compile stage)
    jobs.toml                             the problems with stages compile, check, time, profile
                                          (ncu, profile_cache into OUTDIR/cache), margin --margin
    jobs-baseline.toml                    the same without profile_cache and without the check
                                          ("ncu every candidate" with polyprof batch --all-stages)
    jobs-baseline-K.toml                  with --baseline-parts N > 1: the baseline's problems in
                                          N files, to run in calls of a bounded length
    manifest.json                         each candidate's variant, launches and expected result

Only the standard library: runs anywhere (the sources are checked with a C++ compiler where
one is present, without CUDA, by scripts/gpu-profile-once.sh's callers and the tests).
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

# Each op: the value of output `i` (elementwise, stencil) or row `i` of 64 (row ops), as a
# device function of x, y, i, n; `outputs` maps n to the number of outputs.
OPS = [
    ("saxpy", "elementwise", "return 2.5f * x[i] + y[i];"),
    ("relu_add", "elementwise", "return fmaxf(x[i] + y[i], 0.0f);"),
    ("scale_shift", "elementwise", "return x[i] * 1.5f - 0.25f;"),
    ("square_diff", "elementwise", "float d = x[i] - y[i];\n  return d * d;"),
    ("clamp_mul", "elementwise", "return fminf(fmaxf(x[i] * y[i], -0.5f), 0.5f);"),
    (
        "stencil3",
        "stencil",
        "float l = i > 0 ? x[i - 1] : 0.0f, r = i + 1 < n ? x[i + 1] : 0.0f;\n"
        "  return (l + x[i] + r) * (1.0f / 3.0f);",
    ),
    (
        "stencil5",
        "stencil",
        "float s = 6.0f * x[i];\n"
        "  s += 4.0f * ((i > 0 ? x[i - 1] : 0.0f) + (i + 1 < n ? x[i + 1] : 0.0f));\n"
        "  s += (i > 1 ? x[i - 2] : 0.0f) + (i + 2 < n ? x[i + 2] : 0.0f);\n"
        "  return s * (1.0f / 16.0f);",
    ),
    (
        "rowsum64",
        "rows",
        "float s = 0.0f;\n  for (int j = 0; j < 64; ++j) s += x[i * 64 + j];\n  return s;",
    ),
    (
        "rowmax64",
        "rows",
        "float m = x[i * 64];\n  for (int j = 1; j < 64; ++j) m = fmaxf(m, x[i * 64 + j]);\n  return m;",
    ),
    (
        "rowdot64",
        "rows",
        "float s = 0.0f;\n  for (int j = 0; j < 64; ++j) s += x[i * 64 + j] * y[i * 64 + j];\n  return s;",
    ),
]

# Variants and how many of every 20 candidates take each.
VARIANTS = [("v0", 8), ("v1", 5), ("v2", 4), ("v3", 3)]
EXPECT = {"v0": "ok", "v1": "ok", "v2": "incorrect", "v3": "slow"}


def value_function(kind, body):
    return (
        "__device__ __forceinline__ float op_value(const float* __restrict__ x,\n"
        "                                          const float* __restrict__ y, int i, int n) {\n"
        f"  (void)y;\n  (void)n;\n  {body}\n}}\n"
    )


def outputs_expr(kind):
    return "n / 64" if kind == "rows" else "n"


REF = """// Problem {pid}: {op} ({kind}) over n floats. The reference, the input fill and the GPU
// comparison: one translation unit, compiled once (ref.o) and linked into every candidate, so
// every candidate loads this same module.
#include <cuda_runtime.h>
#include <math.h>

{value}
__global__ void fill_inputs(float* x, float* y, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    unsigned h = (unsigned)i * 2654435761u + {seed}u;
    x[i] = (float)(h % 2001u) / 1000.0f - 1.0f;
    y[i] = (float)((h >> 11) % 2001u) / 1000.0f - 1.0f;
  }}
}}

__global__ void reference_{op}(const float* __restrict__ x, const float* __restrict__ y,
                               float* __restrict__ out, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < {outputs}) out[i] = op_value(x, y, i, n);
}}

__global__ void count_mismatches(const float* want, const float* got, int m, float tol,
                                 unsigned long long* bad) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) {{
    float w = want[i], g = got[i];
    if (!(fabsf(w - g) <= tol * (1.0f + fabsf(w)))) atomicAdd(bad, 1ull);
  }}
}}

extern "C" int problem_outputs(int n) {{ return {outputs}; }}

extern "C" void problem_fill(float* x, float* y, int n) {{
  fill_inputs<<<(n + 255) / 256, 256>>>(x, y, n);
}}

extern "C" void problem_reference(const float* x, const float* y, float* out, int n) {{
  reference_{op}<<<({outputs} + 255) / 256, 256>>>(x, y, out, n);
}}

// Outputs of `got` that differ from `want` (NaN counts), or -1 when CUDA failed.
extern "C" long long problem_compare(const float* want, const float* got, int m) {{
  unsigned long long* bad = nullptr;
  unsigned long long count = 0;
  if (cudaMalloc(&bad, sizeof *bad) != cudaSuccess) return -1;
  cudaMemset(bad, 0, sizeof *bad);
  count_mismatches<<<(m + 255) / 256, 256>>>(want, got, m, 1e-4f, bad);
  cudaError_t e = cudaMemcpy(&count, bad, sizeof count, cudaMemcpyDeviceToHost);
  cudaFree(bad);
  return e == cudaSuccess ? (long long)count : -1;
}}
"""

# The candidate's kernel per variant: its body and its launch (grid, block).
KERNELS = {
    "v0": (
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < m) out[i] = op_value(x, y, i, n);\n",
        "(m + 255) / 256, 256",
    ),
    "v1": (
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x)\n"
        "    out[i] = op_value(x, y, i, n);\n",
        "132 * 4, 256",
    ),
    # The wrong ones: an off-by-one bound (the last output is never written) or a result off
    # by 0.1 %, beyond the comparison's 1e-4.
    "v2-bound": (
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < m - 1) out[i] = op_value(x, y, i, n);\n",
        "(m + 255) / 256, 256",
    ),
    "v2-scale": (
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < m) out[i] = op_value(x, y, i, n) * 1.001f + 1e-3f;\n",
        "(m + 255) / 256, 256",
    ),
    # One block for the whole array, one output at a time per thread (no unrolling: each
    # iteration waits for its loads): one warp for an elementwise or stencil op, one thread for
    # a row op (whose 64 loads a row are in flight at once), some hundred times slower than v0
    # and a few hundred ms per launch over 8M floats: well past the margin in wall time.
    "v3": (
        "  #pragma unroll 1\n"
        "  for (int i = threadIdx.x; i < m; i += blockDim.x) out[i] = op_value(x, y, i, n);\n",
        "1, 32",
    ),
}

# The launch of v3 for a row op.
V3_ROWS_LAUNCH = "1, 1"

CANDIDATE = """// Problem {pid}, candidate {cid}: variant {variant}, {launches} launches of its kernel.
// Generated by scripts/profile_once_problems.py: the device part is its variant's, byte for
// byte; the host part is this candidate's own.
#include <cstdio>
#include <cuda_runtime.h>

{value}
__global__ void candidate_{op}_{variant_name}(const float* __restrict__ x,
                                   const float* __restrict__ y, float* __restrict__ out,
                                   int n, int m) {{
{body}}}

extern "C" int problem_outputs(int n);
extern "C" void problem_fill(float* x, float* y, int n);
extern "C" void problem_reference(const float* x, const float* y, float* out, int n);
extern "C" long long problem_compare(const float* want, const float* got, int m);

#define CHECK_CUDA(call)                                                                   \\
  do {{                                                                                    \\
    cudaError_t e_ = (call);                                                               \\
    if (e_ != cudaSuccess) {{                                                              \\
      std::fprintf(stderr, "{cid}: %s failed: %s\\n", #call, cudaGetErrorString(e_));     \\
      return 2;                                                                            \\
    }}                                                                                     \\
  }} while (0)

int main() {{
  const int n = {elements};
  const int m = problem_outputs(n);
  const int {launch_var} = {launches};
  float *x = nullptr, *y = nullptr, *want = nullptr, *got = nullptr;
  CHECK_CUDA(cudaMalloc(&x, sizeof(float) * n));
  CHECK_CUDA(cudaMalloc(&y, sizeof(float) * n));
  CHECK_CUDA(cudaMalloc(&want, sizeof(float) * m));
  CHECK_CUDA(cudaMalloc(&got, sizeof(float) * m));
  // NaN everywhere: an output the kernel never writes fails the comparison.
  CHECK_CUDA(cudaMemset(got, 0xff, sizeof(float) * m));
  problem_fill(x, y, n);
  problem_reference(x, y, want, n);
  for (int r = 0; r < {launch_var}; ++r)
    candidate_{op}_{variant_name}<<<{launch}>>>(x, y, got, n, m);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  long long bad = problem_compare(want, got, m);
  std::printf("{cid} ({variant}): %d launches, %lld of %d outputs differ from the reference\\n",
              {launch_var}, bad, m);
  cudaFree(x);
  cudaFree(y);
  cudaFree(want);
  cudaFree(got);
  return bad == 0 ? 0 : 1;
}}
"""

BUILD = """#!/bin/sh
# build.sh CANDIDATE.cu: its problem's ref.o (once) and CANDIDATE.cu.bin, each unless newer
# than its source (the batch's compile stage, after gpu-profile-once.sh built them all in
# parallel ahead). NVCC (default nvcc) and ARCH (default sm_90a) from the environment.
set -eu
cand=$1
dir=$(dirname "$cand")
nvcc=${NVCC:-nvcc}
arch=${ARCH:-sm_90a}
if [ ! -f "$dir/ref.o" ] || [ "$dir/ref.cu" -nt "$dir/ref.o" ]; then
  # A temporary name and a rename: parallel builds of one problem never link a half-written ref.o.
  "$nvcc" -O2 -arch="$arch" -c -o "$dir/ref.o.$$" "$dir/ref.cu"
  mv -f "$dir/ref.o.$$" "$dir/ref.o"
fi
if [ ! -x "$cand.bin" ] || [ "$cand" -nt "$cand.bin" ] || [ "$dir/ref.o" -nt "$cand.bin" ]; then
  "$nvcc" -O2 -arch="$arch" -o "$cand.bin.$$" "$cand" "$dir/ref.o"
  mv -f "$cand.bin.$$" "$cand.bin"
fi
"""


# Enough of CUDA for a host C++ compiler to check the generated sources' syntax and types
# where no nvcc is (the launches' <<<grid, block>>> are taken out before).
CUDA_STUB = """#pragma once
#include <cmath>
#include <cstddef>
#define __global__
#define __device__
#define __forceinline__ inline
struct dim3 { unsigned x, y, z; };
extern dim3 blockIdx, blockDim, threadIdx, gridDim;
enum cudaError_t { cudaSuccess = 0 };
enum cudaMemcpyKind { cudaMemcpyDeviceToHost = 2 };
template <class T> cudaError_t cudaMalloc(T** p, size_t bytes);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaFree(void* p);
cudaError_t cudaGetLastError();
cudaError_t cudaDeviceSynchronize();
const char* cudaGetErrorString(cudaError_t e);
unsigned long long atomicAdd(unsigned long long* p, unsigned long long v);
using std::fabs; using std::fmax; using std::fmin;
inline float fabsf(float v) { return std::fabs(v); }
inline float fmaxf(float a, float b) { return std::fmax(a, b); }
inline float fminf(float a, float b) { return std::fmin(a, b); }
"""


def check_syntax(out, manifest, compiler):
    """Each problem's ref.cu and one candidate of each variant through `compiler
    -fsyntax-only` with CUDA_STUB; the number of files checked (exits on the first error)."""
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "cuda_runtime.h"), "w") as f:
            f.write(CUDA_STUB)
        seen = set()
        files = []
        for m in manifest:
            pdir = os.path.join(out, m["problem"])
            if m["problem"] not in seen:
                seen.add(m["problem"])
                files.append(os.path.join(pdir, "ref.cu"))
            if (m["problem"], m["variant"]) not in seen:
                seen.add((m["problem"], m["variant"]))
                files.append(os.path.join(pdir, m["candidate"] + ".cu"))
        for path in files:
            text = re.sub(r"<<<[^>]*>>>", "", open(path).read())
            text = text.replace('extern "C" ', "")
            host = os.path.join(tmp, "check.cpp")
            with open(host, "w") as f:
                f.write(text)
            done = subprocess.run(
                [compiler, "-std=c++17", "-fsyntax-only", "-Wall", "-Wno-unknown-pragmas",
                 "-Werror", "-I", tmp, host], capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{path}: does not compile as host C++ with the CUDA stub:\n{done.stderr}")
            checked += 1
    return checked


def toml_str(text):
    return json.dumps(text)  # a JSON string is a valid TOML basic string


def toml_list(words):
    return "[" + ", ".join(toml_str(w) for w in words) + "]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--problems", type=int, default=10)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--elements", type=int, default=8 << 20)
    parser.add_argument("--margin", type=float, default=0.5)
    parser.add_argument("--audit-share", type=float, default=0.05)
    parser.add_argument("--preset", default=None, help="ncu preset of the profile stage")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--baseline-parts", type=int, default=1,
                        help="also split the baseline's problems into this many job files "
                             "jobs-baseline-K.toml, to run in calls of a bounded length")
    parser.add_argument("--check-syntax", action="store_true",
                        help="check the sources with a host C++ compiler (c++, g++ or clang++) "
                             "and a CUDA stub, for a machine without nvcc")
    args = parser.parse_args()
    if not 1 <= args.problems <= len(OPS):
        sys.exit(f"--problems: 1 to {len(OPS)}")
    if args.candidates < 1 or args.elements < 1024 or args.elements % 64:
        sys.exit("--candidates 1 or more; --elements at least 1024, a multiple of 64")

    out = os.path.abspath(args.outdir)
    os.makedirs(out, exist_ok=True)
    build = os.path.join(out, "build.sh")
    with open(build, "w") as f:
        f.write(BUILD)
    os.chmod(build, 0o755)

    manifest = []
    tables = {"jobs.toml": [], "jobs-baseline.toml": []}
    parts = max(1, min(args.baseline_parts, args.problems))
    if parts > 1:
        tables.update({f"jobs-baseline-{k + 1}.toml": [] for k in range(parts)})
    for p in range(args.problems):
        op, kind, body = OPS[p]
        pid = f"p{p:02d}_{op}"
        pdir = os.path.join(out, pid)
        os.makedirs(pdir, exist_ok=True)
        value = value_function(kind, body)
        with open(os.path.join(pdir, "ref.cu"), "w") as f:
            f.write(REF.format(pid=pid, op=op, kind=kind, value=value,
                               outputs=outputs_expr(kind), seed=1009 * (p + 1)))
        # Every 20 candidates: 8 v0, 5 v1, 4 v2, 3 v3, in an order of the problem's own.
        pool = [v for v, k in VARIANTS for _ in range(k)]
        rng = random.Random(p)
        # Spread over the pool so that any number of candidates keeps the proportions.
        variants = [pool[int((i + 0.5) * len(pool) / args.candidates)]
                    for i in range(args.candidates)]
        rng.shuffle(variants)
        # The wrong variant of a problem: one bug for all its wrong candidates.
        wrong = "v2-bound" if p % 2 == 0 else "v2-scale"
        paths = []
        for c, variant in enumerate(variants):
            cid = f"c{c:02d}"
            launches = 3 + rng.randrange(4)
            key = wrong if variant == "v2" else variant
            kernel, launch = KERNELS[key]
            if key == "v3" and kind == "rows":
                launch = V3_ROWS_LAUNCH
            path = os.path.join(pdir, f"{cid}.cu")
            with open(path, "w") as f:
                f.write(CANDIDATE.format(
                    pid=pid, cid=cid, variant=variant, launches=launches, value=value,
                    op=op, variant_name=variant, body=kernel, launch=launch,
                    elements=args.elements,
                    # A host detail of the candidate's own (the device code is the variant's).
                    launch_var=f"launches_{cid}"))
            paths.append(path)
            manifest.append({"problem": pid, "candidate": cid, "variant": variant,
                             "bug": key if variant == "v2" else None, "launches": launches,
                             "expect": EXPECT[variant]})
        part = f"jobs-baseline-{p * parts // args.problems + 1}.toml"
        for name, lines in tables.items():
            if name.startswith("jobs-baseline-") and name != part:
                continue
            # The baseline runs every stage of every candidate (--all-stages) but the check: its
            # figure is the time and profile stages, and (a)'s check verdicts are judged
            # against the generated ones.
            stages = ["compile", "check", "time", "profile"]
            if name != "jobs.toml":
                stages.remove("check")
            lines += [
                "[[problem]]",
                f"id = {toml_str(pid)}",
                f"target = {toml_list(['{candidate}.bin'])}",
                f"candidates = {toml_list(paths)}",
                f"stages = {toml_list(stages)}",
                f"compile = {toml_list(['sh', build, '{candidate}'])}",
                *([f"check = {toml_list(['{candidate}.bin'])}"] if "check" in stages else []),
                'profiler = "ncu"',
                f"profile = {{ margin = {args.margin} }}",
                f"timeout_s = {args.timeout}",
            ]
            if args.preset:
                lines.append(f"ncu = {{ preset = {{ kind = {toml_str(args.preset)} }} }}")
            if name == "jobs.toml":
                lines.append(
                    f"profile_cache = {{ dir = {toml_str(os.path.join(out, 'cache'))}, "
                    f"audit_share = {args.audit_share} }}")
            lines.append("")
    for name, lines in tables.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(f"# Generated by scripts/profile_once_problems.py ({args.problems} problems x "
                    f"{args.candidates} candidates, {args.elements} floats).\n\n")
            f.write("\n".join(lines))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"elements": args.elements, "margin": args.margin,
                   "audit_share": args.audit_share, "candidates": manifest}, f, indent=1)
    if args.check_syntax:
        compiler = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
        if compiler is None:
            sys.exit("--check-syntax: no c++, g++ or clang++ on PATH")
        n = check_syntax(out, manifest, compiler)
        print(f"{n} sources (each ref.cu, one candidate per variant) pass {compiler} -fsyntax-only")
    bad = sum(1 for m in manifest if m["expect"] != "ok")
    print(f"{out}: {args.problems} problems x {args.candidates} candidates, "
          f"{bad} of {len(manifest)} fail the check or are far slower")


if __name__ == "__main__":
    main()
