//! The call tree: events merged by call path, with exclusive and inclusive metrics.
//!
//! No double counting: GPU time, counts, FLOPs, bytes and user metrics are exclusive where they
//! were recorded and summed up the tree for inclusive values. A scope's CPU time is its wall
//! time, which already contains its child scopes, so it is taken as the scope's INCLUSIVE CPU
//! time and the exclusive part is that minus the children's inclusive CPU time (never below 0;
//! the inclusive value is then re-summed so `inc = exc + Σ children inc` holds everywhere).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::record::FlopCounts;
use crate::results::aggregate::add_flops;
use crate::results::event::{Event, Frame, FrameKind};
use crate::results::units;

/// Additive metrics of a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeMetrics {
    pub count: u64,
    pub cpu_time_ns: f64,
    pub gpu_time_ns: f64,
    pub flops: FlopCounts,
    pub bytes: f64,
    pub metrics: BTreeMap<String, f64>,
}

impl NodeMetrics {
    fn add(&mut self, other: &NodeMetrics) {
        self.count += other.count;
        self.cpu_time_ns += other.cpu_time_ns;
        self.gpu_time_ns += other.gpu_time_ns;
        add_flops(&mut self.flops, &other.flops);
        self.bytes += other.bytes;
        for (name, value) in &other.metrics {
            *self.metrics.entry(name.clone()).or_insert(0.0) += value;
        }
    }
}

/// One node: a frame reached by one call path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeNode {
    pub frame: Frame,
    pub exclusive: NodeMetrics,
    pub inclusive: NodeMetrics,
    pub children: Vec<TreeNode>,
    /// Wall time recorded by this node's own scope events (inclusive by nature).
    #[serde(skip)]
    own_wall_ns: Option<f64>,
}

impl TreeNode {
    fn new(frame: Frame) -> Self {
        TreeNode {
            frame,
            exclusive: NodeMetrics::default(),
            inclusive: NodeMetrics::default(),
            children: Vec::new(),
            own_wall_ns: None,
        }
    }

    fn child(&mut self, frame: &Frame) -> &mut TreeNode {
        let index = match self.children.iter().position(|c| &c.frame == frame) {
            Some(index) => index,
            None => {
                self.children.push(TreeNode::new(frame.clone()));
                self.children.len() - 1
            }
        };
        &mut self.children[index]
    }

    fn finish(&mut self) {
        let mut children_inc = NodeMetrics::default();
        for child in &mut self.children {
            child.finish();
            children_inc.add(&child.inclusive);
        }
        // Wall time of this node's scopes is inclusive; what its children do not cover is its own.
        self.exclusive.cpu_time_ns = self
            .own_wall_ns
            .map_or(0.0, |wall| (wall - children_inc.cpu_time_ns).max(0.0));
        let mut inclusive = self.exclusive.clone();
        inclusive.add(&children_inc);
        self.inclusive = inclusive;
    }

    /// Every node, depth first, with its depth.
    pub fn walk(&self) -> Vec<(usize, &TreeNode)> {
        let mut out = Vec::new();
        let mut stack = vec![(0usize, self)];
        while let Some((depth, node)) = stack.pop() {
            out.push((depth, node));
            for child in node.children.iter().rev() {
                stack.push((depth + 1, child));
            }
        }
        out
    }
}

/// The call tree of a profile, under a synthetic root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallTree {
    pub root: TreeNode,
}

impl CallTree {
    /// Merge `events` by call path under a root named `name`.
    pub fn build(name: &str, events: &[Event]) -> Self {
        let mut root = TreeNode::new(Frame::new(name, FrameKind::Root));
        for event in events {
            let mut node = &mut root;
            for frame in &event.call_path {
                node = node.child(frame);
            }
            let own = &mut node.exclusive;
            own.count += event.calls;
            own.gpu_time_ns += event.gpu_time_ns.unwrap_or(0.0);
            add_flops(&mut own.flops, &event.flops);
            own.bytes += event.bytes.unwrap_or(0.0);
            for (metric, value) in &event.metrics {
                *own.metrics.entry(metric.clone()).or_insert(0.0) += value;
            }
            if let Some(wall) = event.cpu_time_ns {
                node.own_wall_ns = Some(node.own_wall_ns.unwrap_or(0.0) + wall);
            }
        }
        root.finish();
        CallTree { root }
    }

    /// Names of every user metric in the tree, sorted.
    pub fn metric_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.root.inclusive.metrics.keys().cloned().collect();
        names.sort();
        names
    }

    /// An indented text tree with inclusive GPU and CPU time and calls per node.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (depth, node) in self.root.walk() {
            let inc = &node.inclusive;
            let mut parts = Vec::new();
            if inc.gpu_time_ns > 0.0 {
                parts.push(format!("gpu {}", units::time_ns(inc.gpu_time_ns)));
            }
            if inc.cpu_time_ns > 0.0 {
                parts.push(format!("cpu {}", units::time_ns(inc.cpu_time_ns)));
            }
            if node.exclusive.count > 0 {
                parts.push(format!("calls {}", node.exclusive.count));
            }
            out.push_str(&format!(
                "{}{} [{}]  {}\n",
                "  ".repeat(depth),
                node.frame.name,
                node.frame.kind.as_str(),
                parts.join("  ")
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(path: &[(&str, FrameKind)], cpu: Option<f64>, gpu: Option<f64>) -> Event {
        Event {
            call_path: path.iter().map(|(n, k)| Frame::new(*n, *k)).collect(),
            cpu_time_ns: cpu,
            gpu_time_ns: gpu,
            calls: 1,
            ..Default::default()
        }
    }

    #[test]
    fn nested_scope_time_is_not_counted_twice() {
        use FrameKind::{Kernel, Scope};
        let events = vec![
            event(&[("outer", Scope)], Some(1_000.0), None),
            event(&[("outer", Scope), ("inner", Scope)], Some(600.0), None),
            event(
                &[("outer", Scope), ("inner", Scope), ("k", Kernel)],
                None,
                Some(250.0),
            ),
            event(&[("outer", Scope), ("k", Kernel)], None, Some(50.0)),
        ];
        let tree = CallTree::build("root", &events);
        let outer = &tree.root.children[0];
        assert_eq!(outer.inclusive.cpu_time_ns, 1_000.0);
        assert_eq!(outer.exclusive.cpu_time_ns, 400.0);
        assert_eq!(outer.inclusive.gpu_time_ns, 300.0);
        assert_eq!(outer.exclusive.gpu_time_ns, 0.0);
        assert_eq!(tree.root.inclusive.cpu_time_ns, 1_000.0);
        assert_eq!(tree.root.inclusive.count, 4);
        // inc = exc + Σ children inc at every node.
        for (_, node) in tree.root.walk() {
            let children: f64 = node.children.iter().map(|c| c.inclusive.cpu_time_ns).sum();
            assert_eq!(
                node.inclusive.cpu_time_ns,
                node.exclusive.cpu_time_ns + children
            );
        }
        let text = tree.render();
        assert!(
            text.contains("  inner [scope]  gpu 250.0 ns  cpu 600.0 ns  calls 1"),
            "{text}"
        );
    }

    #[test]
    fn children_longer_than_the_parent_clamp_at_zero() {
        use FrameKind::Scope;
        let events = vec![
            event(&[("a", Scope)], Some(100.0), None),
            event(&[("a", Scope), ("b", Scope)], Some(150.0), None),
        ];
        let tree = CallTree::build("root", &events);
        let a = &tree.root.children[0];
        assert_eq!(a.exclusive.cpu_time_ns, 0.0);
        assert_eq!(a.inclusive.cpu_time_ns, 150.0);
    }
}
