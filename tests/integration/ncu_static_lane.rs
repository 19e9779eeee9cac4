//! Static lane: cuobjdump resource usage and the occupancy calculator, checked against ncu's own
//! `launch__occupancy_limit_*` values for the same kernels on the H200.

use crate::support::ncu::*;
use polyprof::profilers::ncu::cuobjdump;
use polyprof::profilers::ncu::occupancy::{LaunchConfig, calculate, limits_for};

#[test]
fn cuobjdump_resource_usage() {
    let text = String::from_utf8(read("ncu-h200/cuobjdump_resource_usage.txt")).unwrap();
    let functions = cuobjdump::parse(&text);
    let names: Vec<&str> = functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "_Z12matmul_tiledILi32EEvPKfS1_Pfi",
            "_Z10reduce_sumPKfPfi",
            "_Z12matmul_naivePKfS0_Pfi",
            "_Z10vector_addPKfS0_Pfi"
        ]
    );
    let tiled = &functions[0];
    assert_eq!(tiled.short_name.as_deref(), Some("matmul_tiled<32>"));
    assert_eq!(tiled.arch.as_deref(), Some("sm_90"));
    assert_eq!(
        (tiled.registers, tiled.shared, tiled.local, tiled.stack),
        (32, 9216, 0, 0)
    );
    assert_eq!(tiled.constant.get(&0), Some(&556));
    // SHARED includes the 1 KiB reserve on sm_90: 8192 declared.
    assert_eq!(tiled.declared_shared(), 8192);
    assert_eq!(functions[3].declared_shared(), 0);
    assert_eq!(functions[3].registers, 12);
}

/// ncu's limits for each kernel of kernels.cu, straight from the H200 raw page.
#[test]
fn calculator_matches_ncu_block_limits() {
    let limits = limits_for((9, 0)).unwrap();
    let text = String::from_utf8(read("ncu-h200/cuobjdump_resource_usage.txt")).unwrap();
    let functions = cuobjdump::parse(&text);
    for file in [
        "ncu-h200/raw_page.stdout",
        "ncu-h200/raw_page_selected_metrics.stdout",
        "ncu-h200/import_raw_base_units.stdout",
    ] {
        let parsed = parse_fixture(file);
        for k in &parsed.kernels {
            let threads: u64 = k.block.unwrap().iter().product();
            let config = LaunchConfig {
                threads_per_block: threads as u32,
                registers_per_thread: k.registers_per_thread.unwrap(),
                shared_per_block: k.shared_mem_per_block.unwrap(),
                carveout: None,
            };
            let ours = calculate(limits, &config).unwrap();
            let ncu = |name: &str| k.metric(name).unwrap() as u32;
            let label = format!("{file}: {}", k.short_name);
            assert_eq!(
                ours.limit_registers,
                ncu("launch__occupancy_limit_registers"),
                "{label}"
            );
            assert_eq!(
                ours.limit_warps,
                ncu("launch__occupancy_limit_warps"),
                "{label}"
            );
            assert_eq!(
                ours.limit_shared_mem,
                ncu("launch__occupancy_limit_shared_mem"),
                "{label}"
            );
            assert_eq!(
                ours.limit_blocks,
                ncu("launch__occupancy_limit_blocks"),
                "{label}"
            );
            assert_eq!(
                ours.carveout,
                k.metric("launch__shared_mem_config_size").unwrap() as u64
            );
            assert_eq!(
                Some(ours.occupancy_pct),
                k.theoretical_occupancy_pct,
                "{label}"
            );
            // The same answer from the static lane: cuobjdump's registers and shared memory.
            let static_fn = functions
                .iter()
                .find(|f| f.short_name.as_deref() == Some(k.short_name.as_str()))
                .unwrap();
            let dynamic = k.metric("launch__shared_mem_per_block_dynamic").unwrap() as u64;
            let from_binary = calculate(
                limits,
                &LaunchConfig {
                    threads_per_block: threads as u32,
                    registers_per_thread: static_fn.registers,
                    shared_per_block: static_fn.declared_shared() + dynamic,
                    carveout: None,
                },
            )
            .unwrap();
            assert_eq!(from_binary.active_blocks, ours.active_blocks, "{label}");
            assert_eq!(from_binary.limit_registers, ours.limit_registers, "{label}");
        }
    }
}

#[test]
fn sm90_limits_agree_with_the_device() {
    // device_caps.txt: attributes the CUDA runtime reported on the H200.
    let caps = String::from_utf8(read("ncu-h200/device_caps.txt")).unwrap();
    let attr = |name: &str| -> u64 {
        let line = caps.lines().find(|l| l.starts_with(name)).unwrap();
        let value = line.rsplit(", ").next().unwrap().trim_end_matches(')');
        value.parse().unwrap()
    };
    let sm90 = limits_for((9, 0)).unwrap();
    assert_eq!(
        u64::from(sm90.max_threads),
        attr("cudaDevAttrMaxThreadsPerMultiProcessor")
    );
    assert_eq!(
        u64::from(sm90.registers),
        attr("cudaDevAttrMaxRegistersPerMultiprocessor")
    );
    assert_eq!(
        u64::from(sm90.max_blocks),
        attr("cudaDevAttrMaxBlocksPerMultiprocessor")
    );
    assert_eq!(
        u64::from(sm90.max_registers_per_block),
        attr("cudaDevAttrMaxRegistersPerBlock")
    );
    assert_eq!(
        sm90.max_shared_per_block_optin,
        attr("cudaDevAttrMaxSharedMemoryPerBlockOptin")
    );
    // 228 KiB = 233,472 bytes per SM.
    assert_eq!(sm90.max_shared, 228 * 1024);
    assert_eq!(attr("cudaDevAttrMaxSharedMemoryPerMultiprocessor"), 233_472);
}

#[test]
fn kernels_in_the_fixture_workload_are_the_profiled_ones() {
    let source = String::from_utf8(read("ncu-h200/kernels.cu")).unwrap();
    let parsed = parse_fixture("ncu-h200/raw_page.stdout");
    for k in &parsed.kernels {
        let base = k.short_name.split('<').next().unwrap();
        assert!(
            source.contains(&format!("void {base}(")),
            "{base} not in kernels.cu"
        );
    }
}
