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

/// The rows that get a drilldown panel: those the table shows (the first [`MAX_TABLE_ROWS`]
/// of `rows`, in their order) and those the chart draws (the [`MAX_POINTS`] with the most GPU
/// time, `gpu`), each once. A panel per kernel of 100,000 was most of a 150 MB page.
pub fn detailed<T: Copy>(rows: &[T], gpu: impl Fn(T) -> f64) -> Vec<T> {
    if rows.len() <= MAX_TABLE_ROWS {
        return rows.to_vec();
    }
    // The chart's MAX_POINTS largest of all rows (linear: moved to the front, unsorted).
    let mut by_gpu: Vec<usize> = (0..rows.len()).collect();
    if by_gpu.len() > MAX_POINTS {
        by_gpu.select_nth_unstable_by(MAX_POINTS, |&a, &b| gpu(rows[b]).total_cmp(&gpu(rows[a])));
        by_gpu.truncate(MAX_POINTS);
    }
    by_gpu.retain(|&index| index >= MAX_TABLE_ROWS);
    by_gpu.sort_unstable();
    let mut shown = rows[..MAX_TABLE_ROWS].to_vec();
    shown.extend(by_gpu.into_iter().map(|index| rows[index]));
    shown
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

    #[test]
    fn panels_go_to_the_tables_rows_and_the_charts_points() {
        // The table's order is by index; the last rows have the most GPU time.
        let rows: Vec<usize> = (0..MAX_TABLE_ROWS + MAX_POINTS + 10).collect();
        let shown = detailed(&rows, |i| i as f64);
        assert_eq!(shown.len(), MAX_TABLE_ROWS + MAX_POINTS);
        assert_eq!(shown[..MAX_TABLE_ROWS], rows[..MAX_TABLE_ROWS]);
        // The MAX_POINTS largest, none of them in the table, in the table's order.
        assert_eq!(shown[MAX_TABLE_ROWS..], rows[MAX_TABLE_ROWS + 10..]);
        // The largest in the table already: not twice.
        let reversed: Vec<usize> = rows.iter().rev().copied().collect();
        assert_eq!(
            detailed(&reversed, |i| i as f64),
            reversed[..MAX_TABLE_ROWS]
        );
        assert_eq!(detailed(&rows[..3], |i| i as f64), [0, 1, 2]);
    }
}
