//! `ncu --list-sets` and `ncu --list-sections`: fixed-width tables whose long cells wrap onto
//! continuation lines (first column blank).

/// One row of `ncu --list-sets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetInfo {
    pub identifier: String,
    pub sections: Vec<String>,
    pub enabled: bool,
    pub estimated_metrics: Option<u64>,
}

/// One row of `ncu --list-sections`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionInfo {
    pub identifier: String,
    pub display_name: String,
    pub enabled: bool,
}

/// Column start offsets from the `---- ----` rule under the title row.
fn column_starts(rule: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut previous = ' ';
    for (index, ch) in rule.char_indices() {
        if ch == '-' && previous == ' ' {
            starts.push(index);
        }
        previous = ch;
    }
    starts
}

fn cells(line: &str, starts: &[usize]) -> Vec<String> {
    starts
        .iter()
        .enumerate()
        .map(|(i, &start)| {
            let end = starts.get(i + 1).copied().unwrap_or(line.len());
            line.get(start.min(line.len())..end.min(line.len()))
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// Rows of a fixed-width table, continuation lines folded into the row above (cell text joined
/// without a space, since ncu wraps mid-word).
fn table(text: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(rule) = lines.iter().find(|l| l.starts_with("---")) else {
        return Vec::new();
    };
    let starts = column_starts(rule);
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut rules_seen = 0;
    for line in &lines {
        if line.starts_with("---") {
            rules_seen += 1;
            continue;
        }
        // Rows come after the second rule (rule, title, rule, rows).
        if rules_seen < 2 || line.trim().is_empty() {
            continue;
        }
        let row = cells(line, &starts);
        if row[0].trim().is_empty() {
            if let Some(last) = rows.last_mut() {
                for (cell, more) in last.iter_mut().zip(row) {
                    cell.push_str(more.trim_end());
                }
            }
        } else {
            rows.push(row.into_iter().map(|c| c.trim_end().to_string()).collect());
        }
    }
    rows.into_iter()
        .map(|row| row.into_iter().map(|c| c.trim().to_string()).collect())
        .collect()
}

pub fn parse_sets(text: &str) -> Vec<SetInfo> {
    table(text)
        .into_iter()
        .filter(|row| row.len() >= 4)
        .map(|row| SetInfo {
            identifier: row[0].clone(),
            sections: row[1]
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            enabled: row[2] == "yes",
            estimated_metrics: row[3].parse().ok(),
        })
        .collect()
}

pub fn parse_sections(text: &str) -> Vec<SectionInfo> {
    table(text)
        .into_iter()
        .filter(|row| row.len() >= 3)
        .map(|row| SectionInfo {
            identifier: row[0].clone(),
            display_name: row[1].clone(),
            enabled: row[2] == "yes",
        })
        .collect()
}
