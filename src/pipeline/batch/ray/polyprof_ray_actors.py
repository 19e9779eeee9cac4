"""The driver of `polyprof batch --ray ADDRESS --ray-mode actors`, run as the one Ray job of a
batch: it starts one long-lived actor per slot (a GPU by default), sends the batch's jobs to
them as actor method calls and gets each result back as an object. Written into the batch root
by polyprof (embedded in the binary) and started as `python3 THIS PLAN.json`.

Each job still runs as `polyprof batch JOBS --output-dir ROOT --task-index N
--ray-submission-id ID` would run it, in a warm `polyprof batch … --task-serve` child of its
actor that takes job after job, so its run directory and entry.json are what every other
backend writes. The polyprof process that submitted this job follows the batch
through PROGRESS (written atomically here) and the entries.

Failure handling:
- An actor whose process or node dies loses only the job it was running: the call fails with
  an actor error, the job goes back to the front of the queue for the next free actor (at most
  `max_lost` times), and Ray restarts the actor (`max_restarts=-1`) where resources allow.
- The job's polyprof dies with its actor (PR_SET_PDEATHSIG), releasing the job's lock, so the
  retry elsewhere is the only runner.
- A job is never judged twice: before running one, the actor reads its entry.json, and an entry
  that holds a result and names this batch's submission id (a run that finished just before
  its actor died) is returned as the result instead of running the job again.
- SIGTERM (polyprof's Ctrl-C stops this Ray job) kills the actors; their jobs' polyprof get
  SIGTERM, cancel their commands and write their entries `cancelled`.

Waves: a plan with `more` (a job file's problem stages, decided a wave at a time by polyprof)
takes later jobs from that file, which polyprof rewrites whole: once its jobs are done this
driver keeps its actors and queues the file's jobs it has not seen, and ends once the file says
`closed` (or after MORE_WAIT_S with nothing new: the polyprof that fed it is gone).

Warm state: the actor's `--task-serve` child keeps a warm evaluator per problem on the actor's
GPU (its trusted worker and the reference's blocks) from one eval job to the next. This driver
sends an eval job to an actor that already judged its problem (`affinity`) when one is free,
else to any; an actor that restarted (or whose child was stopped) starts cold.
"""

import collections
import ctypes
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time

import ray

PR_SET_PDEATHSIG = 1
# How long the queue may wait with no actor alive to take a job before the rest are lost.
NO_ACTOR_LIMIT_S = 120.0
# Jobs sent to one actor at once (one runs, the next waits in the actor's queue).
DEPTH = 2
# The progress file is rewritten at most this often (and at the end).
SAVE_EVERY_S = 0.2
# The problems an actor's child keeps warm: its last two (as `--task-serve` keeps them).
WARM_PROBLEMS = 2
# How long an idle driver waits for the next wave before it ends.
MORE_WAIT_S = 120.0


def write_json_atomic(path, value):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    # A link or FIFO planted at the temporary name is removed and the file created afresh,
    # never followed into a file this process did not create (issue 43).
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(tmp, flags | getattr(os, "O_CLOEXEC", 0), 0o644), "w") as f:
        json.dump(value, f)
    # Readers see the old file or the new one; it is progress, not a record to keep.
    os.replace(tmp, path)


def die_with_parent():
    """In the child: SIGTERM when the actor process that started it dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except Exception:
        pass


def final_entry(runs_dir, job_id, submission_id):
    """The job's entry.json when it was written under this submission id and holds a result:
    a final state other than `cancelled` (a run cut off when its actor died is run again)."""
    try:
        with open(os.path.join(runs_dir, job_id, "entry.json")) as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    ray_info = entry.get("ray") or {}
    if (
        entry.get("id") == job_id
        and entry.get("state") not in (None, "pending", "running", "cancelled")
        and ray_info.get("submission_id") == submission_id
    ):
        return entry
    return None


def wait_for_lock(runs_dir, job_id, limit_s=30.0):
    """Wait until no process holds the job's lock (a runner whose actor just died is still
    writing its entry), then let it go: polyprof takes it itself."""
    path = os.path.join(runs_dir, ".%s.lock" % job_id)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError:
        return
    try:
        deadline = time.monotonic() + limit_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)
    finally:
        os.close(fd)


class TaskActor:
    """One per slot; runs one job at a time through a warm `polyprof batch --task-serve` child
    (started on first use, and again after it ended), so a job costs no process start-up."""

    def __init__(self, plan):
        self.task_argv = plan["task_argv"]
        self.submission_id = plan["submission_id"]
        self.runs_dir = plan["runs_dir"]
        self.log_dir = os.path.dirname(plan["progress"])
        self.time_limit_s = plan.get("time_limit_s")
        self.proc = None
        self.buffer = b""

    def where(self):
        context = ray.get_runtime_context()
        return {
            "node_id": context.get_node_id(),
            "node_ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(),
            "gpus": [str(g) for g in ray.get_gpu_ids()],
        }

    def server(self):
        if self.proc is None or self.proc.poll() is not None:
            self.log_path = os.path.join(
                self.log_dir, "actor-%s-%d.log" % (self.submission_id, os.getpid())
            )
            self.proc = subprocess.Popen(
                self.task_argv + ["--task-serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=open(self.log_path, "ab"),
                preexec_fn=die_with_parent,
            )
            self.buffer = b""
        return self.proc

    def stop_server(self):
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def output_tail(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-4000:].decode("utf-8", "replace").strip().splitlines()[-3:]
        except (OSError, AttributeError):
            return []

    def run(self, index, job_id):
        # A runner whose actor just died may still be writing its entry: wait for its lock.
        wait_for_lock(self.runs_dir, job_id)
        done = final_entry(self.runs_dir, job_id, self.submission_id)
        if done is not None:
            return {"index": index, "reused": True, "exit": 0, "timed_out": False}
        proc = self.server()
        try:
            proc.stdin.write(("%d %s\n" % (index, self.submission_id)).encode())
            proc.stdin.flush()
        except OSError:
            pass
        deadline = None if self.time_limit_s is None else time.monotonic() + self.time_limit_s
        fd = proc.stdout.fileno()
        while True:
            if b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                words = line.decode("utf-8", "replace").split()
                if words[:2] == ["polyprof-task-done", str(index)]:
                    return {"index": index, "reused": False, "exit": 0, "timed_out": False}
                continue
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([fd], [], [], wait)
            if not readable:
                code = self.stop_server()
                return {
                    "index": index,
                    "reused": False,
                    "exit": code,
                    "timed_out": True,
                    "stopped": True,
                    "output": self.output_tail(),
                }
            chunk = os.read(fd, 65536)
            if not chunk:
                code = self.stop_server()
                return {
                    "index": index,
                    "reused": False,
                    "exit": code,
                    "timed_out": False,
                    "stopped": True,
                    "output": self.output_tail(),
                }
            self.buffer += chunk


class Stop(Exception):
    pass


def on_term(signum, frame):
    raise Stop()


def main(plan_path):
    with open(plan_path) as f:
        plan = json.load(f)
    progress_path = plan["progress"]
    signal.signal(signal.SIGTERM, on_term)
    ray.init(log_to_driver=False)

    options = {"num_gpus": plan["num_gpus"], "num_cpus": plan["num_cpus"]}
    if plan.get("resources"):
        options["resources"] = plan["resources"]
    actor_class = ray.remote(max_restarts=-1, max_task_retries=0)(TaskActor)
    jobs = {int(i): job_id for i, job_id in plan["jobs"]}
    # Task index -> the number of its problem (eval jobs only).
    affinity = {int(i): group for i, group in (plan.get("affinity") or {}).items()}
    queue = collections.deque(int(i) for i, _ in plan["jobs"])
    max_lost = int(plan.get("max_lost", 3))
    more_path = plan.get("more")
    # Later waves may be wider than the first: as many actors as the plan says.
    count = max(1, int(plan["actors"]) if more_path else min(int(plan["actors"]), len(queue)))
    closed = [not more_path]
    idle_since = None

    slots = [actor_class.options(**options).remote(plan) for _ in range(count)]
    where = [None] * count
    restarts = [0] * count
    # The jobs sent to each slot, in order: the first runs, the next waits in the actor's own
    # queue, so an actor never idles while this driver hears of a result and sends the next.
    sent = [collections.deque() for _ in range(count)]
    up = [False] * count
    ping_failures = [0] * count
    # The problems each actor's child holds warm, most recent last.
    warm = [[] for _ in range(count)]
    # Calls in flight: ref -> (slot, "where" | "run", index or None).
    calls = {}
    state = {"actors": [], "jobs": {}, "finished": False}
    lost_tries = collections.Counter()
    for slot, actor in enumerate(slots):
        calls[actor.where.remote()] = (slot, "where", None)

    def job_state(index, **fields):
        entry = state["jobs"].setdefault(str(index), {"attempts": 0, "errors": []})
        entry.update(fields)
        return entry

    last_save = [0.0]

    def save(now=False):
        if not now and time.monotonic() - last_save[0] < SAVE_EVERY_S:
            return
        state["actors"] = [
            dict(where[s] or {}, slot=s, restarts=restarts[s]) for s in range(count)
        ]
        write_json_atomic(progress_path, state)
        last_save[0] = time.monotonic()

    def take_for(slot):
        """The first queued job of a problem the actor holds warm, else the first queued."""
        if warm[slot]:
            for position, index in enumerate(queue):
                if affinity.get(index) in warm[slot]:
                    del queue[position]
                    return index
        return queue.popleft()

    def now_warm(slot, index):
        group = affinity.get(index)
        if group is None:
            return
        if group in warm[slot]:
            warm[slot].remove(group)
        warm[slot].append(group)
        del warm[slot][:-WARM_PROBLEMS]

    def take_more():
        """Queue the more-jobs file's jobs not seen yet; whether any was."""
        try:
            with open(more_path) as f:
                more = json.load(f)
        except (OSError, ValueError):
            more = {}
        added = False
        for i, job_id in more.get("jobs", []):
            if int(i) not in jobs:
                jobs[int(i)] = job_id
                queue.append(int(i))
                added = True
        if more.get("closed") and not added:
            closed[0] = True
        return added

    def mark_running(slot):
        if sent[slot]:
            job_state(sent[slot][0], state="running", slot=slot, **(where[slot] or {}))

    save(now=True)
    no_actor_since = None
    try:
        while queue or any(sent) or not closed[0]:
            if not queue and not any(sent):
                if take_more():
                    idle_since = None
                else:
                    if closed[0]:
                        break
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since > MORE_WAIT_S:
                        break
                    save()
                    time.sleep(SAVE_EVERY_S)
                    continue
            # Breadth first: every free actor gets a job before any gets a second, and a second
            # only while there is work for every actor.
            for depth in range(1, DEPTH + 1):
                for slot in range(count):
                    if not (up[slot] and queue and len(sent[slot]) < depth):
                        continue
                    if depth > 1 and len(queue) < count:
                        continue
                    index = take_for(slot)
                    now_warm(slot, index)
                    entry = job_state(index, state="sent", slot=slot, **(where[slot] or {}))
                    entry["attempts"] += 1
                    sent[slot].append(index)
                    calls[slots[slot].run.remote(index, jobs[index])] = (slot, "run", index)
            for slot in range(count):
                mark_running(slot)
            save()
            if queue and not any(up) and not any(sent):
                no_actor_since = no_actor_since or time.monotonic()
                if time.monotonic() - no_actor_since > NO_ACTOR_LIMIT_S:
                    for index in queue:
                        job_state(index, state="lost")["errors"].append(
                            "no actor of the batch came up in %.0f s to run it (each asks %s)"
                            % (NO_ACTOR_LIMIT_S, options)
                        )
                    queue.clear()
                    break
            else:
                no_actor_since = None
            if not calls:
                time.sleep(0.2)
                continue
            # Wake at the save period, so a job just sent is in the progress (where it runs)
            # soon after; the reader waits for that before it takes the job's entry.
            ready, _ = ray.wait(list(calls), num_returns=1, timeout=SAVE_EVERY_S)
            for ref in ready:
                slot, kind, index = calls.pop(ref)
                try:
                    value = ray.get(ref)
                except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as e:
                    if kind == "run":
                        if index in sent[slot]:
                            sent[slot].remove(index)
                        lost_tries[index] += 1
                        text = str(e).strip()
                        text = text.splitlines()[0] if text else type(e).__name__
                        entry = job_state(index, state="queued")
                        entry["errors"].append(
                            "attempt %d: actor %d (pid %s on %s) died: %s"
                            % (
                                entry["attempts"],
                                slot,
                                entry.get("pid"),
                                entry.get("node_ip"),
                                text,
                            )
                        )
                        if lost_tries[index] > max_lost:
                            entry["state"] = "lost"
                        else:
                            queue.appendleft(index)
                    if kind == "where":
                        ping_failures[slot] += 1
                    if (up[slot] or kind == "where") and ping_failures[slot] <= 20:
                        # Back in the pool once Ray has restarted it (this call waits for that).
                        up[slot] = False
                        # A restarted actor starts a fresh child: nothing warm.
                        warm[slot] = []
                        restarts[slot] += 1 if kind == "run" else 0
                        where[slot] = None
                        calls[slots[slot].where.remote()] = (slot, "where", None)
                    continue
                except ray.exceptions.RayError as e:
                    if kind == "run":
                        if index in sent[slot]:
                            sent[slot].remove(index)
                        job_state(index, state="lost")["errors"].append("the call failed: %s" % e)
                    continue
                if kind == "where":
                    where[slot] = value
                    up[slot] = True
                else:
                    if index in sent[slot]:
                        sent[slot].remove(index)
                    if value.get("stopped"):
                        # The actor stopped its child (or it ended): the next one starts cold.
                        warm[slot] = []
                    job_state(
                        index,
                        state="timed_out" if value["timed_out"] else "done",
                        exit=value["exit"],
                        reused=value["reused"],
                        output=value.get("output", []),
                    )
                    mark_running(slot)
        state["finished"] = True
        save(now=True)
    except (Stop, KeyboardInterrupt):
        state["stopped"] = True
        save(now=True)
        for actor in slots:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:
                pass
        return 130
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    # The actors end with this driver (Ray kills a job's actors when its driver exits);
    # ray.shutdown's orderly goodbye would only add a second.
    os._exit(code)
