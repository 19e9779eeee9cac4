//! The tokio runtime behind every call, keyed by process id.
//!
//! A runtime created before `fork()` must never be used in the child: its epoll instance and
//! worker threads belong to the parent, and touching them from the child aborts the *parent*
//! (a tokio assertion, then "worker thread panicking; aborting process"). Celery's prefork pool
//! and `multiprocessing` with the `fork` start method do exactly that. So the runtime is looked up
//! by pid: a child gets a fresh one, and the inherited one is leaked, never dropped (dropping it
//! would try to join threads that do not exist in the child).

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;
use pyo3_async_runtimes::generic::{ContextExt, JoinError, Runtime};
use tokio::runtime::Runtime as Tokio;

struct Keyed {
    pid: u32,
    runtime: &'static Tokio,
}

static RUNTIME: Mutex<Option<Keyed>> = Mutex::new(None);

fn build() -> std::io::Result<Tokio> {
    // Two workers: a run supervises one process group; more threads only cost start-up time.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("polyprof-rt")
        .enable_all()
        .build()
}

/// This process's runtime, built on first use and again after a fork.
pub fn get() -> PyResult<&'static Tokio> {
    let pid = std::process::id();
    // A fork while another thread held the lock leaves it poisoned or held in the child only if
    // that thread panicked; the guarded data is two words, so take it either way.
    let mut slot = RUNTIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(keyed) = slot.as_ref()
        && keyed.pid == pid
    {
        return Ok(keyed.runtime);
    }
    let runtime = build().map_err(|e| {
        PyRuntimeError::new_err(format!("polyprof: cannot start the async runtime: {e}"))
    })?;
    let runtime: &'static Tokio = Box::leak(Box::new(runtime));
    *slot = Some(Keyed { pid, runtime });
    Ok(runtime)
}

/// Run `future` to completion on this process's runtime with the GIL released.
pub fn block_on<F, T>(py: Python<'_>, future: F) -> PyResult<T>
where
    F: Future<Output = T> + Send,
    T: Send,
{
    let runtime = get()?;
    Ok(py.detach(|| runtime.block_on(future)))
}

/// Run `future` on this process's runtime with the GIL released, checking for Python signals
/// (Ctrl-C) every 50 ms. On a signal, `cancel` is fired, the future is awaited to its end (the
/// runner stops the process group and keeps what it captured) and the signal's exception
/// (`KeyboardInterrupt`) is raised. The 50 ms wait is the calling thread's own (a std channel),
/// not a timer of the runtime: a Ctrl-C must be seen even while every worker thread is busy.
pub fn block_on_cancellable<F, T>(
    py: Python<'_>,
    cancel: tokio_util::sync::CancellationToken,
    future: F,
) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let runtime = get()?;
    // Capacity 1: the one send never blocks the worker thread.
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    // Behind a mutex only so that a reference to it may cross into the GIL-free closure.
    let rx = Mutex::new(rx);
    runtime.spawn(async move {
        let _ = tx.send(future.await);
    });
    let mut interrupted: Option<PyErr> = None;
    loop {
        let waited = py.detach(|| {
            rx.lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .recv_timeout(std::time::Duration::from_millis(50))
        });
        match waited {
            Ok(value) => {
                return match interrupted {
                    Some(error) => Err(error),
                    None => Ok(value),
                };
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(interrupted.unwrap_or_else(|| {
                    PyRuntimeError::new_err("polyprof: the call ended without a result")
                }));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if interrupted.is_none()
                    && let Err(error) = py.check_signals()
                {
                    cancel.cancel();
                    interrupted = Some(error);
                }
            }
        }
    }
}

/// The pid-keyed runtime as a pyo3-async-runtimes runtime, so `async` variants return asyncio
/// awaitables that are fork-safe too (the crate's own tokio runtime is one global, not per pid).
pub struct PidRuntime;

tokio::task_local! {
    static TASK_LOCALS: std::cell::OnceCell<TaskLocals>;
}

/// A spawned task: on the runtime, or (when no runtime could be built) on a thread of its own,
/// so an awaitable always resolves.
pub enum Join {
    Task(tokio::task::JoinHandle<()>),
    Thread(tokio::sync::oneshot::Receiver<()>),
}

pub struct JoinFailure(Option<tokio::task::JoinError>);

impl JoinError for JoinFailure {
    fn is_panic(&self) -> bool {
        self.0.as_ref().is_some_and(|e| e.is_panic())
    }
    fn into_panic(self) -> Box<dyn std::any::Any + Send + 'static> {
        match self.0 {
            Some(e) if e.is_panic() => e.into_panic(),
            _ => Box::new("polyprof: the task ended without a result"),
        }
    }
}

impl Future for Join {
    type Output = Result<(), JoinFailure>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Join::Task(handle) => Pin::new(handle).poll(cx).map_err(|e| JoinFailure(Some(e))),
            Join::Thread(done) => Pin::new(done).poll(cx).map_err(|_| JoinFailure(None)),
        }
    }
}

fn on_own_thread<F: FnOnce() + Send + 'static>(work: F) -> Join {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        work();
        let _ = tx.send(());
    });
    Join::Thread(rx)
}

impl Runtime for PidRuntime {
    type JoinError = JoinFailure;
    type JoinHandle = Join;

    fn spawn<F>(fut: F) -> Self::JoinHandle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        match get() {
            Ok(runtime) => Join::Task(runtime.spawn(fut)),
            Err(_) => on_own_thread(move || {
                if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    runtime.block_on(fut);
                }
            }),
        }
    }

    fn spawn_blocking<F>(f: F) -> Self::JoinHandle
    where
        F: FnOnce() + Send + 'static,
    {
        match get() {
            Ok(runtime) => Join::Task(runtime.spawn_blocking(f)),
            Err(_) => on_own_thread(f),
        }
    }
}

impl ContextExt for PidRuntime {
    fn scope<F, R>(locals: TaskLocals, fut: F) -> Pin<Box<dyn Future<Output = R> + Send>>
    where
        F: Future<Output = R> + Send + 'static,
    {
        let cell = std::cell::OnceCell::new();
        let _ = cell.set(locals);
        Box::pin(TASK_LOCALS.scope(cell, fut))
    }

    fn get_task_locals() -> Option<TaskLocals> {
        TASK_LOCALS
            .try_with(|cell| cell.get().cloned())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_process_gets_the_same_runtime() {
        let a = get().unwrap() as *const Tokio;
        let b = get().unwrap() as *const Tokio;
        assert_eq!(a, b);
    }
}
