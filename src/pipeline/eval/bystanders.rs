//! Workers started ahead of their turn are bystanders of the candidate being judged
//! (docs/eval-harness.md, "The warm evaluator"): the next candidate's scored worker and the work
//! pass's worker load their interpreter and torch while the current candidate runs, and are held
//! stopped (SIGSTOP, then SIGCONT) while any of its timing blocks runs, as the other side of the
//! eval is. A worker joins once it has connected (its pid known; the worker connects before it
//! imports torch, so what runs before that is the interpreter's start alone) and leaves when its
//! own turn takes it, or when it is dropped. One that joins while a block runs is stopped at once.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::pipeline::eval::freeze::{Frozen, start_time};

/// The workers started ahead of their turn, shared by every eval of one run of many.
#[derive(Debug, Clone, Default)]
pub struct Bystanders {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    members: Vec<Member>,
    next_id: u64,
    /// How many holds are in force: the members are stopped while any is.
    holds: usize,
}

#[derive(Debug)]
struct Member {
    id: u64,
    pid: u32,
    /// The process's start time (`/proc/PID/stat`): a pid that was reused is never signalled.
    started: Option<u64>,
    frozen: Option<Frozen>,
}

impl Member {
    fn stop(&mut self) {
        if self.frozen.is_none() && self.started.is_some() && start_time(self.pid) == self.started {
            self.frozen = Some(Frozen::stop(self.pid));
        }
    }
}

/// A worker's place among the bystanders; it leaves (continued, if stopped) when this drops.
#[derive(Debug)]
pub struct Membership {
    bystanders: Bystanders,
    id: u64,
}

/// The bystanders held stopped until this drops.
#[derive(Debug)]
pub struct HeldStill {
    bystanders: Bystanders,
}

impl Bystanders {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while the list was held leaves it whole: every change is one push or remove.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Worker `pid` joins; stopped at once if a hold is in force.
    pub fn join(&self, pid: u32) -> Membership {
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        let mut member = Member {
            id,
            pid,
            started: start_time(pid),
            frozen: None,
        };
        if inner.holds > 0 {
            member.stop();
        }
        inner.members.push(member);
        Membership {
            bystanders: self.clone(),
            id,
        }
    }

    /// Stop every bystander until the returned hold drops.
    pub fn hold_still(&self) -> HeldStill {
        let mut inner = self.lock();
        inner.holds += 1;
        for member in &mut inner.members {
            member.stop();
        }
        HeldStill {
            bystanders: self.clone(),
        }
    }
}

impl HeldStill {
    /// How many bystanders are stopped now (those that joined during the hold included).
    pub fn stopped(&self) -> u32 {
        let inner = self.bystanders.lock();
        let stopped = inner.members.iter().filter(|m| m.frozen.is_some()).count();
        u32::try_from(stopped).unwrap_or(u32::MAX)
    }
}

impl Drop for HeldStill {
    fn drop(&mut self) {
        let mut inner = self.bystanders.lock();
        inner.holds = inner.holds.saturating_sub(1);
        if inner.holds == 0 {
            for member in &mut inner.members {
                member.frozen = None;
            }
        }
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        let mut inner = self.bystanders.lock();
        inner.members.retain(|m| m.id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::eval::freeze::process_state;
    use std::process::{Child, Command};
    use std::time::Duration;

    /// The state of `pid` once it is `want`, or after a second of waiting for it.
    fn settled_state(pid: u32, want: char) -> char {
        let state = || process_state(pid).unwrap_or('?');
        for _ in 0..100 {
            if state() == want {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        state()
    }

    fn sleeper() -> Child {
        Command::new("sleep").arg("30").spawn().unwrap()
    }

    fn end(mut child: Child) {
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn members_are_stopped_during_a_hold_and_continued_after() {
        let bystanders = Bystanders::default();
        let child = sleeper();
        let _membership = bystanders.join(child.id());
        {
            let held = bystanders.hold_still();
            assert_eq!(held.stopped(), 1);
            assert_eq!(settled_state(child.id(), 'T'), 'T');
        }
        assert_ne!(settled_state(child.id(), 'S'), 'T');
        end(child);
    }

    #[test]
    fn a_worker_joining_during_a_hold_is_stopped_at_once_and_leaving_continues_it() {
        let bystanders = Bystanders::default();
        let held = bystanders.hold_still();
        let child = sleeper();
        let membership = bystanders.join(child.id());
        assert_eq!(held.stopped(), 1);
        assert_eq!(settled_state(child.id(), 'T'), 'T');
        // Its turn takes it while the hold is still in force: it runs again.
        drop(membership);
        assert_ne!(settled_state(child.id(), 'S'), 'T');
        assert!(bystanders.lock().members.is_empty());
        drop(held);
        end(child);
    }

    #[test]
    fn a_pid_whose_process_changed_is_not_signalled() {
        let bystanders = Bystanders::default();
        let child = sleeper();
        let _membership = bystanders.join(child.id());
        // As if the pid had been reused by a process started at another time.
        bystanders.lock().members[0].started = Some(1);
        let held = bystanders.hold_still();
        assert_eq!(held.stopped(), 0);
        assert_ne!(settled_state(child.id(), 'S'), 'T');
        drop(held);
        end(child);
    }

    #[test]
    fn nested_holds_continue_members_only_when_the_last_ends() {
        let bystanders = Bystanders::default();
        let child = sleeper();
        let _membership = bystanders.join(child.id());
        let outer = bystanders.hold_still();
        let inner = bystanders.hold_still();
        drop(inner);
        assert_eq!(settled_state(child.id(), 'T'), 'T');
        drop(outer);
        assert_ne!(settled_state(child.id(), 'S'), 'T');
        end(child);
    }
}
