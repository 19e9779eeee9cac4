//! The call tree the Hatchet and Proton exports write: frame names that are the same for the
//! same program across runs, so `gf2 - gf1` and `proton-viewer -diff` line two runs up.
//!
//! A frame name carries no run label and no pid: the root is `ROOT` (Proton's root name), the
//! pass is the profiler (`ncu`, not `ncu.000`), a process is its name (`app`, not `app [1579]`).
//! What was taken out goes into the node's `metadata` (the run label, the pids), which Hatchet's
//! literal reader ignores. The run's own process steps (the wall time of `ncu … ./app`) are
//! kept as the pass node's own CPU time with no call count, so they neither appear as a sibling
//! of the kernels nor dilute `time / count` averages; their names and wall times are listed in
//! the pass's metadata.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::results::event::{Event, Frame, FrameKind};
use crate::results::profile::Profile;
use crate::results::tree::CallTree;

/// The root frame's name in every export (Proton names its root `ROOT` too).
pub const ROOT_NAME: &str = "ROOT";

/// Each node's metadata by its frame path below the root (the empty path is the root).
pub type Metadata = BTreeMap<Vec<Frame>, BTreeMap<String, Value>>;

/// A tree with stable names and what each renamed node had in its name.
pub struct StableTree {
    pub tree: CallTree,
    pub metadata: Metadata,
}

impl StableTree {
    pub fn of(profile: &Profile) -> Self {
        let mut metadata = Metadata::new();
        let root = metadata.entry(Vec::new()).or_default();
        root.insert("run".into(), Value::from(profile.name.clone()));
        if let Some(profiler) = &profile.profiler {
            root.insert("profiler".into(), Value::from(profiler.clone()));
        }
        if let Some(device) = &profile.device {
            root.insert("device".into(), Value::from(device.clone()));
        }

        let mut pids: BTreeMap<Vec<Frame>, BTreeSet<u32>> = BTreeMap::new();
        let mut steps: BTreeMap<Vec<Frame>, Vec<Value>> = BTreeMap::new();
        let mut events = Vec::with_capacity(profile.events.len());
        for event in &profile.events {
            let mut event = event.clone();
            let mut path = Vec::with_capacity(event.call_path.len());
            for frame in &event.call_path {
                let stable = stable_frame(frame, profile);
                if frame.kind == FrameKind::Process
                    && let Some(pid) = pid_in(&frame.name).or(event.process_id)
                {
                    let mut at = path.clone();
                    at.push(stable.clone());
                    pids.entry(at).or_default().insert(pid);
                }
                path.push(stable);
            }
            if is_process_step(&event) {
                // The step's scope frame is dropped: its wall time becomes the pass's own.
                let step = path.pop();
                steps.entry(path.clone()).or_default().push(json!({
                    "step": step.map(|f| f.name),
                    "wall_ns": event.cpu_time_ns,
                    "pid": event.process_id,
                }));
                event.calls = 0;
            }
            event.call_path = path;
            events.push(event);
        }
        for (path, set) in pids {
            let pids: Vec<u32> = set.into_iter().collect();
            metadata
                .entry(path)
                .or_default()
                .insert("pids".into(), Value::from(pids));
        }
        for (path, list) in steps {
            metadata
                .entry(path)
                .or_default()
                .insert("steps".into(), Value::from(list));
        }
        StableTree {
            tree: CallTree::build(ROOT_NAME, &events),
            metadata,
        }
    }
}

/// A process step of the run (`profile::events_from_run`), not a user scope.
fn is_process_step(event: &Event) -> bool {
    event.gpu_time_ns.is_none()
        && event.attributes.contains_key("argv")
        && event.attributes.contains_key("outcome")
        && event.call_path.last().map(|f| f.kind) == Some(FrameKind::Scope)
        && event.call_path.iter().any(|f| f.kind == FrameKind::Pass)
}

fn stable_frame(frame: &Frame, profile: &Profile) -> Frame {
    let name = match frame.kind {
        // A run without a target names its job after its label too.
        FrameKind::Pass | FrameKind::Job => stable_pass_name(&frame.name, profile),
        FrameKind::Process => process_name(&frame.name),
        _ => frame.name.clone(),
    };
    Frame::new(name, frame.kind)
}

/// `ncu.000` (the run label `<profiler>.<NNN>`) → `ncu`; a caller's own label stays.
fn stable_pass_name(name: &str, profile: &Profile) -> String {
    if let Some(profiler) = &profile.profiler
        && (name == profile.name || is_numbered(name, profiler))
    {
        return profiler.clone();
    }
    name.to_string()
}

fn is_numbered(name: &str, profiler: &str) -> bool {
    name.strip_prefix(profiler)
        .and_then(|rest| rest.strip_prefix('.'))
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// `app [1579]` → `app`, `pid 1579` → `process` (`profile::process_label`'s spellings).
fn process_name(label: &str) -> String {
    if let Some((name, rest)) = label.rsplit_once(" [")
        && rest.strip_suffix(']').is_some_and(all_digits)
    {
        return name.to_string();
    }
    if label.strip_prefix("pid ").is_some_and(all_digits) {
        return "process".to_string();
    }
    label.to_string()
}

fn pid_in(label: &str) -> Option<u32> {
    if let Some((_, rest)) = label.rsplit_once(" [") {
        return rest.strip_suffix(']').and_then(|n| n.parse().ok());
    }
    label.strip_prefix("pid ").and_then(|n| n.parse().ok())
}

fn all_digits(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run::ProfileRun;

    fn baseline() -> ProfileRun {
        let text = include_str!("../../../tests/fixtures/runs/h200-baseline/run.json");
        serde_json::from_str(text).unwrap()
    }

    fn names(tree: &CallTree) -> Vec<(usize, String, &'static str)> {
        tree.root
            .walk()
            .into_iter()
            .map(|(depth, node)| (depth, node.frame.name.clone(), node.frame.kind.as_str()))
            .collect()
    }

    #[test]
    fn two_runs_of_one_program_get_the_same_frames() {
        let first = baseline();
        let mut second = baseline();
        second.label = "ncu.007".into();
        for record in &mut second.kernels {
            record.process_id = Some(4242);
        }
        let a = StableTree::of(&Profile::from_run(&first));
        let b = StableTree::of(&Profile::from_run(&second));
        assert_eq!(names(&a.tree), names(&b.tree));
        let all = names(&a.tree);
        assert_eq!(all[0].1, "ROOT");
        assert!(
            all.iter().any(|(_, n, k)| n == "ncu" && *k == "pass"),
            "{all:?}"
        );
        assert!(
            all.iter().any(|(_, n, k)| n == "app" && *k == "process"),
            "{all:?}"
        );
        assert!(
            !all.iter()
                .any(|(_, n, _)| n.contains("1579") || n.contains(".000"))
        );
        // The pid and the label moved to the metadata.
        assert_eq!(a.metadata[&Vec::new()]["run"], "ncu.000");
        assert!(
            a.metadata
                .values()
                .any(|m| m.get("pids") == Some(&json!([1579])))
        );
        assert!(
            b.metadata
                .values()
                .any(|m| m.get("pids") == Some(&json!([4242])))
        );
    }

    #[test]
    fn the_wall_time_step_is_the_pass_own_time_and_no_call() {
        let tree = StableTree::of(&Profile::from_run(&baseline()));
        assert!(!names(&tree.tree).iter().any(|(_, n, _)| n == "profile"));
        let pass = tree
            .tree
            .root
            .walk()
            .into_iter()
            .find(|(_, node)| node.frame.kind == FrameKind::Pass)
            .map(|(_, node)| node)
            .unwrap();
        // Four kernel launches, no call for the step; its 2.5 s stay as the pass's CPU time.
        assert_eq!(pass.inclusive.count, 4);
        assert_eq!(pass.exclusive.cpu_time_ns, 2.5e9);
        let steps = tree.metadata.values().find_map(|m| m.get("steps")).unwrap();
        assert_eq!(steps[0]["step"], "profile");
    }

    #[test]
    fn names_lose_only_what_polyprof_added() {
        assert_eq!(process_name("app [1579]"), "app");
        assert_eq!(process_name("pid 7"), "process");
        assert_eq!(process_name("my [app]"), "my [app]");
        assert_eq!(pid_in("app [1579]"), Some(1579));
        assert!(is_numbered("ncu.000", "ncu"));
        assert!(!is_numbered("ncu.x", "ncu"));
    }
}
