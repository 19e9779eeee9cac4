//! Hatchet literal JSON: `[root]`, loadable with `hatchet.GraphFrame.from_literal`.
//!
//! Rules (llnl-hatchet's literal reader): the metric columns come only from the root's
//! `metrics` keys, so every key is written on every node and the root's exclusive values are 0;
//! keys with `(inc)` are inclusive, the rest exclusive; `frame` has `name` and `type`. Metric
//! names follow Proton's tree output (`time (ns)` = GPU time, `count`, `flops32`, `bytes`). Exclusive values never double count (see [`crate::results::tree`]).

use std::io::Write;

use serde_json::{Map, Value, json};

use crate::model::error::Result;
use crate::results::event::Frame;
use crate::results::export::stable_tree::{Metadata, StableTree};
use crate::results::export::{Exporter, Format, Report, write_json};
use crate::results::tree::{CallTree, NodeMetrics, TreeNode};

/// Built-in metric names, in column order; user metrics follow, sorted.
pub const CORE_METRICS: &[&str] = &[
    "count",
    "time (ns)",
    "cpu_time (ns)",
    "flops16",
    "flops32",
    "flops64",
    "bytes",
];

/// The inclusive name of a metric.
pub fn inclusive(name: &str) -> String {
    format!("{name} (inc)")
}

/// A user metric's column name: never one of the core names and never containing `(inc)`
/// (which would make Hatchet take it for an inclusive column).
fn user_column(name: &str) -> String {
    let clean = name.replace("(inc)", "[inc]");
    if CORE_METRICS.contains(&clean.as_str()) {
        format!("user.{clean}")
    } else {
        clean
    }
}

fn values(metrics: &NodeMetrics, user: &[String]) -> Vec<(String, Value)> {
    let mut out = vec![
        ("count".to_string(), json!(metrics.count)),
        ("time (ns)".to_string(), json!(metrics.gpu_time_ns)),
        ("cpu_time (ns)".to_string(), json!(metrics.cpu_time_ns)),
        (
            "flops16".to_string(),
            json!(metrics.flops.by_width(16).unwrap_or(0.0)),
        ),
        (
            "flops32".to_string(),
            json!(metrics.flops.by_width(32).unwrap_or(0.0)),
        ),
        (
            "flops64".to_string(),
            json!(metrics.flops.by_width(64).unwrap_or(0.0)),
        ),
        ("bytes".to_string(), json!(metrics.bytes)),
    ];
    for name in user {
        let value = metrics.metrics.get(name).copied().unwrap_or(0.0);
        out.push((user_column(name), json!(value)));
    }
    out
}

fn node_json(node: &TreeNode, user: &[String], at: &mut Vec<Frame>, meta: &Metadata) -> Value {
    let mut metrics = Map::new();
    for (name, value) in values(&node.exclusive, user) {
        metrics.insert(name, value);
    }
    for (name, value) in values(&node.inclusive, user) {
        metrics.insert(inclusive(&name), value);
    }
    node_object(node, metrics, at, meta, &mut |child, at| {
        node_json(child, user, at, meta)
    })
}

/// `frame`, `metrics`, `metadata` (what the stable frame name leaves out; Hatchet ignores it)
/// and `children` of one node; `child` writes each child with the path extended.
pub(crate) fn node_object(
    node: &TreeNode,
    metrics: Map<String, Value>,
    at: &mut Vec<Frame>,
    meta: &Metadata,
    child: &mut dyn FnMut(&TreeNode, &mut Vec<Frame>) -> Value,
) -> Value {
    let mut object = Map::new();
    object.insert(
        "frame".to_string(),
        json!({"name": node.frame.name, "type": node.frame.kind.as_str()}),
    );
    object.insert("metrics".to_string(), Value::Object(metrics));
    if let Some(data) = meta.get(at.as_slice()) {
        object.insert("metadata".to_string(), json!(data));
    }
    if !node.children.is_empty() {
        let mut children = Vec::with_capacity(node.children.len());
        for c in &node.children {
            at.push(c.frame.clone());
            children.push(child(c, at));
            at.pop();
        }
        object.insert("children".to_string(), Value::Array(children));
    }
    Value::Object(object)
}

/// The Hatchet literal of a call tree (no metadata).
pub fn literal(tree: &CallTree) -> Value {
    literal_with(tree, &Metadata::new())
}

/// The Hatchet literal of a call tree with each node's metadata.
pub fn literal_with(tree: &CallTree, meta: &Metadata) -> Value {
    let user = tree.metric_names();
    Value::Array(vec![node_json(&tree.root, &user, &mut Vec::new(), meta)])
}

pub struct HatchetExporter;

impl Exporter for HatchetExporter {
    fn format(&self) -> Format {
        Format::Hatchet
    }

    fn export(&self, report: &Report, out: &mut dyn Write) -> Result<()> {
        let stable = StableTree::of(&report.profile);
        write_json(
            &literal_with(&stable.tree, &stable.metadata),
            out,
            "Hatchet export",
            true,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::event::{Event, Frame, FrameKind};

    #[test]
    fn root_registers_every_metric_zero_filled() {
        let mut scope = Event {
            call_path: vec![Frame::new("step", FrameKind::Scope)],
            cpu_time_ns: Some(900.0),
            calls: 1,
            ..Default::default()
        };
        scope.metrics.insert("tokens".into(), 3.0);
        scope.metrics.insert("count".into(), 1.0);
        let kernel = Event {
            call_path: vec![
                Frame::new("step", FrameKind::Scope),
                Frame::new("gemm", FrameKind::Kernel),
            ],
            gpu_time_ns: Some(100.0),
            calls: 2,
            ..Default::default()
        };
        let tree = CallTree::build("run", &[scope, kernel]);
        let value = literal(&tree);
        let root = &value[0];
        assert_eq!(root["frame"], json!({"name": "run", "type": "root"}));
        let metrics = root["metrics"].as_object().unwrap();
        for name in CORE_METRICS
            .iter()
            .map(|s| s.to_string())
            .chain(["tokens".into(), "user.count".into()])
        {
            assert_eq!(metrics[&name].as_f64(), Some(0.0), "{name}");
            assert!(metrics.contains_key(&inclusive(&name)), "{name}");
        }
        assert_eq!(metrics["time (ns) (inc)"].as_f64(), Some(100.0));
        assert_eq!(metrics["count (inc)"].as_u64(), Some(3));
        let gemm = &root["children"][0]["children"][0];
        assert_eq!(gemm["frame"]["type"], "kernel");
        assert_eq!(gemm["metrics"]["time (ns)"].as_f64(), Some(100.0));
        assert!(gemm.get("children").is_none());
    }
}
