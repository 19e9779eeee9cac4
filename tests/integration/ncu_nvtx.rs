//! NVTX ranges (`ncu --nvtx`) through the binary: `polyprof parse` of the H200 captures in
//! `tests/fixtures/ncu-h200-nvtx/` (README there), the run document and the exports. The probe
//! programs are `nvtx_probe.py` and `nvtx_shapes.cu` beside the captures.

use crate::support::ncu::parsed_run_dir;
use crate::support::{assert_exit, fixture, polyprof};

/// `(launch_id, ranges, thread_id)` of every kernel `polyprof parse --json` reads from `capture`.
fn parsed_ranges(capture: &str) -> Vec<(u64, Vec<String>, Option<u64>)> {
    let out = polyprof()
        .args(["parse", "--profiler", "ncu", "--json"])
        .arg(fixture(capture))
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    parsed["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let ranges = k["ranges"]
                .as_array()
                .map(|r| r.iter().map(|n| n.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            (
                k["launch_id"].as_u64().unwrap(),
                ranges,
                k["thread_id"].as_u64(),
            )
        })
        .collect()
}

fn expected(rows: &[(u64, &[&str], Option<u64>)]) -> Vec<(u64, Vec<String>, Option<u64>)> {
    rows.iter()
        .map(|(id, ranges, thread)| (*id, ranges.iter().map(|r| r.to_string()).collect(), *thread))
        .collect()
}

#[test]
fn parse_gives_each_launch_its_threads_ranges() {
    // nvtx_probe.py: launch 3 ran on a background thread while the main thread was in
    // polyprof/call/1, so it is in no range and has no thread id.
    let probe = expected(&[
        (0, &[], None),
        (1, &["polyprof/setup"], Some(575)),
        (2, &["polyprof/call/0"], Some(575)),
        (3, &[], None),
        (4, &["polyprof/call/1"], Some(575)),
        (5, &[], None),
    ]);
    assert_eq!(parsed_ranges("ncu-h200-nvtx/nvtx.log"), probe);
    // `--print-nvtx-rename kernel` renames the kernels but leaves the ranges as they are.
    let renamed: Vec<_> = probe
        .into_iter()
        .map(|(id, ranges, _)| (id, ranges, None::<u64>))
        .collect();
    let got: Vec<_> = parsed_ranges("ncu-h200-nvtx/nvtx2.log")
        .into_iter()
        .map(|(id, ranges, _)| (id, ranges, None::<u64>))
        .collect();
    assert_eq!(got, renamed);
}

#[test]
fn nested_ranges_other_domains_and_colons_survive_the_parse() {
    for capture in [
        "ncu-h200-nvtx/nvtx_shapes.log",
        "ncu-h200-nvtx/nvtx_shapes_rename.log",
    ] {
        let got = parsed_ranges(capture);
        let thread = got[1].2;
        assert!(thread.is_some(), "{capture}");
        assert_eq!(
            got,
            expected(&[
                (0, &[], None),
                (1, &["outer", "inner"], thread),
                (2, &["outer", "has:colon:name"], thread),
                (3, &["outer", "mydomain@dom_range"], thread),
                (4, &["outer", "mydomain@dom_range"], thread),
                (5, &["colored"], thread),
                // Its name holds a `"`, which ncu leaves unescaped: ranges left out, warned.
                (6, &[], None),
            ]),
            "{capture}"
        );
    }
}

#[test]
fn ranges_survive_run_json_and_reach_the_json_and_csv_reports() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = parsed_run_dir(dir.path(), "nvtx", "ncu-h200-nvtx/nvtx_shapes.log");
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("run.json")).unwrap()).unwrap();
    let launch = |id: u64| {
        run["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["launch_id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(launch(1)["ranges"], serde_json::json!(["outer", "inner"]));
    assert_eq!(
        launch(4)["process_ranges"],
        serde_json::json!(["process_range", "mydomain@dom_process"])
    );
    assert!(launch(0).get("ranges").is_none());

    let report = |format: &str| {
        let out = polyprof()
            .args(["report", "--format", format])
            .arg(&run_dir)
            .output()
            .unwrap();
        assert_exit(&out, 0);
        String::from_utf8(out.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let in_report = json["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["launch_id"] == 3)
        .unwrap();
    assert_eq!(
        in_report["ranges"],
        serde_json::json!(["outer", "mydomain@dom_range"])
    );

    let csv = report("csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let row = |id: &str| {
        rows.iter()
            .find(|r| &r[column("launch_id")] == id)
            .unwrap_or_else(|| panic!("no launch {id}:\n{csv}"))
    };
    assert_eq!(&row("1")[column("ranges")], "outer > inner");
    assert_eq!(&row("2")[column("ranges")], "outer > has:colon:name");
    assert_eq!(
        &row("4")[column("process_ranges")],
        "process_range > mydomain@dom_process"
    );
    assert_eq!(
        &row("1")[column("thread_id")],
        launch(1)["thread_id"].to_string()
    );
    assert_eq!(&row("0")[column("ranges")], "");
}
