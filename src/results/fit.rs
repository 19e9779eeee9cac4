//! Terminal tables fitted to a width: columns that can be derived from others are left out or
//! merged, in the order the caller gives, until the table fits; then the last column wraps and
//! the name column (column 0) takes what is left, shortened. Prose around a table wraps to the
//! same width.

use comfy_table::{CellAlignment, Table, presets};

use crate::results::names::MIN_NAME_WIDTH;

/// One column: its header, one cell per row, and whether it holds numbers (right-aligned).
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub header: String,
    pub cells: Vec<String>,
    pub numeric: bool,
}

impl Column {
    pub fn new(header: &str, numeric: bool) -> Self {
        Column {
            header: header.to_string(),
            cells: Vec::new(),
            numeric,
        }
    }

    /// Characters the column needs: its widest line of a cell or header.
    fn width(&self) -> usize {
        std::iter::once(&self.header)
            .chain(&self.cells)
            .flat_map(|text| text.lines())
            .map(|line| line.chars().count())
            .max()
            .unwrap_or(0)
    }

    /// No row has a value (every cell empty or `-`).
    fn is_empty(&self) -> bool {
        self.cells.iter().all(|c| c.is_empty() || c == "-")
    }
}

/// One way to make a table narrower, tried in the caller's order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shrink {
    /// Leave these columns out (the caller's reason: they can be derived from what stays).
    Drop(&'static [&'static str]),
    /// Leave out this column when every row has the same value in it (the footer says which).
    DropConstant(&'static str),
    /// Put two columns in one, cells `left / right`, under `header`.
    Merge {
        left: &'static str,
        right: &'static str,
        header: &'static str,
    },
}

/// A fitted table and the columns it left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    pub table: String,
    /// Headers of the columns no row had a value for.
    pub empty: Vec<String>,
    /// Headers of the columns left out to fit (merged columns are not counted: nothing was
    /// lost).
    pub left_out: Vec<String>,
}

/// Width of a UTF8_FULL_CONDENSED table whose columns are `widths` wide: one border character
/// before each column and after the last, one space of padding on either side of each.
fn table_width(widths: impl Iterator<Item = usize>) -> usize {
    widths.map(|w| w + 3).sum::<usize>() + 1
}

/// The narrowest a name gets when even [`MIN_NAME_WIDTH`] does not fit.
const LAST_RESORT_NAME_WIDTH: usize = 12;

/// The narrowest a wrapped last column gets: its header and longest word, and at least 8
/// characters.
const MIN_WRAPPED_WIDTH: usize = 8;

/// `columns` (column 0 the name) as a table at most `width` characters wide when it can be:
/// empty columns go, then each of `shrinks` in turn until the table fits with the name at
/// [`MIN_NAME_WIDTH`], then the last column wraps; the name column takes the rest, shortened
/// by `shorten`, which sees the whole column so that shortened names can stay apart (below
/// [`MIN_NAME_WIDTH`], to 12 at least, only when nothing else is left to give). `None`: every
/// column, full names.
pub fn fit(
    mut columns: Vec<Column>,
    shrinks: &[Shrink],
    width: Option<usize>,
    shorten: fn(&[String], usize) -> Vec<String>,
) -> Fitted {
    let mut left_out = Vec::new();
    let mut empty = Vec::new();
    if let Some(width) = width {
        let name_floor = |columns: &[Column]| columns[0].width().min(MIN_NAME_WIDTH);
        let needed = |columns: &[Column]| {
            table_width(
                std::iter::once(name_floor(columns)).chain(columns[1..].iter().map(Column::width)),
            )
        };
        columns = columns
            .into_iter()
            .enumerate()
            .filter_map(|(index, column)| {
                if index > 0 && column.is_empty() {
                    empty.push(column.header);
                    None
                } else {
                    Some(column)
                }
            })
            .collect();
        for shrink in shrinks {
            if needed(&columns) <= width {
                break;
            }
            apply(&mut columns, *shrink, &mut left_out);
        }
        let last = columns.len() - 1;
        if last > 0 && needed(&columns) > width {
            let others = table_width(
                std::iter::once(name_floor(&columns))
                    .chain(columns[1..last].iter().map(Column::width)),
            );
            // Words stay whole: `regressed` must not become `regresse` / `d`.
            let longest_word = columns[last]
                .cells
                .iter()
                .flat_map(|c| c.split_whitespace())
                .map(|w| w.chars().count())
                .max()
                .unwrap_or(0);
            let floor = columns[last]
                .header
                .chars()
                .count()
                .max(longest_word)
                .max(MIN_WRAPPED_WIDTH);
            let room = width.saturating_sub(others + 3).max(floor);
            for cell in &mut columns[last].cells {
                *cell = textwrap::wrap(cell, room).join("\n");
            }
        }
        let others = table_width(columns[1..].iter().map(Column::width)) + 3;
        // Below MIN_NAME_WIDTH only when the terminal is narrower than the numbers need.
        let name_width = width.saturating_sub(others).max(LAST_RESORT_NAME_WIDTH);
        columns[0].cells = shorten(&columns[0].cells, name_width);
    }
    Fitted {
        table: render(&columns),
        empty,
        left_out,
    }
}

fn apply(columns: &mut Vec<Column>, shrink: Shrink, left_out: &mut Vec<String>) {
    match shrink {
        Shrink::Drop(headers) => columns.retain(|c| {
            let drop = headers.contains(&c.header.as_str());
            if drop {
                left_out.push(c.header.clone());
            }
            !drop
        }),
        Shrink::DropConstant(header) => columns.retain(|c| {
            let constant = c.header == header && c.cells.windows(2).all(|w| w[0] == w[1]);
            if constant {
                let value = c.cells.first().map(String::as_str).unwrap_or("-");
                left_out.push(format!("{} (all {value})", c.header));
            }
            !constant
        }),
        Shrink::Merge {
            left,
            right,
            header,
        } => {
            let find =
                |columns: &[Column], name: &str| columns.iter().position(|c| c.header == name);
            let (Some(l), Some(r)) = (find(columns, left), find(columns, right)) else {
                return;
            };
            let right_cells = columns.remove(r).cells;
            let l = if r < l { l - 1 } else { l };
            let merged = &mut columns[l];
            merged.header = header.to_string();
            for (cell, other) in merged.cells.iter_mut().zip(right_cells) {
                *cell = format!("{cell} / {other}");
            }
        }
    }
}

/// The style of every terminal table polyprof prints (the CLI's own tables take it too).
pub const TABLE_STYLE: comfy_table::TableStyle = presets::UTF8_FULL_CONDENSED;

fn render(columns: &[Column]) -> String {
    let mut table = Table::new();
    table.load_style(TABLE_STYLE);
    table.set_header(columns.iter().map(|c| c.header.clone()));
    let rows = columns.first().map_or(0, |c| c.cells.len());
    for row in 0..rows {
        table.add_row(columns.iter().map(|c| c.cells[row].clone()));
    }
    for (index, column) in columns.iter().enumerate() {
        if let (true, Some(target)) = (column.numeric, table.column_mut(index)) {
            target.set_cell_alignment(CellAlignment::Right);
        }
    }
    table.to_string()
}

/// `text` wrapped to `width` (`None`: as it is), each line on its own; a line's continuation
/// is indented by `indent` spaces so it reads under the line's value, not its label.
pub fn wrap_prose(text: &str, width: Option<usize>, indent: usize) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let pad = " ".repeat(indent.min(width / 2));
    text.split('\n')
        .map(|line| {
            let options = textwrap::Options::new(width.max(1)).subsequent_indent(&pad);
            textwrap::wrap(line, options).join("\n")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::names::fit_names;

    fn column(header: &str, cells: &[&str], numeric: bool) -> Column {
        Column {
            header: header.to_string(),
            cells: cells.iter().map(|c| c.to_string()).collect(),
            numeric,
        }
    }

    fn widest_line(text: &str) -> usize {
        text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
    }

    fn sample() -> Vec<Column> {
        vec![
            column("Name", &[&"k".repeat(90)], false),
            column("GPU total", &["415.8 us"], true),
            column("GPU mean", &["415.8 us"], true),
            column("% peak BW", &["0.4"], true),
            column("% peak FLOP", &["7.7"], true),
            column("Empty", &["-"], true),
            column("Bound", &["compute (tensor bf16)"], false),
        ]
    }

    const SHRINKS: &[Shrink] = &[
        Shrink::Drop(&["GPU mean"]),
        Shrink::Merge {
            left: "% peak BW",
            right: "% peak FLOP",
            header: "% peak BW/FLOP",
        },
    ];

    #[test]
    fn a_table_drops_merges_and_wraps_until_it_fits() {
        for width in [70, 80, 100, 160] {
            let fitted = fit(sample(), SHRINKS, Some(width), fit_names);
            assert_eq!(
                widest_line(&fitted.table),
                width,
                "{width}\n{}",
                fitted.table
            );
        }
        let narrow = fit(sample(), SHRINKS, Some(70), fit_names);
        assert_eq!(narrow.empty, ["Empty"]);
        assert_eq!(narrow.left_out, ["GPU mean"]);
        assert!(narrow.table.contains("0.4 / 7.7"), "{}", narrow.table);
        // Wide enough: only the empty column goes, names are cut to fit exactly.
        let wide = fit(sample(), SHRINKS, Some(160), fit_names);
        assert!(wide.left_out.is_empty());
        assert!(wide.table.contains("GPU mean"), "{}", wide.table);
    }

    #[test]
    fn without_a_width_everything_stays() {
        let fitted = fit(sample(), SHRINKS, None, fit_names);
        assert!(fitted.left_out.is_empty() && fitted.empty.is_empty());
        assert!(fitted.table.contains("Empty") && fitted.table.contains(&"k".repeat(90)));
    }

    #[test]
    fn prose_wraps_under_its_value() {
        let text = "warning  a long diagnostic message that goes on and on about clocks";
        let wrapped = wrap_prose(text, Some(30), 9);
        assert!(widest_line(&wrapped) <= 30, "{wrapped}");
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("         ")));
        assert_eq!(wrap_prose(text, None, 9), text);
    }
}
