//! `select` and the device table agree: every arch that both know (a product name `select`
//! accepts and the table looks up) has one vendor, and today's GPUs are in both.

use polyprof::profilers::registry::Vendor;
use polyprof::profilers::selection::Selection;
use polyprof::results::devices::DeviceTable;

use crate::support::polyprof;

/// `select`'s arches with their vendor.
fn arches(selection: &Selection) -> Vec<(String, Vendor)> {
    Vendor::ALL
        .iter()
        .flat_map(|v| selection.arches(*v).iter().map(move |a| (a.clone(), *v)))
        .collect()
}

#[test]
fn every_arch_both_accept_has_one_vendor() {
    let selection = Selection::embedded().unwrap();
    let table = DeviceTable::builtin().unwrap();
    let arches = arches(&selection);
    let mut both = 0;
    for (arch, vendor) in &arches {
        if let Some(device) = table.lookup(arch) {
            assert_eq!(
                device.vendor,
                vendor.key(),
                "{arch}: select and the table disagree"
            );
            both += 1;
        }
    }
    // The table's side: a match pattern that is also an arch of `select` (spaces dropped).
    for device in &table.devices {
        assert!(
            Vendor::ALL.iter().any(|v| v.key() == device.vendor),
            "{}: vendor `{}` is not one select knows",
            device.name,
            device.vendor
        );
        for pattern in &device.patterns {
            let key = pattern.to_ascii_lowercase().replace(' ', "");
            if let Some((_, vendor)) = arches.iter().find(|(a, _)| *a == key) {
                assert_eq!(device.vendor, vendor.key(), "{}: {pattern}", device.name);
            }
        }
    }
    assert!(both >= 14, "only {both} arches are known to both");
}

#[test]
fn todays_gpus_are_in_select_and_the_device_table() {
    let table = DeviceTable::builtin().unwrap();
    // (arch, vendor, table entry, the name the driver reports)
    for (arch, vendor, device, reported) in [
        ("b200", "nvidia", "B200", "NVIDIA B200"),
        ("gb200", "nvidia", "GB200", "NVIDIA GB200"),
        ("rtx5090", "nvidia", "RTX 5090", "NVIDIA GeForce RTX 5090"),
        ("rtx5080", "nvidia", "RTX 5080", "NVIDIA GeForce RTX 5080"),
        ("mi325x", "amd", "MI325X", "AMD Instinct MI325X"),
        ("mi355x", "amd", "MI355X", "AMD Instinct MI355X"),
    ] {
        let out = polyprof()
            .args(["select", "--language", "pytorch", "--arch", arch, "--json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{arch}: {out:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["vendor"], vendor, "{arch}");
        let peaks = table
            .lookup(arch)
            .unwrap_or_else(|| panic!("{arch} not in the table"));
        assert_eq!(peaks.name, device);
        assert!(peaks.memory_bandwidth_gbs > 0.0 && peaks.source.starts_with("https://"));
        // "NVIDIA GB200" is not the B200: no word boundary inside "GB200".
        assert_eq!(
            table.lookup(reported).map(|d| d.name.as_str()),
            Some(device)
        );
    }
}
