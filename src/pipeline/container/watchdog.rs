//! Containers die with polyprof. A process outside polyprof (the supervising executable in a
//! hidden mode, in a process group of its own) holds the read end of a pipe whose write end only
//! polyprof has. polyprof names each container on it before asking the engine to create it, and
//! takes the name back once the container is removed. When the pipe closes with names still on
//! it — polyprof died, even by SIGKILL, or its runtime ended before a removal ran — the watchdog
//! force-removes those containers, and keeps trying for [`CREATE_WINDOW`]: a create or start
//! request polyprof sent just before it died may still complete in the engine.
//!
//! A polyprof that ends normally leaves no names, and its watchdog exits at once without
//! touching the engine.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bollard::query_parameters::RemoveContainerOptionsBuilder;

use super::engine::Engine;

/// `argv[1]` that selects the watchdog mode.
pub const WATCHDOG_MODE: &str = "__polyprof-container-watchdog";
/// After polyprof died: how long a name that the engine does not know (yet) is retried.
pub const CREATE_WINDOW: Duration = Duration::from_secs(20);
/// Bounds of the retry interval within the window.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MOST: Duration = Duration::from_millis(500);

/// The watchdog process and the pipe to it.
struct Running {
    child: Child,
    pipe: ChildStdin,
}

/// This process's watchdog and the containers it guards (names created and not yet removed).
struct State {
    running: Option<Running>,
    live: BTreeSet<String>,
}

static STATE: Mutex<State> = Mutex::new(State {
    running: None,
    live: BTreeSet::new(),
});

fn state() -> std::sync::MutexGuard<'static, State> {
    // A panic elsewhere while holding the lock leaves consistent data: sets and a child handle.
    STATE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Start the watchdog `exe` (which must call [`run_if_requested`] first in `main`).
fn start(exe: &Path) -> std::io::Result<Running> {
    let mut command = Command::new(exe);
    command
        .arg(WATCHDOG_MODE)
        .stdin(Stdio::piped())
        // Nothing of the caller's: a reader of polyprof's stdout must not wait for the watchdog.
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Its own process group: a Ctrl-C or a group kill meant for polyprof does not take the
    // watchdog along before it has done its work.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn()?;
    let Some(pipe) = child.stdin.take() else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(std::io::Error::other("the watchdog has no input pipe"));
    };
    Ok(Running { child, pipe })
}

impl State {
    /// A watchdog that is still running, started (and told every live name) if there is none.
    fn ensure(&mut self, exe: &Path) -> std::io::Result<&mut Running> {
        let alive = self
            .running
            .as_mut()
            .is_some_and(|r| matches!(r.child.try_wait(), Ok(None)));
        if !alive {
            self.stop();
            let mut running = start(exe)?;
            let all: String = self.live.iter().map(|n| format!("+{n}\n")).collect();
            running.pipe.write_all(all.as_bytes())?;
            self.running = Some(running);
        }
        self.running
            .as_mut()
            .ok_or_else(|| std::io::Error::other("no watchdog"))
    }

    /// End a watchdog that can no longer be told anything (it is replaced by a fresh one).
    fn stop(&mut self) {
        if let Some(mut running) = self.running.take() {
            let _ = running.child.kill();
            let _ = running.child.wait();
        }
    }

    fn send(&mut self, exe: &Path, line: &str) -> std::io::Result<()> {
        let sent = self
            .ensure(exe)
            .and_then(|r| r.pipe.write_all(line.as_bytes()));
        if sent.is_ok() {
            return Ok(());
        }
        // The watchdog died or stopped reading: a fresh one gets the whole list.
        self.stop();
        self.ensure(exe).map(|_| ())
    }
}

/// Put container `name` under the watchdog `exe` before it is created. `Err`: why no watchdog
/// guards it (the run goes on; a later run's reaping or `containers prune` is left).
pub fn guard(exe: &Path, name: &str) -> Result<(), String> {
    let mut state = state();
    state.live.insert(name.to_string());
    state.send(exe, &format!("+{name}\n")).map_err(|e| {
        format!(
            "no watchdog ({}: {e}): if polyprof is killed, container {name} stays until the next `polyprof containers prune`",
            exe.display()
        )
    })
}

/// Container `name` is gone (removed, or never created): the watchdog forgets it.
pub fn release(name: &str) {
    let mut state = state();
    if !state.live.remove(name) {
        return;
    }
    let line = format!("-{name}\n");
    let failed = state
        .running
        .as_mut()
        .is_some_and(|r| r.pipe.write_all(line.as_bytes()).is_err());
    if failed {
        // The next guard starts a fresh one with the names still live.
        state.stop();
    }
}

/// If this process was started as a watchdog, act as one and exit; otherwise return. Call it
/// first thing in `main` of any binary given as a watchdog (`polyprof`, `polyprof-supervise`).
pub fn run_if_requested() {
    if std::env::args_os().nth(1).as_deref() != Some(std::ffi::OsStr::new(WATCHDOG_MODE)) {
        return;
    }
    let left = read_names(std::io::stdin().lock());
    if left.is_empty() {
        std::process::exit(0);
    }
    let removed = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map(|runtime| runtime.block_on(remove_all(left)));
    std::process::exit(if matches!(removed, Ok(true)) { 0 } else { 1 });
}

/// Follow the names on the pipe until it closes; the ones not taken back.
fn read_names(input: impl BufRead) -> BTreeSet<String> {
    let mut live = BTreeSet::new();
    for line in input.lines() {
        // A read error is the end of the pipe as well.
        let Ok(line) = line else { break };
        if let Some(name) = line.strip_prefix('+') {
            live.insert(name.to_string());
        } else if let Some(name) = line.strip_prefix('-') {
            live.remove(name);
        }
    }
    live
}

/// Force-remove every container named in `left`, retrying what the engine does not know yet
/// (a create still in flight) within [`CREATE_WINDOW`]. True when all were removed.
async fn remove_all(mut left: BTreeSet<String>) -> bool {
    let until = Instant::now() + CREATE_WINDOW;
    let mut pause = RETRY_FIRST;
    let mut engine = None;
    loop {
        if engine.is_none() {
            engine = Engine::connect().await.ok();
        }
        if let Some(engine) = &engine {
            let mut removed = Vec::new();
            for name in &left {
                let force = RemoveContainerOptionsBuilder::default().force(true).build();
                if engine
                    .docker()
                    .remove_container(name, Some(force))
                    .await
                    .is_ok()
                {
                    removed.push(name.clone());
                }
            }
            for name in removed {
                left.remove(&name);
            }
        }
        // Not found may mean already gone or not created yet: only the window tells them apart.
        if left.is_empty() || Instant::now() + pause > until {
            return left.is_empty();
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RETRY_MOST);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_taken_back_are_forgotten_and_a_cut_line_still_counts() {
        let input = b"+a\n+b\n-a\n+c\n-zzz\n+d";
        let left = read_names(&input[..]);
        assert_eq!(left.into_iter().collect::<Vec<_>>(), ["b", "c", "d"]);
    }
}
