//! `--page session`, `--query-metrics`, `--list-sets` and `--list-sections` outputs.

use std::io::Read;

use crate::support::ncu::*;
use polyprof::profilers::ncu::discovery::{parse_sections, parse_sets};
use polyprof::profilers::ncu::options::MINIMAL_METRICS;
use polyprof::profilers::ncu::query::{parse_catalog, unknown_metrics};
use polyprof::profilers::ncu::{Preset, fields};

#[test]
fn session_page() {
    let parsed = parse_fixture("ncu-h200/import_session_page.stdout");
    assert!(parsed.kernels.is_empty());
    let s = &parsed.session;
    assert_eq!(s["ncu_version"], "2025.3.1.0");
    assert_eq!(s["cuda_version"], "13.0");
    assert_eq!(s["device_name"], "NVIDIA H200");
    assert_eq!(s["compute_capability"], "9.0");
    assert_eq!(s["host_name"], "vm");
    assert!(s["command_line"].contains("--set full -f -o full ./app 1"));
    assert_eq!(s["process.1655"], "/tmp/cap/app");
    assert_eq!(s["device.0.multiprocessor_count"], "132");
    assert_eq!(
        s["session.Target IP Addresses"],
        "192.0.2.2, fd00::2, fe80::fc:ff:fe00:1%eth0"
    );
    // A session page is not "empty output".
    let mut flagged = parsed.clone();
    polyprof::profilers::ncu::parse::flag_empty(&mut flagged, 0);
    assert!(flagged.diagnostics.is_empty());
}

fn gh100_catalog() -> polyprof::profilers::ncu::query::MetricCatalog {
    let mut text = String::new();
    flate2::read::GzDecoder::new(&read("ncu-h200/query_metrics_gh100.txt.gz")[..])
        .read_to_string(&mut text)
        .unwrap();
    parse_catalog(&text)
}

#[test]
fn every_minimal_metric_is_valid_on_gh100_and_typos_are_caught() {
    let catalog = gh100_catalog();
    assert_eq!(catalog.chip.as_deref(), Some("gh100"));
    assert!(catalog.bases.len() > 3000, "{}", catalog.bases.len());
    let minimal: Vec<String> = MINIMAL_METRICS.iter().map(|m| m.to_string()).collect();
    assert_eq!(unknown_metrics(&catalog, &minimal), []);
    // Names seen as raw-page columns on the H200 are all accepted too.
    let raw = parse_fixture("ncu-h200/raw_page.stdout");
    let columns: Vec<String> = raw.kernels[0]
        .metrics
        .keys()
        .map(|k| k.to_string())
        .collect();
    let rejected = unknown_metrics(&catalog, &columns);
    assert!(rejected.is_empty(), "{rejected:?}");
    let typo = vec![
        "gpu__time_durations.sum".to_string(),
        "smsp__sass_thread_inst_executed_op_fadd_pred_off.sum".to_string(),
    ];
    let unknown = unknown_metrics(&catalog, &typo);
    assert_eq!(unknown.len(), 2);
    assert_eq!(unknown[0].suggestions[0], "gpu__time_duration");
}

#[test]
fn presets_exist_as_ncu_sets() {
    let sets = parse_sets(&String::from_utf8(read("ncu-h200/list_sets.txt")).unwrap());
    let ids: Vec<&str> = sets.iter().map(|s| s.identifier.as_str()).collect();
    assert_eq!(
        ids,
        [
            "basic",
            "detailed",
            "full",
            "nvlink",
            "pmsampling",
            "roofline"
        ]
    );
    for preset in [Preset::Basic, Preset::Detailed, Preset::Full] {
        assert!(ids.contains(&preset.ncu_set().unwrap()));
    }
    let detailed = &sets[1];
    assert_eq!(detailed.estimated_metrics, Some(906));
    assert!(
        detailed
            .sections
            .contains(&"MemoryWorkloadAnalysis_Chart".to_string())
    );
    assert!(sets[0].enabled && !detailed.enabled);
    let full = &sets[2];
    assert!(
        full.sections
            .contains(&"SpeedOfLight_HierarchicalSingleRooflineChart".to_string())
    );
    assert_eq!(full.sections.len(), 21, "{:?}", full.sections);
}

#[test]
fn sections_the_details_parser_reads_exist_in_both_versions() {
    for file in [
        "ncu-h200/list_sections.txt",
        "ncu-cc120/list_sections_2025.1.1.txt",
    ] {
        let sections = parse_sections(&String::from_utf8(read(file)).unwrap());
        assert_eq!(sections.len(), 24, "{file}");
        let displays: Vec<&str> = sections.iter().map(|s| s.display_name.as_str()).collect();
        for section in [
            "GPU Speed Of Light Throughput",
            "Occupancy",
            "Launch Statistics",
        ] {
            assert!(displays.contains(&section), "{file}: {section}");
        }
        // Each label the details parser maps to a field lives in one of these sections.
        assert!(fields::field_for_label("GPU Speed Of Light Throughput", "Duration").is_some());
        let enabled: Vec<&str> = sections
            .iter()
            .filter(|s| s.enabled)
            .map(|s| s.identifier.as_str())
            .collect();
        assert_eq!(
            enabled,
            [
                "LaunchStats",
                "Occupancy",
                "SpeedOfLight",
                "WorkloadDistribution"
            ]
        );
    }
}
