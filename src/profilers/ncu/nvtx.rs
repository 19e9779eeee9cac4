//! NVTX ranges in ncu's CSV (`--nvtx`): the push/pop ranges open on the launching thread
//! ([`KernelRecord::ranges`]) and the start/end ranges open in the process
//! ([`KernelRecord::process_ranges`]), named `name`, or `domain@name` outside the default domain.
//!
//! The cells, as ncu 2025.3.1 writes them (fixtures `ncu-h200-nvtx/`, README there):
//! - push/pop: `571  "<default domain>:outer:none:…"  "mydomain:inner:…" `: the thread id, then
//!   one quoted entry per open range of any domain, outermost first;
//! - start/end: ` "0:<default domain>:name:…"  "1:mydomain:name:…" `: each entry led by the
//!   range's id.
//!
//! An entry is `domain:name:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg`, nothing escaped: a name
//! holding `:` is found by the six attribute fields after it, a domain holding `:` cannot be told
//! apart (the first `:` ends it), and a name holding `"  "` splits in two.
//!
//! [`KernelRecord::ranges`]: crate::model::record::KernelRecord::ranges
//! [`KernelRecord::process_ranges`]: crate::model::record::KernelRecord::process_ranges

/// Header prefix of the push/pop column
/// (`thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg`).
pub const PUSH_POP_COLUMN: &str = "thread Domain:Push/Pop_Range";
/// Header prefix of the start/end column
/// (`Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg`).
pub const START_END_COLUMN: &str = "Id:Domain:Start/Stop_Range";

/// How ncu names the domain of `nvtxRangePushA` and `torch.cuda.nvtx`: no prefix in a record.
pub const DEFAULT_DOMAIN: &str = "<default domain>";

/// Fields after the name: PL_Type, PL_Value, CLR_Type, Color, Msg_Type, Msg.
const ATTRIBUTE_FIELDS: usize = 6;

/// Is this header one of the two NVTX columns?
pub fn is_range_column(header: &str) -> bool {
    header.starts_with(PUSH_POP_COLUMN) || header.starts_with(START_END_COLUMN)
}

/// The launching thread's id that leads a push/pop cell (`575  "…"`); `None` for an empty cell
/// (a launch in no push/pop range).
pub fn launching_thread(cell: &str) -> Option<u64> {
    let cell = cell.trim_start();
    let digits = cell.bytes().take_while(u8::is_ascii_digit).count();
    cell[..digits].parse().ok()
}

/// The push/pop ranges of one cell, outermost first.
pub fn push_pop_ranges(cell: &str) -> Vec<String> {
    let entries = cell
        .trim_start()
        .trim_start_matches(|c: char| c.is_ascii_digit());
    split_entries(entries)
        .into_iter()
        .filter_map(range_name)
        .collect()
}

/// The start/end ranges of one cell, in ncu's order (by range id).
pub fn start_end_ranges(cell: &str) -> Vec<String> {
    split_entries(cell)
        .into_iter()
        .filter_map(|entry| {
            let without_id = entry
                .split_once(':')
                .filter(|(id, _)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
                .map_or(entry, |(_, rest)| rest);
            range_name(without_id)
        })
        .collect()
}

/// `"a"  "b" ` → `[a, b]`. Entries are split at a quote, spaces, a quote; text that is not
/// quoted at all is one entry (an unknown shape is kept, not dropped).
fn split_entries(text: &str) -> Vec<&str> {
    let text = text.trim();
    if text.is_empty() {
        return Vec::new();
    }
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return vec![text];
    };
    let bytes = inner.as_bytes();
    let mut entries = Vec::new();
    let (mut start, mut at) = (0, 0);
    while at < bytes.len() {
        if bytes[at] == b'"' {
            let spaces = bytes[at + 1..].iter().take_while(|b| **b == b' ').count();
            let next = at + 1 + spaces;
            if spaces > 0 && bytes.get(next) == Some(&b'"') {
                entries.push(&inner[start..at]);
                start = next + 1;
                at = start;
                continue;
            }
        }
        at += 1;
    }
    entries.push(&inner[start..]);
    entries
}

/// `domain:name:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg` → `name` or `domain@name`; `None`
/// for an empty entry.
fn range_name(entry: &str) -> Option<String> {
    if entry.is_empty() {
        return None;
    }
    let Some((domain, rest)) = entry.split_once(':') else {
        return Some(entry.to_string());
    };
    let name = name_before_attributes(rest);
    Some(if domain == DEFAULT_DOMAIN {
        name
    } else {
        format!("{domain}@{name}")
    })
}

/// The name in `name:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg`, where the name (and `Msg`,
/// which repeats it when `Msg_Type` is set) may hold `:`.
fn name_before_attributes(rest: &str) -> String {
    let fields: Vec<&str> = rest.split(':').collect();
    let count = fields.len();
    if count <= ATTRIBUTE_FIELDS {
        // Not the shape ncu writes: keep the whole text rather than guess.
        return rest.to_string();
    }
    // `name:PL:PV:CT:C:MT:name` with the name of k fields has 2k + 5 fields.
    if (count - 5).is_multiple_of(2) {
        let k = (count - 5) / 2;
        let name = fields[..k].join(":");
        if fields[k + 4] != "none" && fields[count - k..].join(":") == name {
            return name;
        }
    }
    fields[..count - ATTRIBUTE_FIELDS].join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    // Cells copied from the fixtures (the CSV's doubled quotes undone).

    #[test]
    fn the_probe_rows_give_the_launching_threads_ranges() {
        // nvtx.log, kernels 1, 2, 3 (background thread: empty cell) and 4.
        assert_eq!(
            push_pop_ranges(
                r#"575  "<default domain>:polyprof/setup:none:none:none:none:none:none" "#
            ),
            ["polyprof/setup"]
        );
        assert_eq!(
            push_pop_ranges(
                r#"575  "<default domain>:polyprof/call/0:none:none:none:none:none:none" "#
            ),
            ["polyprof/call/0"]
        );
        assert!(push_pop_ranges("").is_empty());
        assert_eq!(launching_thread(""), None);
        assert_eq!(
            launching_thread(
                r#"575  "<default domain>:polyprof/setup:none:none:none:none:none:none" "#
            ),
            Some(575)
        );
        assert_eq!(
            push_pop_ranges(
                r#"575  "<default domain>:polyprof/call/1:none:none:none:none:none:none""#
            ),
            ["polyprof/call/1"]
        );
    }

    #[test]
    fn nested_ranges_are_outermost_first_and_other_domains_are_prefixed() {
        // nvtx_shapes.log, kernels 1 and 3.
        assert_eq!(
            push_pop_ranges(
                r#"571  "<default domain>:outer:none:none:none:none:none:none"  "<default domain>:inner:none:none:none:none:none:none" "#
            ),
            ["outer", "inner"]
        );
        assert_eq!(
            push_pop_ranges(
                r#"571  "<default domain>:outer:none:none:none:none:none:none"  "mydomain:dom_range:none:none:none:none:ASCII:dom_range" "#
            ),
            ["outer", "mydomain@dom_range"]
        );
    }

    #[test]
    fn colons_in_names_and_attributes_are_told_apart() {
        // nvtx_shapes.log, kernels 2 and 5.
        assert_eq!(
            push_pop_ranges(
                r#"571  "<default domain>:outer:none:none:none:none:none:none"  "<default domain>:has:colon:name:none:none:none:none:none:none" "#
            ),
            ["outer", "has:colon:name"]
        );
        assert_eq!(
            push_pop_ranges(
                r#"571  "<default domain>:colored:Int64:42:RGB:0xff00ff00:ASCII:colored" "#
            ),
            ["colored"]
        );
        // A name with colons pushed with attributes: the message repeats it.
        assert_eq!(
            push_pop_ranges(r#"9  "d:a:b:none:none:none:none:ASCII:a:b" "#),
            ["d@a:b"]
        );
        // A quote inside a name is not escaped by ncu; it stays in the name.
        assert_eq!(
            push_pop_ranges(
                r#"571  "<default domain>:q"uote, comma:none:none:none:none:none:none" "#
            ),
            [r#"q"uote, comma"#]
        );
    }

    #[test]
    fn start_end_ranges_drop_their_ids() {
        // nvtx_shapes.log, kernel 4.
        assert_eq!(
            start_end_ranges(
                r#" "0:<default domain>:process_range:none:none:none:none:none:none"  "1:mydomain:dom_process:none:none:none:none:ASCII:dom_process" "#
            ),
            ["process_range", "mydomain@dom_process"]
        );
        assert!(start_end_ranges(" ").is_empty());
    }

    #[test]
    fn unknown_shapes_are_kept_whole() {
        assert_eq!(push_pop_ranges("12  plain"), ["plain"]);
        assert_eq!(
            push_pop_ranges(r#"12  "<default domain>:short""#),
            ["short"]
        );
        assert_eq!(push_pop_ranges(r#"12  "d:x:y""#), ["d@x:y"]);
        assert!(push_pop_ranges(r#"12  """#).is_empty());
    }

    #[test]
    fn the_columns_are_recognized_by_prefix() {
        assert!(is_range_column(
            "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
        ));
        assert!(is_range_column(
            "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
        ));
        assert!(!is_range_column("Kernel Name"));
    }
}

#[cfg(test)]
mod fixture_tests {
    use super::super::{ParseOptions, parse};

    fn ranges_by_launch(bytes: &[u8]) -> Vec<(u64, Vec<String>, Vec<String>)> {
        let parsed = parse(bytes, &ParseOptions::default());
        parsed
            .kernels
            .iter()
            .map(|k| (k.launch_id, k.ranges.clone(), k.process_ranges.clone()))
            .collect()
    }

    #[test]
    fn the_probe_capture_parses_into_each_launchs_ranges() {
        let launches = ranges_by_launch(include_bytes!(
            "../../../tests/fixtures/ncu-h200-nvtx/nvtx.log"
        ));
        let ranges: Vec<(u64, Vec<String>)> =
            launches.iter().map(|(id, r, _)| (*id, r.clone())).collect();
        let expected: Vec<(u64, Vec<String>)> = [
            (0, vec![]),
            (1, vec!["polyprof/setup"]),
            (2, vec!["polyprof/call/0"]),
            // Launched by a background thread while the main thread was in polyprof/call/1.
            (3, vec![]),
            (4, vec!["polyprof/call/1"]),
            (5, vec![]),
        ]
        .into_iter()
        .map(|(id, r)| (id, r.into_iter().map(String::from).collect()))
        .collect();
        assert_eq!(ranges, expected);
        let parsed = parse(
            include_bytes!("../../../tests/fixtures/ncu-h200-nvtx/nvtx.log"),
            &ParseOptions::default(),
        );
        let threads: Vec<Option<u64>> = parsed.kernels.iter().map(|k| k.thread_id).collect();
        assert_eq!(threads, [None, Some(575), Some(575), None, Some(575), None]);
        assert!(parsed.diagnostics.iter().all(|d| d.kind != "split_row"));
        assert!(launches.iter().all(|(_, _, process)| process.is_empty()));
    }

    #[test]
    fn the_shapes_capture_keeps_nesting_domains_and_start_end_ranges() {
        let launches = ranges_by_launch(include_bytes!(
            "../../../tests/fixtures/ncu-h200-nvtx/nvtx_shapes.log"
        ));
        let find = |id: u64| {
            launches
                .iter()
                .find(|(launch, _, _)| *launch == id)
                .unwrap_or_else(|| panic!("launch {id}"))
        };
        assert!(find(0).1.is_empty());
        assert_eq!(find(1).1, ["outer", "inner"]);
        assert_eq!(find(2).1, ["outer", "has:colon:name"]);
        assert_eq!(find(3).1, ["outer", "mydomain@dom_range"]);
        assert!(find(3).2.is_empty());
        assert_eq!(find(4).1, ["outer", "mydomain@dom_range"]);
        assert_eq!(find(4).2, ["process_range", "mydomain@dom_process"]);
        assert_eq!(find(5).1, ["colored"]);
    }

    #[test]
    fn a_quote_in_a_range_name_splits_the_row_and_the_rest_is_read_from_the_right() {
        let parsed = parse(
            include_bytes!("../../../tests/fixtures/ncu-h200-nvtx/nvtx_shapes.log"),
            &ParseOptions::default(),
        );
        let quoted = parsed
            .kernels
            .iter()
            .find(|k| k.launch_id == 6)
            .expect("launch 6");
        // Its range name is `q"uote, comma`: ncu leaves the quote unescaped.
        assert_eq!(quoted.short_name, "probe_kernel");
        assert_eq!(quoted.duration_ns, Some(1824.0));
        assert_eq!(quoted.grid, Some([1, 1, 1]));
        assert!(quoted.ranges.is_empty() && quoted.thread_id.is_none());
        let split: Vec<_> = parsed
            .diagnostics
            .iter()
            .filter(|d| d.kind == "split_row")
            .collect();
        assert_eq!(split.len(), 1, "{:?}", parsed.diagnostics);
        assert!(split[0].message.contains("launch 6 of process 571"));
        assert_eq!(
            parsed
                .kernels
                .iter()
                .find(|k| k.launch_id == 1)
                .unwrap()
                .thread_id,
            Some(571)
        );
    }
}
