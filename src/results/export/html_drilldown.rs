//! The kernel drilldown of the HTML page: one hidden panel per kernel (by short name) that a
//! click on its table row or roofline point opens: launch configuration, registers, shared
//! memory, occupancy and its limiter, SM and pipe loads, memory traffic per level, the verdict
//! with the figure that decided it, the profiler's rule results, and its launches (with a
//! button that finds them on the timeline). Every figure is a `<dd data-field data-v>` so that
//! tests read them back and compare them with `--format json`.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::model::record::{KernelRecord, RuleResult};
use crate::model::run::ProfileRun;
use crate::model::verdict_metrics::{
    ALU_PIPE, FMA_PIPE, ISSUE_ACTIVE, LSU_PIPE, SM_CLOCK, TENSOR_PIPE,
};
use crate::results::aggregate::KeyAverage;
use crate::results::export::Report;
use crate::results::export::roofline_chart::escape;
use crate::results::levels::{Level, cache_levels};
use crate::results::rules;
use crate::results::units;

/// ncu's occupancy limits, each the blocks per SM one resource allows; the smallest limits.
const OCCUPANCY_LIMITS: [(&str, &str); 4] = [
    ("launch__occupancy_limit_registers", "registers"),
    ("launch__occupancy_limit_shared_mem", "shared memory"),
    ("launch__occupancy_limit_warps", "warps"),
    ("launch__occupancy_limit_blocks", "blocks per SM"),
];

const PIPES: [(&str, &str); 5] = [
    (TENSOR_PIPE, "tensor pipe"),
    (FMA_PIPE, "FMA pipe"),
    (ALU_PIPE, "ALU pipe"),
    (LSU_PIPE, "load/store pipe"),
    (ISSUE_ACTIVE, "issue"),
];

/// Launches listed in a panel; the rest are counted.
const LISTED_LAUNCHES: usize = 20;

/// The panels of `rows` (kernel rows), in one hidden section the page's script opens.
/// Launches and rule results are looked up by name in maps built once: a search of every
/// record per row made the page quadratic in distinct kernel names (issue 43).
pub fn panels(report: &Report, rows: &[&KeyAverage]) -> String {
    let mut html = String::from(
        "<section id=\"drilldown\"><h2>Kernel</h2><p class=\"note\" id=\"drilldown-hint\">Click \
         a kernel's row or its roofline point to open its figures here.</p>",
    );
    let launches = report
        .run
        .as_ref()
        .map(launches_by_name)
        .unwrap_or_default();
    let rules_by_name = report
        .run
        .as_ref()
        .map(rules::by_kernel)
        .unwrap_or_default();
    for (index, row) in rows.iter().enumerate() {
        let of_row = launches
            .get(row.name.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let rule_list = rules_by_name
            .get(&row.name)
            .map(Vec::as_slice)
            .unwrap_or_default();
        panel(&mut html, report, index, row, of_row, rule_list);
    }
    html.push_str("</section>");
    html
}

/// Each record under its short name and its full name (once where they are the same), in
/// the run's order: a row's launches are the records either name matches.
fn launches_by_name(run: &ProfileRun) -> HashMap<&str, Vec<&KernelRecord>> {
    let mut map: HashMap<&str, Vec<&KernelRecord>> = HashMap::new();
    for record in &run.kernels {
        map.entry(record.short_name.as_str())
            .or_default()
            .push(record);
        if record.name != record.short_name {
            map.entry(record.name.as_str()).or_default().push(record);
        }
    }
    map
}

/// One value when every launch agrees (`data-v` holds it), else the range.
fn figure(html: &mut String, field: &str, label: &str, values: &[f64], show: fn(f64) -> String) {
    if values.is_empty() {
        return;
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (v, text) = if lo == hi {
        (lo.to_string(), show(lo))
    } else {
        (String::new(), format!("{} – {}", show(lo), show(hi)))
    };
    let _ = write!(
        html,
        "<dt>{}</dt><dd data-field=\"{}\" data-v=\"{v}\">{}</dd>",
        escape(label),
        escape(field),
        escape(&text)
    );
}

fn text_figure(html: &mut String, field: &str, label: &str, text: &str) {
    let _ = write!(
        html,
        "<dt>{}</dt><dd data-field=\"{}\">{}</dd>",
        escape(label),
        escape(field),
        escape(text)
    );
}

fn count(v: f64) -> String {
    format!("{v:.0}")
}

fn panel(
    html: &mut String,
    report: &Report,
    index: usize,
    row: &KeyAverage,
    launches: &[&KernelRecord],
    rule_list: &[RuleResult],
) {
    let full = launches
        .first()
        .map(|k| k.name.clone())
        .unwrap_or_else(|| row.name.clone());
    let _ = write!(
        html,
        "<div class=\"kernel-detail\" id=\"kernel-{index}\" data-short=\"{short}\" hidden>\
         <h3 class=\"name\">{name}</h3>",
        short = escape(&row.name),
        name = crate::results::escape::html::name(&full),
    );
    let values = |f: &dyn Fn(&KernelRecord) -> Option<f64>| -> Vec<f64> {
        launches.iter().filter_map(|k| f(k)).collect()
    };
    let dims = |d: Option<[u64; 3]>| d.map(|[x, y, z]| format!("({x}, {y}, {z})"));

    // Launches and configuration.
    html.push_str("<div class=\"cols\"><div><h4>Launch</h4><dl>");
    figure(html, "calls", "launches", &[row.calls as f64], count);
    if let Some(total) = row.gpu_total_ns {
        figure(html, "gpu_time_ns", "GPU time", &[total], units::time_ns);
    }
    let grids: Vec<String> = launches.iter().filter_map(|k| dims(k.grid)).collect();
    let blocks: Vec<String> = launches.iter().filter_map(|k| dims(k.block)).collect();
    for (field, label, list) in [("grid", "grid", grids), ("block", "block", blocks)] {
        if let Some(first) = list.first() {
            let text = match list.iter().all(|g| g == first) {
                true => first.clone(),
                false => format!("{first} and others"),
            };
            text_figure(html, field, label, &text);
        }
    }
    figure(
        html,
        "registers_per_thread",
        "registers per thread",
        &values(&|k| k.registers_per_thread.map(f64::from)),
        count,
    );
    figure(
        html,
        "shared_mem_per_block",
        "shared memory per block",
        &values(&|k| k.shared_mem_per_block.map(|b| b as f64)),
        units::bytes,
    );
    html.push_str("</dl></div>");

    // Occupancy and its limiter.
    html.push_str("<div><h4>Occupancy</h4><dl>");
    figure(
        html,
        "achieved_occupancy_pct",
        "achieved",
        &values(&|k| k.achieved_occupancy_pct),
        pct_text,
    );
    figure(
        html,
        "theoretical_occupancy_pct",
        "theoretical",
        &values(&|k| k.theoretical_occupancy_pct),
        pct_text,
    );
    if let Some(first) = launches.first() {
        let limits: Vec<(&str, f64)> = OCCUPANCY_LIMITS
            .iter()
            .filter_map(|(metric, label)| first.metric(metric).map(|v| (*label, v)))
            .collect();
        if let Some((label, blocks)) = limits.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1)) {
            text_figure(
                html,
                "occupancy_limiter",
                "limited by",
                &format!("{label} ({blocks:.0} blocks per SM)"),
            );
        }
    }
    html.push_str("</dl></div>");

    // SM and pipe loads.
    html.push_str("<div><h4>SM</h4><dl>");
    figure(
        html,
        "sm_throughput_pct",
        "SM throughput",
        &values(&|k| k.sm_throughput_pct),
        pct_text,
    );
    for (metric, label) in PIPES {
        figure(
            html,
            metric,
            label,
            &values(&|k| k.metric(metric)),
            pct_text,
        );
    }
    figure(
        html,
        SM_CLOCK,
        "SM clock",
        &values(&|k| k.metric(SM_CLOCK)),
        |hz| format!("{:.3} GHz", hz / 1e9),
    );
    html.push_str("</dl></div>");

    // Memory traffic per level.
    html.push_str("<div><h4>Memory</h4><dl>");
    figure(
        html,
        "memory_throughput_pct",
        "memory throughput",
        &values(&|k| k.memory_throughput_pct),
        pct_text,
    );
    figure(
        html,
        "dram_bytes",
        "DRAM bytes",
        &values(&|k| k.total_dram_bytes()),
        units::bytes,
    );
    figure(
        html,
        "dram_bytes_read",
        "DRAM read",
        &values(&|k| k.dram_bytes_read),
        units::bytes,
    );
    figure(
        html,
        "dram_bytes_write",
        "DRAM written",
        &values(&|k| k.dram_bytes_write),
        units::bytes,
    );
    for level in [Level::L2, Level::L1] {
        let bytes: Vec<f64> = launches
            .iter()
            .flat_map(|k| cache_levels(k))
            .filter(|t| t.level == level)
            .map(|t| t.bytes)
            .collect();
        figure(
            html,
            &format!("{}_bytes", level.id()),
            &format!("{} bytes", level.label()),
            &bytes,
            units::bytes,
        );
    }
    html.push_str("</dl></div></div>");

    // The verdict and the figure that decided it.
    let point = &row.roofline;
    let _ = write!(
        html,
        "<h4>Verdict</h4><p class=\"verdict\" data-bound=\"{bound}\" data-decided-by=\"{decided}\">\
         <b>{label}</b> — {words}</p>",
        bound = point.bound,
        decided = escape(&point.decided_by.text()),
        label = escape(&point.bound_label()),
        words = escape(&point.verdict()),
    );

    // The profiler's rule results, advice first.
    if !rule_list.is_empty() {
        let profiler = report
            .run
            .as_ref()
            .map(|r| r.profiler.name.clone())
            .unwrap_or_default();
        let _ = write!(
            html,
            "<h4>{} rules</h4><ul class=\"rules\">",
            escape(&profiler)
        );
        for rule in rules::ranked(rule_list) {
            let speedup = rule
                .estimated_speedup_pct
                .map(|p| format!(" (estimated speedup {p:.0} %)"))
                .unwrap_or_default();
            let _ = write!(
                html,
                "<li data-rule=\"{name}\" data-kind=\"{kind}\"><b>{kind} {name}</b>{speedup}: {text}</li>",
                name = escape(&rule.name),
                kind = escape(&rule.kind),
                text = escape(&rule.description),
            );
        }
        html.push_str("</ul>");
    }

    // Its launches, and the way to them on the timeline.
    if !launches.is_empty() {
        let _ = write!(
            html,
            "<h4>Launches</h4><p><button class=\"show-on-timeline\" data-find=\"{}\">show on \
             the timeline</button></p><table class=\"launches\"><thead><tr><th>launch</th>\
             <th>process</th><th>stream</th><th>grid</th><th>block</th><th>GPU time</th>\
             </tr></thead><tbody>",
            escape(&row.name)
        );
        for k in launches.iter().take(LISTED_LAUNCHES) {
            let _ = write!(
                html,
                "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td class=\"n\" data-v=\"{}\">{}</td></tr>",
                k.launch_id,
                k.process_id.map(|p| p.to_string()).unwrap_or_default(),
                escape(&k.stream.clone().unwrap_or_default()),
                escape(&dims(k.grid).unwrap_or_default()),
                escape(&dims(k.block).unwrap_or_default()),
                k.duration_ns.map(|d| d.to_string()).unwrap_or_default(),
                k.duration_ns.map(units::time_ns).unwrap_or_default(),
            );
        }
        html.push_str("</tbody></table>");
        if launches.len() > LISTED_LAUNCHES {
            let _ = write!(
                html,
                "<p class=\"note\">and {} more launches</p>",
                launches.len() - LISTED_LAUNCHES
            );
        }
    }
    html.push_str("</div>");
}

fn pct_text(v: f64) -> String {
    format!("{} %", units::pct(v))
}
