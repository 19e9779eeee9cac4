//! Kernel names across filtered and unfiltered ncu runs (tests/fixtures/ncu-h200-names, captured
//! on the H200 by `capture.sh` there): ncu's own demangled names change with a `-k` filter, so
//! polyprof asks for mangled names and demangles them itself
//! (`distribution_mangled.txt` there feeds the demangler's unit test in `names.rs`).

use crate::support::fixture;
use crate::support::ncu::plan_argvs;
use polyprof::model::record::{KernelRecord, short_kernel_name};
use polyprof::profilers::ncu::kernel_filter::{keep_instance, ncu_kernel_filter, widened_instance};
use polyprof::profilers::ncu::names::demangle_short;
use polyprof::profilers::ncu::{KernelNameBase, NcuOptions, ParseOptions, parse};

fn kernels(file: &str) -> Vec<KernelRecord> {
    let bytes = std::fs::read(fixture(&format!("ncu-h200-names/{file}"))).unwrap();
    let parsed = parse(&bytes, &ParseOptions::default());
    assert!(
        !parsed.kernels.is_empty(),
        "{file}: {:?}",
        parsed.diagnostics
    );
    parsed.kernels
}

fn fill_names(kernels: &[KernelRecord]) -> Vec<&str> {
    kernels
        .iter()
        .filter(|k| {
            k.name
                .contains("distribution_elementwise_grid_stride_kernel")
        })
        .map(|k| k.short_name.as_str())
        .collect()
}

#[test]
fn ncu_prints_one_kernel_two_ways_depending_on_the_filter() {
    let unfiltered = kernels("kname-unfiltered.csv");
    let filtered = kernels("kname-none.csv");
    let (a, b) = (fill_names(&unfiltered), fill_names(&filtered));
    assert_eq!((a.len(), b.len()), (2, 2));
    assert!(
        a[0].starts_with("at::<unnamed>::distribution_elementwise"),
        "{}",
        a[0]
    );
    // Filtered, ncu printed `void unnamed>::distribution_…<…, void normal_and_transform<…`:
    // unbalanced brackets, so even the kernel's own name is lost from the short name.
    assert!(
        b[0].starts_with("normal_and_transform<BFloat16, "),
        "{}",
        b[0]
    );
    assert_ne!(a[0], b[0]);
    // `--print-kernel-base demangled` is ncu's default: it does not help.
    assert_eq!(fill_names(&kernels("kname-demangled.csv")), b);
    let function = kernels("kname-function.csv");
    assert_eq!(
        function[0].short_name,
        "distribution_elementwise_grid_stride_kernel"
    );
}

#[test]
fn mangled_names_are_demangled_with_every_namespace() {
    let kernels = kernels("kname-mangled.csv");
    let names: Vec<&str> = kernels.iter().map(|k| k.short_name.as_str()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    let fills = fill_names(&kernels);
    assert_eq!(fills.len(), 2);
    assert_eq!(fills[0], fills[1]);
    assert!(
        fills[0].starts_with(
            "at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, \
             4, at::native::templates::cuda::normal_and_transform<c10::BFloat16, float, "
        ),
        "{}",
        fills[0]
    );
    assert!(
        kernels[0].name.starts_with("void at::native::"),
        "{}",
        kernels[0].name
    );
    assert_eq!(names[2], "nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT");
    assert!(
        names[3].starts_with("at::native::reduce_kernel<512, 1, "),
        "{}",
        names[3]
    );
    // The name polyprof prints for the fill still selects it in a filtered run.
    assert_eq!(
        ncu_kernel_filter(fills[0], None),
        (
            Some(KernelNameBase::Function),
            "distribution_elementwise_grid_stride_kernel".to_string()
        )
    );
}

fn argv(options: NcuOptions) -> Vec<String> {
    plan_argvs(options).concat()
}

#[test]
fn plans_ask_for_mangled_names_once() {
    let count = |argv: &[String]| {
        argv.iter()
            .filter(|a| a.starts_with("--print-kernel-base"))
            .count()
    };
    let plain = argv(NcuOptions::default());
    let at = plain
        .iter()
        .position(|a| a == "--print-kernel-base")
        .unwrap();
    assert_eq!(plain[at + 1], "mangled");
    assert_eq!(count(&plain), 1);
    // The report's exports (profile step plus raw and session pages) print the same names.
    let report = argv(NcuOptions {
        keep_report: true,
        ..Default::default()
    });
    assert_eq!(count(&report), 2, "{report:?}");
    // A base the user chose through --ncu-arg is not doubled (ncu refuses a repeated option).
    let chosen = argv(NcuOptions {
        extra_args: vec!["--print-kernel-base=function".into()],
        ..Default::default()
    });
    assert_eq!(count(&chosen), 1, "{chosen:?}");
}

/// The short name polyprof prints for each of g++'s manglings of `templates.cpp` and
/// `pytorch_like.cpp` (cxxfilt/manglings.tsv, with c++filt's answers) is c++filt's name
/// shortened, and `--kernel` with it keeps exactly that kernel: kernels templated on a function
/// or an operator are found by function name, then by short name.
#[test]
fn the_short_names_polyprof_prints_select_their_kernel() {
    let corpus = std::fs::read_to_string(fixture("ncu-h200-names/cxxfilt/manglings.tsv")).unwrap();
    for line in corpus.lines() {
        let (mangled, gnu) = line.split_once('\t').unwrap();
        let Some(short) = demangle_short(mangled) else {
            panic!("{mangled} did not demangle");
        };
        assert_eq!(short, short_kernel_name(gnu), "{mangled}");
        assert!(
            !short.ends_with(')') || short.ends_with("const") || short.contains("::{lambda"),
            "{short}"
        );
        let (base, filter) = ncu_kernel_filter(&short, None);
        if base == Some(KernelNameBase::Function) {
            assert_eq!(
                widened_instance(&short, None).as_deref(),
                Some(short.as_str())
            );
            let mut launches = vec![record(&short), record("other<1>"), record(&short)];
            keep_instance(&mut launches, &short);
            assert_eq!(launches.len(), 2, "{short}");
        } else if base == Some(KernelNameBase::Demangled) {
            let re = regex::Regex::new(filter.strip_prefix("regex:").unwrap()).unwrap();
            assert!(re.is_match(gnu), "{filter} does not match {gnu}");
        }
    }
}

/// `--kernel` with the short name of each kernel of a PyTorch workload in NVIDIA's spelling
/// (pytorch-kernel-names.txt, the spelling ncu matches) selects it: by a regex that matches
/// its full name, or by its function name.
#[test]
fn the_short_names_of_a_pytorch_workload_select_their_kernel() {
    let names =
        std::fs::read_to_string(fixture("ncu-h200-names/pytorch-kernel-names.txt")).unwrap();
    for name in names.lines() {
        let short = short_kernel_name(name);
        match ncu_kernel_filter(&short, None) {
            (Some(KernelNameBase::Demangled), filter) => {
                let re = regex::Regex::new(filter.strip_prefix("regex:").unwrap()).unwrap();
                assert!(re.is_match(name), "{filter} does not match {name}");
            }
            (Some(KernelNameBase::Function), filter) => {
                let function = filter
                    .strip_prefix("regex:(^|[ :])")
                    .and_then(|f| f.strip_suffix("(<|$)"))
                    .unwrap_or(&filter);
                let named = short.ends_with(&format!("::{function}"))
                    || short.contains(&format!("{function}<"));
                assert!(named, "{function}: {short}");
            }
            (base, filter) => assert_eq!((base, filter.as_str()), (None, short.as_str())),
        }
    }
}

fn record(short_name: &str) -> KernelRecord {
    KernelRecord {
        short_name: short_name.to_string(),
        ..Default::default()
    }
}
