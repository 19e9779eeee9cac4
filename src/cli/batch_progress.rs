//! The live view of `polyprof batch` on a terminal: one bar for the batch (done / failed /
//! running, ETA) and one line per device with its counts and current job. Device
//! quarantines and moves are printed above the bars (or plainly when there are none).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use polyprof::model::batch::EntryState;
use polyprof::pipeline::batch::pool::{Observer, PoolEvent};
use polyprof::profilers::devices::Device;
use polyprof::results::escape::terminal;

struct DeviceLine {
    bar: ProgressBar,
    done: AtomicUsize,
    failed: AtomicUsize,
}

/// The bars, when shown.
pub struct Progress {
    multi: Option<MultiProgress>,
    main: Option<ProgressBar>,
    lines: HashMap<String, DeviceLine>,
    failed: AtomicUsize,
    /// Ids of the jobs running now.
    running: Mutex<HashSet<String>>,
    quiet: bool,
}

impl Progress {
    /// Bars for `total` jobs on `devices` when `show` (stderr is a terminal and not `-q`);
    /// `quiet` also drops the plain messages.
    pub fn new(
        total: usize,
        done_before: usize,
        devices: &[Device],
        show: bool,
        quiet: bool,
    ) -> Arc<Self> {
        let mut progress = Progress {
            multi: None,
            main: None,
            lines: HashMap::new(),
            failed: AtomicUsize::new(0),
            running: Mutex::new(HashSet::new()),
            quiet,
        };
        if show {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10));
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:32} {pos}/{len} {msg} (ETA {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            let main = multi.add(ProgressBar::new(total as u64).with_style(style));
            main.set_position(done_before as u64);
            main.reset_eta();
            main.enable_steady_tick(Duration::from_millis(200));
            let line_style = ProgressStyle::with_template("  {prefix:<12} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            for device in devices {
                let bar = multi.add(ProgressBar::new_spinner().with_style(line_style.clone()));
                bar.set_prefix(device.name());
                bar.set_message("idle");
                progress.lines.insert(
                    device.name(),
                    DeviceLine {
                        bar,
                        done: AtomicUsize::new(0),
                        failed: AtomicUsize::new(0),
                    },
                );
            }
            progress.main = Some(main);
            progress.multi = Some(multi);
        }
        let progress = Arc::new(progress);
        progress.refresh();
        progress
    }

    /// The pool observer that drives these bars.
    pub fn observer(self: &Arc<Self>) -> Observer {
        let me = self.clone();
        Arc::new(move |event: &PoolEvent| me.on(event))
    }

    fn refresh(&self) {
        if let Some(main) = &self.main {
            main.set_message(format!(
                "done, {} failed, {} running",
                self.failed.load(Ordering::Relaxed),
                self.running.lock().map_or(0, |r| r.len())
            ));
        }
    }

    fn say(&self, text: &str) {
        if self.quiet {
            return;
        }
        let text = &*terminal::text(text);
        match &self.multi {
            Some(multi) => {
                let _ = multi.println(text);
            }
            None => eprintln!("{text}"),
        }
    }

    fn device_line(&self, name: &str, current: Option<&str>) {
        if let Some(line) = self.lines.get(name) {
            let mut text = format!(
                "{} done, {} failed",
                line.done.load(Ordering::Relaxed),
                line.failed.load(Ordering::Relaxed)
            );
            match current {
                Some(id) => text.push_str(&format!("  ▸ {id}")),
                None => text.push_str("  idle"),
            }
            line.bar.set_message(terminal::line(&text).into_owned());
        }
    }

    fn on(&self, event: &PoolEvent) {
        match event {
            PoolEvent::Started { id, device } => {
                if let Ok(mut r) = self.running.lock() {
                    r.insert(id.to_string());
                }
                self.device_line(&device.name(), Some(id));
            }
            PoolEvent::Finished { entry } => {
                let device = entry.device.clone().unwrap_or_default();
                // A job the cascade skipped ran nowhere and failed nothing.
                let ok = matches!(entry.state, EntryState::Succeeded | EntryState::Skipped);
                if let Ok(mut r) = self.running.lock() {
                    r.remove(&entry.id);
                }
                if !ok {
                    self.failed.fetch_add(1, Ordering::Relaxed);
                }
                if let Some(line) = self.lines.get(&device) {
                    let counter = if ok { &line.done } else { &line.failed };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                self.device_line(&device, None);
                if let Some(main) = &self.main {
                    main.inc(1);
                }
            }
            PoolEvent::Moved { id, from, reason } => {
                if let Ok(mut r) = self.running.lock() {
                    r.remove(*id);
                }
                if let Some(line) = self.lines.get(&from.name()) {
                    line.failed.fetch_add(1, Ordering::Relaxed);
                }
                self.device_line(&from.name(), None);
                self.say(&format!(
                    "polyprof batch: job `{id}` failed at the device level on {} ({reason}); moving it to another device",
                    from.name()
                ));
            }
            PoolEvent::Quarantined { device, reason } => {
                if let Some(line) = self.lines.get(&device.name()) {
                    let text = format!("quarantined: {reason}");
                    line.bar.set_message(terminal::line(&text).into_owned());
                }
                // Always said, also under -q: the pool is smaller from here on.
                let text = format!(
                    "polyprof batch: device {} taken out of the pool: {reason}; its queued jobs go to the other devices",
                    device.name()
                );
                let text = terminal::text(&text);
                match &self.multi {
                    Some(multi) => {
                        let _ = multi.println(&text);
                    }
                    None => eprintln!("{text}"),
                }
            }
            PoolEvent::Healthy {
                device,
                after,
                answer,
            } => self.say(&format!(
                "polyprof batch: device {} passed its health check after {after} ({answer}); it stays in the pool",
                device.name()
            )),
            PoolEvent::Warning(text) => self.say(&format!("polyprof batch: warning: {text}")),
        }
        self.refresh();
    }

    /// Remove the bars before the summary is printed.
    pub fn finish(&self) {
        if let Some(main) = &self.main {
            main.finish_and_clear();
        }
        for line in self.lines.values() {
            line.bar.finish_and_clear();
        }
        if let Some(multi) = &self.multi {
            let _ = multi.clear();
        }
    }
}
