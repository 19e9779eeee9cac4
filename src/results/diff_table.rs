//! [`RunDiff`] as text: the GPU-time headline, the kernel table fitted to the terminal
//! ([`crate::results::fit`]), unmatched kernels and the verdict.

use crate::results::diff::{FEW_LAUNCHES, FEW_LAUNCHES_FLOOR_FACTOR, RunDiff, Side, change_pct};
use crate::results::fit::{self, Column, Shrink};
use crate::results::names::{MIN_NAME_WIDTH, fit_names};
use crate::results::units;

/// What goes when the table is too wide, in this order.
const SHRINKS: &[Shrink] = &[
    Shrink::Merge {
        left: "n A",
        right: "n B",
        header: "n A / B",
    },
    Shrink::Merge {
        left: "median A",
        right: "median B",
        header: "median A / B",
    },
    Shrink::Merge {
        left: "min–p90 A",
        right: "min–p90 B",
        header: "min–p90 A / B",
    },
];

/// What an `only in A: NAME (N launches, median T)` line holds besides the name.
const NAME_PREFIX: usize = 40;

fn signed_pct(value: Option<f64>) -> String {
    units::or_dash(value.map(|v| format!("{v:+.1} %")))
}

impl RunDiff {
    /// A terminal table `width` columns wide (kernel names shortened in the middle to fit;
    /// `None`: full names), after the GPU-time headline; then unmatched kernels and the verdict.
    pub fn render(&self, width: Option<usize>) -> String {
        // Kernel names and labels show their control characters, never send them.
        crate::results::escape::terminal::text(&self.render_unescaped(width)).into_owned()
    }

    fn render_unescaped(&self, width: Option<usize>) -> String {
        let name_width = width.map(|w| w.saturating_sub(NAME_PREFIX).max(MIN_NAME_WIDTH));
        let time = |v: Option<f64>| units::or_dash(v.map(units::time_ns));
        let spread = |side: &Side| match (side.min_ns, side.p90_ns) {
            (Some(min), Some(p90)) if side.count > 1 => {
                format!("{}–{}", units::time_ns(min), units::time_ns(p90))
            }
            _ => "-".to_string(),
        };
        let mut text = format!("A = {}, B = {}\n", self.a, self.b);
        text.push_str(&format!(
            "total GPU time {} → {} ({})",
            units::time_ns(self.gpu_time_a_ns),
            units::time_ns(self.gpu_time_b_ns),
            signed_pct(self.gpu_time_change_pct)
        ));
        if self.wall.a_s.is_some() || self.wall.b_s.is_some() {
            let secs = |v: Option<f64>| units::or_dash(v.map(|s| format!("{s:.2} s")));
            text.push_str(&format!(
                "; wall {} → {} ({})",
                secs(self.wall.a_s),
                secs(self.wall.b_s),
                signed_pct(self.wall.change_pct)
            ));
        }
        text.push('\n');
        let mut text = fit::wrap_prose(&text, width, 0);
        if !self.kernels.is_empty() {
            let mut columns: Vec<Column> = [
                ("Kernel", false),
                ("n A", true),
                ("n B", true),
                ("median A", true),
                ("median B", true),
                ("Δ median", true),
                ("min–p90 A", true),
                ("min–p90 B", true),
                ("Change", false),
            ]
            .iter()
            .map(|(header, numeric)| Column::new(header, *numeric))
            .collect();
            for kernel in &self.kernels {
                let cells = [
                    kernel.short_name.clone(),
                    kernel.a.count.to_string(),
                    kernel.b.count.to_string(),
                    time(kernel.a.gpu_time_ns),
                    time(kernel.b.gpu_time_ns),
                    signed_pct(kernel.gpu_time_change_pct),
                    spread(&kernel.a),
                    spread(&kernel.b),
                    kernel.change.as_str().to_string(),
                ];
                for (column, cell) in columns.iter_mut().zip(cells) {
                    column.cells.push(cell);
                }
            }
            let fitted = fit::fit(columns, SHRINKS, width, fit_names);
            text.push_str(&format!("{}\n", fitted.table));
        }
        let mut tail = String::new();
        for (label, list) in [
            ("only in A", &self.only_in_a),
            ("only in B", &self.only_in_b),
        ] {
            let names: Vec<String> = list.iter().map(|k| k.short_name.clone()).collect();
            let shown = match name_width {
                Some(w) => fit_names(&names, w),
                None => names,
            };
            for (kernel, name) in list.iter().zip(shown) {
                tail.push_str(&format!(
                    "{label}: {name} ({} launches, median {})\n",
                    kernel.side.count,
                    time(kernel.side.gpu_time_ns)
                ));
            }
        }
        let show_steps =
            self.kernels.is_empty() && self.only_in_a.is_empty() && self.only_in_b.is_empty();
        for step in self.steps.iter().filter(|s| show_steps || s.regressed) {
            let state = |v: Option<bool>| match v {
                Some(true) => "accepted",
                Some(false) => "not accepted",
                None => "absent",
            };
            tail.push_str(&format!(
                "step {}: {} → {}{}\n",
                step.name,
                state(step.a_accepted),
                state(step.b_accepted),
                if step.regressed { " (regressed)" } else { "" }
            ));
        }
        if self.filtered > 0 {
            tail.push_str(&format!(
                "{} kernel(s) below --min-duration {} left out\n",
                self.filtered,
                units::time_ns(self.min_duration_ns)
            ));
        }
        tail.push_str(&format!(
            "matched GPU time {} → {} ({}); {} regressed, {} improved beyond ±{} % and {} ({} \
             for kernels with fewer than {FEW_LAUNCHES} launches a side)\n",
            units::time_ns(self.matched_gpu_time_a_ns),
            units::time_ns(self.matched_gpu_time_b_ns),
            signed_pct(change_pct(
                Some(self.matched_gpu_time_a_ns),
                Some(self.matched_gpu_time_b_ns)
            )),
            self.regressions,
            self.improvements,
            self.threshold_pct,
            units::time_ns(self.floor_ns),
            units::time_ns(self.floor_ns * FEW_LAUNCHES_FLOOR_FACTOR)
        ));
        text.push_str(&fit::wrap_prose(&tail, width, 0));
        text
    }
}
