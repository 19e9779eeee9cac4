//! Unitrace's device timeline (`-t`): one line per command instance,
//! `Thread <tid> Device <dev> : <name> [ns] <t> (append) <t> (submit) <t> (start) <t> (end)`.
//! Level Zero prints the device in decimal and quotes the name; OpenCL prints a hex pointer and
//! a bare name. Lines of other kinds (summaries in the same file) are skipped.

use super::lines::{Warnings, unquote};
use crate::model::parsed::Diagnostic;

/// One command instance on the device, times in ns on unitrace's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineEntry {
    pub thread: u64,
    /// The device as printed (`35747536`, `0x44e4920`).
    pub device: String,
    /// The name as printed, unquoted, with its shape suffix.
    pub name: String,
    pub append_ns: Option<u64>,
    pub submit_ns: Option<u64>,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl TimelineEntry {
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    pub entries: Vec<TimelineEntry>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Parse every timeline line of `text`.
pub fn parse_timeline(text: &str) -> Timeline {
    let mut timeline = Timeline::default();
    let mut warnings = Warnings::default();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with("Thread ") {
            continue;
        }
        match parse_line(line) {
            Ok(entry) => timeline.entries.push(entry),
            Err(why) => warnings.push(
                "unitrace_bad_timeline_line",
                format!("line {}: {why}: `{line}`", index + 1),
                None,
            ),
        }
    }
    timeline.diagnostics = warnings.finish("unitrace device timeline");
    timeline
}

fn parse_line(line: &str) -> Result<TimelineEntry, &'static str> {
    // The name may contain anything, so cut at the last ` [ns] ` and the first ` : `.
    let at = line
        .rfind(" [ns] ")
        .ok_or("no ` [ns] ` before the timestamps")?;
    let (head, times) = (&line[..at], &line[at + 6..]);
    let head = head.strip_prefix("Thread ").ok_or("no `Thread`")?;
    let (thread, rest) = head.split_once(' ').ok_or("no thread id")?;
    let thread = thread.parse().map_err(|_| "thread id is not a number")?;
    let rest = rest.strip_prefix("Device ").ok_or("no `Device`")?;
    let (device, name) = rest.split_once(" : ").ok_or("no ` : ` before the name")?;
    let (mut append, mut submit, mut start, mut end) = (None, None, None, None);
    let mut tokens = times.split_ascii_whitespace();
    while let (Some(value), Some(label)) = (tokens.next(), tokens.next()) {
        let value: u64 = value.parse().map_err(|_| "timestamp is not a number")?;
        match label {
            "(append)" => append = Some(value),
            "(submit)" => submit = Some(value),
            "(start)" => start = Some(value),
            "(end)" => end = Some(value),
            _ => return Err("unknown timestamp label"),
        }
    }
    Ok(TimelineEntry {
        thread,
        device: device.to_string(),
        name: unquote(name.trim()).to_string(),
        append_ns: append,
        submit_ns: submit,
        start_ns: start.ok_or("no (start) timestamp")?,
        end_ns: end.ok_or("no (end) timestamp")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DPC_T: &str =
        include_str!("../../../tests/fixtures/unitrace/dpc_gemm_device_timeline.txt");
    const CL_T: &str = include_str!("../../../tests/fixtures/unitrace/cl_gemm_device_timeline.txt");

    #[test]
    fn level_zero_timeline_reads_every_command() {
        let t = parse_timeline(DPC_T);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.entries.len(), 20);
        let first = &t.entries[0];
        assert_eq!(first.thread, 47571);
        assert_eq!(first.device, "35747536");
        assert_eq!(first.name, "zeCommandListAppendMemoryCopy(M2D)[4194304]");
        assert_eq!(first.append_ns, Some(542502841453331));
        assert_eq!(first.submit_ns, Some(542502841453331));
        assert_eq!(
            (first.start_ns, first.end_ns),
            (542502841481411, 542502842346371)
        );
        let gemm = &t.entries[3];
        assert!(
            gemm.name
                .starts_with("RunAndCheck(sycl::_V1::queue, std::vector<float")
        );
        assert!(
            gemm.name
                .ends_with("const::__GEMM[SIMD32 {1; 1024; 1} {1024; 1; 1}]")
        );
        assert_eq!(gemm.duration_ns(), 542502850711898 - 542502847858138);
        let gemms = t
            .entries
            .iter()
            .filter(|e| e.name.contains("__GEMM"))
            .count();
        assert_eq!(gemms, 4);
    }

    #[test]
    fn opencl_timeline_reads_hex_devices_and_bare_names() {
        let t = parse_timeline(CL_T);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.entries.len(), 16);
        let gemm = &t.entries[2];
        assert_eq!(
            (gemm.device.as_str(), gemm.name.as_str()),
            ("0x44e4920", "GEMM")
        );
        assert_eq!(gemm.duration_ns(), 542502234039971 - 542502231181571);
        // The gold `t.txt` and `d.txt` come from separate runs, so only the timeline's own sum.
        let total: u64 = t
            .entries
            .iter()
            .filter(|e| e.name == "GEMM")
            .map(|e| e.duration_ns())
            .sum();
        assert_eq!(total, 2858400 + 2873600 + 2853920 + 2852480);
    }

    #[test]
    fn broken_lines_warn_and_the_rest_is_kept() {
        let text = "Thread 1 Device 2 : k [ns] 1 (append) 2 (submit) 3 (start) 9 (end)\n\
                    Thread 1 Device 2 : k [ns] 1 (append) 2 (sub\n\
                    Thread x Device 2 : k [ns] 3 (start) 4 (end)\n\
                    unrelated output\n\
                    Thread 7 Device 0x1 : \"a : b [ns] c\" [ns] 5 (start) 6 (end)\n";
        let t = parse_timeline(text);
        assert_eq!(t.entries.len(), 2);
        assert_eq!(t.entries[1].name, "a : b [ns] c");
        assert_eq!(t.entries[1].append_ns, None);
        assert_eq!(t.diagnostics.len(), 2);
    }
}
