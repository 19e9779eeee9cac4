//! Call paths for Rust users, after Triton's Proton and Enigma: a [`Session`] collects events;
//! [`scope`] guards nest on a thread-local stack and every event is stamped with the active call
//! path; kernel hooks supply FLOPs and bytes for kernels that have none; a profiler run is placed
//! under the job's call path (job / pass / process / kernel).
//!
//! With no active session, [`scope`], [`record_function`] and [`record_kernel`] cost one relaxed
//! atomic load (measured by `scripts/bench-report.sh`).
//!
//! ```
//! use polyprof::results::callpath::{scope, Session};
//! let session = Session::start("eval").unwrap();
//! {
//!     let _outer = scope("candidate-17", &[]);
//!     let _inner = scope("matmul", &[("flops32", 2.0 * 1024f64.powi(3))]);
//! }
//! let profile = session.finish();
//! assert_eq!(profile.events.len(), 2);
//! assert_eq!(profile.events[1].path_names(), ["candidate-17", "matmul"]);
//! ```

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use crate::model::error::{Error, Result};
use crate::model::record::{FlopCounts, short_kernel_name};
use crate::model::run::ProfileRun;
pub use crate::results::event::{Event, Frame, FrameKind, ThreadInfo};
use crate::results::profile::{Profile, job_frame, kernel_events};

/// A kernel launch reported to the session by the caller's runtime.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelLaunch {
    pub name: String,
    pub gpu_time_ns: Option<f64>,
    pub gpu_start_ns: Option<f64>,
    pub device: Option<String>,
    pub stream: Option<String>,
    pub grid: Option<[u64; 3]>,
    pub block: Option<[u64; 3]>,
    pub flops: FlopCounts,
    pub bytes: Option<f64>,
    pub metrics: BTreeMap<String, f64>,
}

/// What a kernel hook supplies: the work of one launch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelWork {
    pub flops: FlopCounts,
    pub bytes: Option<f64>,
    pub metrics: BTreeMap<String, f64>,
}

/// A hook registered for a kernel name (Proton's `launch_metadata`).
pub type KernelHook = Arc<dyn Fn(&KernelLaunch) -> KernelWork + Send + Sync>;

struct State {
    id: u64,
    name: String,
    /// `getpid` is a system call; asked once.
    pid: u32,
    epoch: Instant,
    next_event: AtomicU64,
    events: Mutex<Vec<Event>>,
    hooks: RwLock<BTreeMap<String, KernelHook>>,
}

impl State {
    fn next_id(&self) -> u64 {
        self.next_event.fetch_add(1, Ordering::Relaxed)
    }

    fn push(&self, event: Event) {
        lock(&self.events).push(event);
    }

    fn hook_for(&self, name: &str) -> Option<KernelHook> {
        let hooks = self.hooks.read().unwrap_or_else(|p| p.into_inner());
        if hooks.is_empty() {
            return None;
        }
        hooks
            .get(name)
            .or_else(|| hooks.get(&short_kernel_name(name)))
            .cloned()
    }

    /// Fill FLOPs and bytes an event lacks from the hook registered for its kernel name.
    fn apply_hook(&self, event: &mut Event, launch: &KernelLaunch) {
        let needs_flops = event.flops.total().is_none();
        let needs_bytes = event.bytes.is_none();
        if !(needs_flops || needs_bytes) {
            return;
        }
        let Some(hook) = self.hook_for(&launch.name) else {
            return;
        };
        let work = hook(launch);
        if needs_flops {
            event.flops = work.flops;
        }
        if needs_bytes {
            event.bytes = work.bytes;
        }
        for (name, value) in work.metrics {
            event.metrics.entry(name).or_insert(value);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves a consistent Vec; keep recording.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

static ACTIVE: AtomicBool = AtomicBool::new(false);
static CURRENT: RwLock<Option<Arc<State>>> = RwLock::new(None);
static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

struct StackEntry {
    session: u64,
    id: u64,
    frame: Frame,
}

thread_local! {
    static STACK: RefCell<Vec<StackEntry>> = const { RefCell::new(Vec::new()) };
    static THREAD_ID: Cell<u64> = const { Cell::new(0) };
}

fn current() -> Option<Arc<State>> {
    CURRENT.read().unwrap_or_else(|p| p.into_inner()).clone()
}

fn this_thread() -> ThreadInfo {
    let id = THREAD_ID.with(|cell| {
        if cell.get() == 0 {
            cell.set(NEXT_THREAD.fetch_add(1, Ordering::Relaxed));
        }
        cell.get()
    });
    ThreadInfo {
        id,
        name: std::thread::current().name().map(str::to_string),
    }
}

/// The active call path of this thread in `session`, and its innermost scope id.
fn stack_of(session: u64) -> (Vec<Frame>, Option<u64>) {
    STACK.with(|stack| {
        let stack = stack.borrow();
        let frames: Vec<Frame> = stack
            .iter()
            .filter(|e| e.session == session)
            .map(|e| e.frame.clone())
            .collect();
        let parent = stack
            .iter()
            .rev()
            .find(|e| e.session == session)
            .map(|e| e.id);
        (frames, parent)
    })
}

/// True while a session is recording.
#[inline]
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// A profiling session. One is active at a time per process (as in Proton); dropping it without
/// [`finish`](Session::finish) stops it and discards its events.
pub struct Session {
    state: Arc<State>,
    finished: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("name", &self.state.name)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Start recording. Fails when another session is active.
    pub fn start(name: &str) -> Result<Session> {
        let mut current = CURRENT.write().unwrap_or_else(|p| p.into_inner());
        if let Some(other) = current.as_ref() {
            return Err(Error::invalid(
                "profiling session",
                format!(
                    "session `{}` is still active; finish it before starting `{name}`",
                    other.name
                ),
            ));
        }
        let state = Arc::new(State {
            id: NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
            name: name.to_string(),
            pid: std::process::id(),
            epoch: Instant::now(),
            next_event: AtomicU64::new(0),
            events: Mutex::new(Vec::new()),
            hooks: RwLock::new(BTreeMap::new()),
        });
        *current = Some(state.clone());
        ACTIVE.store(true, Ordering::Release);
        Ok(Session {
            state,
            finished: false,
        })
    }

    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Register a hook that supplies FLOPs/bytes for kernels named `kernel` (full or short name)
    /// that arrive without them. A later hook for the same name replaces the earlier one.
    pub fn register_hook<F>(&self, kernel: &str, hook: F)
    where
        F: Fn(&KernelLaunch) -> KernelWork + Send + Sync + 'static,
    {
        self.state
            .hooks
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(kernel.to_string(), Arc::new(hook));
    }

    /// Remove the hook registered for `kernel`; false when there was none.
    pub fn unregister_hook(&self, kernel: &str) -> bool {
        self.state
            .hooks
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(kernel)
            .is_some()
    }

    /// Record a kernel launch under this thread's active call path.
    pub fn add_kernel(&self, launch: KernelLaunch) {
        add_kernel_to(&self.state, launch);
    }

    /// Place a profiler run's kernels under this thread's active call path (or under a job frame
    /// named after the run's target when no scope is open): `… / pass / process / kernel`. Hooks
    /// fill FLOPs and bytes that the records lack.
    pub fn add_run(&self, run: &ProfileRun) {
        let (mut job, parent) = stack_of(self.state.id);
        if job.is_empty() {
            job.push(job_frame(run));
        }
        let mut events = kernel_events(run, &job);
        for (event, record) in events.iter_mut().zip(&run.kernels) {
            event.id = self.state.next_id();
            event.parent = parent;
            let launch = KernelLaunch {
                name: record.name.clone(),
                gpu_time_ns: record.duration_ns,
                gpu_start_ns: record.start_ns,
                device: record.device.clone(),
                stream: record.stream.clone(),
                grid: record.grid,
                block: record.block,
                flops: record.flops,
                bytes: record.total_dram_bytes(),
                metrics: BTreeMap::new(),
            };
            self.state.apply_hook(event, &launch);
        }
        lock(&self.state.events).extend(events);
    }

    /// A copy of the events recorded so far.
    pub fn events(&self) -> Vec<Event> {
        lock(&self.state.events).clone()
    }

    /// Stop recording and return the profile. Scopes still open keep recording into the
    /// finished session and are not part of the result.
    pub fn finish(mut self) -> Profile {
        self.deactivate();
        self.finished = true;
        let mut events = std::mem::take(&mut *lock(&self.state.events));
        events.sort_by_key(|e| e.id);
        Profile {
            name: self.state.name.clone(),
            profiler: Some("polyprof session".to_string()),
            device: None,
            events,
        }
    }

    fn deactivate(&self) {
        let mut current = CURRENT.write().unwrap_or_else(|p| p.into_inner());
        if current.as_ref().is_some_and(|s| s.id == self.state.id) {
            *current = None;
            ACTIVE.store(false, Ordering::Release);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.finished {
            self.deactivate();
        }
    }
}

fn add_kernel_to(state: &State, launch: KernelLaunch) {
    let (mut call_path, parent) = stack_of(state.id);
    call_path.push(Frame::new(
        short_kernel_name(&launch.name),
        FrameKind::Kernel,
    ));
    let mut event = Event {
        id: state.next_id(),
        parent,
        call_path,
        process_id: Some(state.pid),
        thread: Some(this_thread()),
        device: launch.device.clone(),
        stream: launch.stream.clone(),
        gpu_start_ns: launch.gpu_start_ns,
        gpu_time_ns: launch.gpu_time_ns,
        calls: 1,
        flops: launch.flops,
        bytes: launch.bytes,
        ..Default::default()
    };
    for (name, value) in &launch.metrics {
        event.absorb_metric(name, *value);
    }
    event.attributes.insert(
        "kernel".to_string(),
        serde_json::Value::String(launch.name.clone()),
    );
    state.apply_hook(&mut event, &launch);
    state.push(event);
}

/// Record a kernel launch in the active session, if any. The closure runs only when a session
/// is active, so building the launch costs nothing otherwise.
#[inline]
pub fn record_kernel(launch: impl FnOnce() -> KernelLaunch) {
    if !is_active() {
        return;
    }
    if let Some(state) = current() {
        add_kernel_to(&state, launch());
    }
}

/// An open scope; the event is recorded when the guard drops. Not `Send`: scopes belong to the
/// thread that opened them.
#[must_use = "a scope ends when its guard is dropped"]
pub struct ScopeGuard {
    active: Option<Box<OpenScope>>,
    _not_send: PhantomData<*const ()>,
}

struct OpenScope {
    state: Arc<State>,
    event: Event,
    start: Instant,
}

impl ScopeGuard {
    const INACTIVE: ScopeGuard = ScopeGuard {
        active: None,
        _not_send: PhantomData,
    };

    /// Whether this guard records anything (a session was active when it opened).
    pub fn is_recording(&self) -> bool {
        self.active.is_some()
    }

    /// Add to a metric of this scope (FLOPs or bytes known only once the work ran).
    pub fn add_metric(&mut self, name: &str, value: f64) {
        if let Some(open) = self.active.as_mut() {
            open.event.absorb_metric(name, value);
        }
    }
}

impl Drop for ScopeGuard {
    // Inlined so that an inactive guard costs a branch; the recording path is out of line.
    #[inline]
    fn drop(&mut self) {
        if let Some(open) = self.active.take() {
            close_scope(open);
        }
    }
}

#[cold]
#[inline(never)]
fn close_scope(open: Box<OpenScope>) {
    let elapsed = open.start.elapsed();
    let OpenScope {
        state,
        mut event,
        start,
    } = *open;
    let id = event.id;
    STACK.with(|stack| {
        let mut stack = stack.borrow_mut();
        // Normally the top; a guard dropped out of order is removed where it is.
        if let Some(index) = stack
            .iter()
            .rposition(|e| e.id == id && e.session == state.id)
        {
            stack.remove(index);
        }
    });
    event.cpu_start_ns = Some(start.duration_since(state.epoch).as_nanos() as f64);
    event.cpu_time_ns = Some(elapsed.as_nanos() as f64);
    state.push(event);
}

/// Open a scope named `name` with additive metrics (Proton's keys `flops16`, `flops32`,
/// `flops64`, `flops` (= FP32) and `bytes` feed the roofline; other keys are summed as they are).
/// Does nothing when no session is active.
#[inline]
pub fn scope(name: &str, metrics: &[(&str, f64)]) -> ScopeGuard {
    if !is_active() {
        return ScopeGuard::INACTIVE;
    }
    open_scope(name, FrameKind::Scope, metrics)
}

/// PyTorch's name for a scope that marks a function; recorded with kind `function`.
#[inline]
pub fn record_function(name: &str) -> ScopeGuard {
    if !is_active() {
        return ScopeGuard::INACTIVE;
    }
    open_scope(name, FrameKind::Function, &[])
}

#[cold]
#[inline(never)]
fn open_scope(name: &str, kind: FrameKind, metrics: &[(&str, f64)]) -> ScopeGuard {
    let Some(state) = current() else {
        return ScopeGuard::INACTIVE;
    };
    let (mut call_path, parent) = stack_of(state.id);
    let frame = Frame::new(name, kind);
    call_path.push(frame.clone());
    let id = state.next_id();
    let mut event = Event {
        id,
        parent,
        call_path,
        process_id: Some(state.pid),
        thread: Some(this_thread()),
        calls: 1,
        ..Default::default()
    };
    for (name, value) in metrics {
        event.absorb_metric(name, *value);
    }
    STACK.with(|stack| {
        stack.borrow_mut().push(StackEntry {
            session: state.id,
            id,
            frame,
        })
    });
    ScopeGuard {
        active: Some(Box::new(OpenScope {
            state,
            event,
            start: Instant::now(),
        })),
        _not_send: PhantomData,
    }
}

/// Serializes tests that start sessions (one session per process at a time).
#[cfg(test)]
pub(crate) static TEST_LOCK: Mutex<()> = Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::KernelRecord;

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        TEST_LOCK.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[test]
    fn nothing_is_recorded_without_a_session() {
        let _serial = serial();
        let guard = scope("idle", &[("flops", 1.0)]);
        assert!(!guard.is_recording());
        record_kernel(|| panic!("the closure must not run without a session"));
    }

    #[test]
    fn scopes_nest_and_stamp_call_paths() {
        let _serial = serial();
        let session = Session::start("s").unwrap();
        {
            let _a = scope("a", &[]);
            {
                let mut b = record_function("b");
                b.add_metric("flops32", 10.0);
                b.add_metric("widgets", 2.0);
                record_kernel(|| KernelLaunch {
                    name: "void k<1>(int)".into(),
                    gpu_time_ns: Some(100.0),
                    ..Default::default()
                });
            }
            let _c = scope("c", &[("bytes", 64.0)]);
        }
        let profile = session.finish();
        let paths: Vec<Vec<&str>> = profile.events.iter().map(|e| e.path_names()).collect();
        assert_eq!(
            paths,
            vec![
                vec!["a"],
                vec!["a", "b"],
                vec!["a", "b", "k<1>"],
                vec!["a", "c"]
            ]
        );
        let b = &profile.events[1];
        assert_eq!(b.kind(), FrameKind::Function);
        assert_eq!(b.flops.fp32, Some(10.0));
        assert_eq!(b.metrics["widgets"], 2.0);
        assert_eq!(profile.events[2].parent, Some(b.id));
        assert_eq!(profile.events[3].bytes, Some(64.0));
        // The outer scope's wall time contains the inner one's.
        let a = &profile.events[0];
        assert!(a.cpu_time_ns.unwrap() >= b.cpu_time_ns.unwrap());
        assert!(a.cpu_start_ns.unwrap() <= b.cpu_start_ns.unwrap());
    }

    #[test]
    fn one_session_at_a_time() {
        let _serial = serial();
        let first = Session::start("first").unwrap();
        let err = Session::start("second").unwrap_err().to_string();
        assert!(err.contains("first"), "{err}");
        drop(first);
        assert!(!is_active());
        Session::start("third").unwrap().finish();
    }

    #[test]
    fn hooks_fill_missing_work_only() {
        let _serial = serial();
        let session = Session::start("hooks").unwrap();
        session.register_hook("matmul", |launch| KernelWork {
            flops: FlopCounts {
                fp32: Some(2.0 * launch.grid.map_or(0, |g| g[0]) as f64),
                ..Default::default()
            },
            bytes: Some(8.0),
            ..Default::default()
        });
        session.add_kernel(KernelLaunch {
            name: "void matmul(float*)".into(),
            grid: Some([5, 1, 1]),
            gpu_time_ns: Some(10.0),
            ..Default::default()
        });
        session.add_kernel(KernelLaunch {
            name: "matmul".into(),
            flops: FlopCounts {
                fp32: Some(1.0),
                ..Default::default()
            },
            bytes: Some(3.0),
            ..Default::default()
        });
        let profile = session.finish();
        assert_eq!(profile.events[0].flops.fp32, Some(10.0));
        assert_eq!(profile.events[0].bytes, Some(8.0));
        assert_eq!(profile.events[1].flops.fp32, Some(1.0));
        assert_eq!(profile.events[1].bytes, Some(3.0));
    }

    #[test]
    fn runs_land_under_the_active_scope() {
        let _serial = serial();
        let mut run = ProfileRun::new(
            "ncu.000",
            "ncu",
            &["./app".into()],
            std::path::Path::new("out"),
        );
        run.kernels.push(KernelRecord {
            profiler: "ncu".into(),
            process_id: Some(7),
            process_name: Some("app".into()),
            name: "void k(int)".into(),
            short_name: "k".into(),
            duration_ns: Some(5.0),
            ..Default::default()
        });
        let session = Session::start("runs").unwrap();
        session.register_hook("k", |_| KernelWork {
            bytes: Some(42.0),
            ..Default::default()
        });
        {
            let _job = scope("candidate", &[]);
            session.add_run(&run);
        }
        session.add_run(&run);
        let profile = session.finish();
        let kernels: Vec<&Event> = profile
            .events
            .iter()
            .filter(|e| e.kind() == FrameKind::Kernel)
            .collect();
        assert_eq!(
            kernels[0].path_names(),
            ["candidate", "ncu.000", "app [7]", "k"]
        );
        assert_eq!(kernels[1].path_names(), ["app", "ncu.000", "app [7]", "k"]);
        assert_eq!(kernels[0].bytes, Some(42.0));
        assert!(kernels[0].parent.is_some());
        assert_eq!(kernels[1].parent, None);
    }

    #[test]
    fn scopes_on_other_threads_start_their_own_paths() {
        let _serial = serial();
        let session = Session::start("threads").unwrap();
        {
            let _main = scope("main", &[]);
            std::thread::scope(|s| {
                s.spawn(|| {
                    let _w = scope("worker", &[]);
                });
            });
        }
        let profile = session.finish();
        let worker = profile
            .events
            .iter()
            .find(|e| e.name() == "worker")
            .unwrap();
        let main = profile.events.iter().find(|e| e.name() == "main").unwrap();
        assert_eq!(worker.path_names(), ["worker"]);
        assert_ne!(
            worker.thread.as_ref().unwrap().id,
            main.thread.as_ref().unwrap().id
        );
    }
}
