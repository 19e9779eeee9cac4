"""Capture the scored pass's GPU timeline of one candidate on a CUDA machine, as `polyprof eval`
drives it: the real eval worker (src/pipeline/eval/harness/polyprof_eval_worker.py) runs the
candidate under polyprof's CUPTI tracer (src/profilers/ncu/trace.c, CUDA_INJECTION64_PATH), and
this script plays the orchestrator and the trusted side: it makes inputs from the reference under
fresh seeds, sends each request with marker sizes drawn for it alone, and checks every output.

    python3 capture.py --harness DIR --tracer LIB --reference REF.py --candidate CAND.py --out DIR
        [--ncu NCU]   (also a work pass: the same worker under ncu, cudaProfilerStart/Stop windows)

Writes OUT/trace/trace-<pid>.tsv (the tracer's records), OUT/requests.json (every request with
its marks, as the orchestrator recorded it), OUT/ncu.csv with --ncu. No polyprof binary needed.
"""
import argparse
import importlib.util
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def draw_marks(used):
    marks = {}
    for key in ("open", "close", "call_open", "call_close"):
        while True:
            n = random.SystemRandom().randrange(4096, 1 << 20) // 16 * 16
            if n not in used:
                used.add(n)
                marks[key] = n
                break
    return marks


class Session:
    def __init__(self, worker_mod, argv, env):
        self.w = worker_mod
        self.dir = tempfile.mkdtemp(prefix="pp-orch-")
        path = os.path.join(self.dir, "s")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.proc = subprocess.Popen(argv + ["--socket", path], env=env)
        self.listener.settimeout(600)
        self.sock, _ = self.listener.accept()
        self.requests = []
        self.used = set()

    def send(self, header, chunks=(), marks=True, **record):
        if marks:
            header["marks"] = draw_marks(self.used)
        started = time.time()
        self.w.write_message(self.sock, header, list(chunks))
        reply, payload = self.w.read_message(self.sock)
        entry = {"op": header["op"], "trial": header.get("trial"), "marks": header.get("marks"),
                 "ok": reply.get("ok"), "wall_s": round(time.time() - started, 4)}
        entry.update(record)
        if "times_ms" in reply:
            entry["reported_times_ms"] = reply["times_ms"]
            entry["method"] = reply.get("method_detail")
        if not reply.get("ok"):
            entry["error"] = reply.get("error")
        self.requests.append(entry)
        return reply, payload

    def close(self):
        try:
            self.w.write_message(self.sock, {"op": "bye"}, [])
            self.w.read_message(self.sock)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", required=True)
    ap.add_argument("--tracer")
    ap.add_argument("--reference", required=True)
    ap.add_argument("--candidate", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ncu")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    sys.path.insert(0, args.harness)
    w = load(os.path.join(args.harness, "polyprof_eval_worker.py"), "polyprof_eval_worker")
    import torch

    ref = load(args.reference, "reference_problem")
    init_seed = random.SystemRandom().randrange(1 << 32)
    torch.manual_seed(init_seed)
    init = ref.get_init_inputs()
    torch.manual_seed(init_seed)
    model = ref.Model(*init).cuda()
    os.makedirs(args.out, exist_ok=True)
    worker = [sys.executable, os.path.join(args.harness, "polyprof_eval_worker.py"), "--role", "candidate",
              "--source", os.path.abspath(args.candidate), "--device", "cuda"]
    env = dict(os.environ)
    mode = "ncu" if args.ncu else "trace"
    if args.ncu:
        argv = [args.ncu, "--profile-from-start", "off", "--metrics", "gpu__time_duration.sum",
                "--cache-control", "all", "--clock-control", "none", "--nvtx", "--csv", "--log-file",
                os.path.join(args.out, "ncu.csv")] + worker
    else:
        trace = os.path.join(args.out, "trace")
        os.makedirs(trace, exist_ok=True)
        env.update(CUDA_INJECTION64_PATH=args.tracer, POLYPROF_TRACE_DIR=trace)
        argv = worker
    s = Session(w, argv, env)
    summary = {"candidate": os.path.basename(args.candidate), "mode": mode, "trials": []}
    try:
        s.send({"op": "setup", "device": "cuda", "init_seed": init_seed, "annotate": bool(args.ncu)}, marks=False)
        trial_inputs = None
        calls = args.trials
        for k in range(calls):
            seed = random.SystemRandom().randrange(1 << 32)
            torch.manual_seed(seed)
            inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
            with torch.no_grad():
                expected = model(*inputs)
            out = w.Outgoing()
            wires = [out.array(x.cpu() if isinstance(x, torch.Tensor) else x, "bytes") for x in inputs]
            poison = [{"nbytes": expected.numel() * expected.element_size()}]
            header = {"op": "call", "trial": k, "inputs": wires, "poison": poison}
            if args.ncu:
                header["profile"] = k > 0  # the first call warms up, unprofiled
            reply, payload = s.send(header, out.chunks, poison_bytes=[p["nbytes"] for p in poison])
            ok = False
            if reply.get("ok"):
                got = w.import_array(reply["outputs"][0], payload, "cuda")
                ok = bool(torch.allclose(got.float(), expected.float(), atol=1e-2, rtol=1e-2))
                del got
            summary["trials"].append({"trial": k, "correct": ok})
            s.send({"op": "release", "trial": k}, marks=not args.ncu)
            trial_inputs = (k, wires, out)
        if not args.ncu:
            k = args.trials
            seed = random.SystemRandom().randrange(1 << 32)
            torch.manual_seed(seed)
            inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
            with torch.no_grad():
                expected = model(*inputs)
            out = w.Outgoing()
            wires = [out.array(x.cpu() if isinstance(x, torch.Tensor) else x, "bytes") for x in inputs]
            poison = [{"nbytes": expected.numel() * expected.element_size()}]
            s.send({"op": "call", "trial": k, "inputs": wires, "poison": poison}, out.chunks,
                   poison_bytes=[poison[0]["nbytes"]])
            for b in range(args.blocks):
                reply, payload = s.send({"op": "time", "trial": k, "repeat": args.repeat, "warmup": 3, "flush_l2": True})
                if reply.get("ok") and reply.get("outputs"):
                    got = w.import_array(reply["outputs"][0], payload, "cuda")
                    ok = bool(torch.allclose(got.float(), expected.float(), atol=1e-2, rtol=1e-2))
                    summary["trials"].append({"trial": k, "block": b, "correct": ok})
                    del got
                time.sleep(0.05)  # idle between blocks, as the other side's block would be
            s.send({"op": "release", "trial": k})
    finally:
        s.close()
    summary["requests"] = s.requests
    summary["worker_exit"] = s.proc.returncode
    with open(os.path.join(args.out, "requests.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps({"candidate": summary["candidate"], "mode": mode, "trials": summary["trials"],
                      "exit": s.proc.returncode}))


if __name__ == "__main__":
    main()
