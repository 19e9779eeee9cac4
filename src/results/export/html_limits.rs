//! What one page holds of a run with very many distinct kernels: a page that lists 100,000
//! kernels in its table and draws as many roofline points is 100 MB that no browser opens in
//! minutes (issue 43). The page keeps the largest (the table by its sort, the chart by GPU
//! time), says how many more there are, and leaves every kernel to `--format json` and `csv`.
//! The timeline keeps every launch: it is compact and drawn on a canvas.

use crate::results::export::roofline_chart::RooflineChart;

/// The kernel table's rows at most.
pub const MAX_TABLE_ROWS: usize = 1000;
/// A roofline chart's points at most, per run.
pub const MAX_POINTS: usize = 1000;
/// The names a "not placed" note lists at most.
pub const MAX_NAMES: usize = 50;

/// `chart` with only the [`MAX_POINTS`] points of each run with the most GPU time, and how
/// many were left out.
pub fn largest_points(chart: &RooflineChart) -> (RooflineChart, usize) {
    let mut shown = chart.clone();
    let mut hidden = 0;
    for series in &mut shown.series {
        if series.points.len() > MAX_POINTS {
            hidden += series.points.len() - MAX_POINTS;
            series
                .points
                .sort_by(|a, b| b.gpu_time_ns.total_cmp(&a.gpu_time_ns));
            series.points.truncate(MAX_POINTS);
        }
    }
    (shown, hidden)
}

/// `names` joined for a note, at most [`MAX_NAMES`] of them and how many more.
pub fn listed(names: &[String]) -> String {
    let mut text = names
        .iter()
        .take(MAX_NAMES)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > MAX_NAMES {
        text.push_str(&format!(
            " and {} more (every kernel is in --format json)",
            names.len() - MAX_NAMES
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_names_the_first_and_counts_the_rest() {
        let names: Vec<String> = (0..60).map(|i| format!("k{i}")).collect();
        let text = listed(&names);
        assert!(
            text.starts_with("k0, k1") && text.contains("k49 and 10 more"),
            "{text}"
        );
        assert_eq!(listed(&names[..2]), "k0, k1");
    }
}
