//! Every row of the selection table, on every arch of every vendor, and every error.

use polyprof::Error;
use polyprof::profilers::selection::{
    ProfilerPass, Selection, Vendor, get_profilers, profiler_vendor,
};

const GROUPS: [&str; 3] = ["ComputeBasic", "MemoryProfile", "VectorEngineProfile"];

fn table() -> Selection {
    Selection::embedded().unwrap()
}

/// Expected outcome codes: a choice name, `-` for NoProfiler, `?` for UnknownValue.
/// Columns: NVIDIA, Intel, AMD, Apple.
const ROWS: &[(&str, Option<&str>, [&str; 4])] = &[
    ("sycl", None, ["-", "unitrace", "-", "-"]),
    ("sycl", Some("unitrace"), ["-", "unitrace", "-", "-"]),
    ("sycl", Some("vtune"), ["-", "vtune", "-", "-"]),
    ("sycl", Some("ncu"), ["?", "?", "?", "?"]),
    ("sycl", Some("metal"), ["?", "?", "?", "?"]),
    ("ocl", None, ["-", "vtune", "-", "-"]),
    ("ocl", Some("unitrace"), ["-", "ocl-unitrace", "-", "-"]),
    ("ocl", Some("ocl-unitrace"), ["-", "ocl-unitrace", "-", "-"]),
    ("ocl", Some("vtune"), ["-", "vtune", "-", "-"]),
    ("ocl", Some("ncu"), ["?", "?", "?", "?"]),
    ("opencl", None, ["-", "vtune", "-", "-"]),
    ("opencl", Some("unitrace"), ["-", "ocl-unitrace", "-", "-"]),
    ("opencl", Some("vtune"), ["-", "vtune", "-", "-"]),
    ("cuda", None, ["ncu", "-", "-", "-"]),
    ("cuda", Some("ncu"), ["ncu", "-", "-", "-"]),
    ("cuda", Some("unitrace"), ["?", "?", "?", "?"]),
    ("cuda", Some("vtune"), ["?", "?", "?", "?"]),
    ("pytorch", None, ["ncu", "unitrace", "rocprofv3", "metal"]),
    ("pytorch", Some("rocprofv3"), ["-", "-", "rocprofv3", "-"]),
    (
        "pytorch",
        Some("rocprofv3-roofline"),
        ["-", "-", "rocprofv3-roofline", "-"],
    ),
    ("pytorch", Some("ncu"), ["ncu", "-", "-", "-"]),
    ("pytorch", Some("unitrace"), ["-", "unitrace", "-", "-"]),
    ("pytorch", Some("metal"), ["-", "-", "-", "metal"]),
    ("pytorch", Some("vtune"), ["?", "?", "?", "?"]),
    ("triton", None, ["ncu", "unitrace", "rocprofv3", "-"]),
    ("triton", Some("rocprofv3"), ["-", "-", "rocprofv3", "-"]),
    ("triton", Some("ncu"), ["ncu", "-", "-", "-"]),
    ("triton", Some("unitrace"), ["-", "unitrace", "-", "-"]),
    ("triton", Some("metal"), ["?", "?", "?", "?"]),
    ("triton", Some("vtune"), ["?", "?", "?", "?"]),
    // HIP runs on AMD GPUs only, under rocprofv3.
    ("hip", None, ["-", "-", "rocprofv3", "-"]),
    ("hip", Some("rocprofv3"), ["-", "-", "rocprofv3", "-"]),
    (
        "hip",
        Some("rocprofv3-roofline"),
        ["-", "-", "rocprofv3-roofline", "-"],
    ),
    ("hip", Some("ncu"), ["?", "?", "?", "?"]),
    ("hip", Some("rocprof"), ["?", "?", "?", "?"]),
    ("metal", None, ["-", "-", "-", "metal"]),
    ("metal", Some("metal"), ["-", "-", "-", "metal"]),
    ("metal", Some("ncu"), ["?", "?", "?", "?"]),
];

fn expected_passes(choice: &str) -> Vec<(String, Option<String>)> {
    match choice {
        "unitrace" | "ocl-unitrace" => GROUPS
            .iter()
            .map(|g| (choice.to_string(), Some(g.to_string())))
            .collect(),
        "rocprofv3-roofline" => vec![("rocprofv3".to_string(), Some("roofline".to_string()))],
        other => vec![(other.to_string(), None)],
    }
}

fn shape(passes: &[ProfilerPass]) -> Vec<(String, Option<String>)> {
    passes
        .iter()
        .map(|p| (p.profiler.clone(), p.variant().map(str::to_string)))
        .collect()
}

#[test]
fn every_row_on_every_arch() {
    let t = table();
    let mut checked = 0;
    for (language, ty, outcomes) in ROWS {
        for (vendor, outcome) in Vendor::ALL.iter().zip(outcomes) {
            assert!(!t.arches(*vendor).is_empty());
            for arch in t.arches(*vendor) {
                let got = t.get_profilers(language, arch, *ty);
                let ctx = format!("({language}, {ty:?}, {arch})");
                match (*outcome, got) {
                    ("-", Err(Error::NoProfiler { reason, .. })) => {
                        assert!(!reason.is_empty(), "{ctx}")
                    }
                    ("?", Err(Error::UnknownValue { what, valid, .. })) => {
                        assert_eq!(what, "profiler type", "{ctx}");
                        assert!(valid.contains(&format!("for language {}", canonical(language))));
                    }
                    (choice, Ok(passes)) if choice.len() > 1 => {
                        assert_eq!(shape(&passes), expected_passes(choice), "{ctx}");
                        for pass in &passes {
                            assert_eq!(profiler_vendor(&pass.profiler), Some(*vendor), "{ctx}");
                        }
                    }
                    (want, got) => panic!("{ctx}: expected {want}, got {got:?}"),
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

fn canonical(language: &str) -> &str {
    if language == "opencl" {
        "ocl"
    } else {
        language
    }
}

#[test]
fn kernelfoundry_rows_by_name() {
    // The rows users rely on, spelled out once with the arch names from the Python table.
    let t = table();
    let u3: Vec<_> = expected_passes("unitrace");
    assert_eq!(shape(&t.get_profilers("sycl", "lnl", None).unwrap()), u3);
    assert_eq!(
        shape(&t.get_profilers("sycl", "bmg", Some("vtune")).unwrap()),
        expected_passes("vtune")
    );
    assert_eq!(
        shape(&t.get_profilers("ocl", "ptl", None).unwrap()),
        expected_passes("vtune")
    );
    assert_eq!(
        shape(&t.get_profilers("ocl", "dg2", Some("unitrace")).unwrap()),
        expected_passes("ocl-unitrace")
    );
    assert_eq!(
        shape(&t.get_profilers("cuda", "Ampere", None).unwrap()),
        expected_passes("ncu")
    );
    for arch in [
        "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Hopper", "Ada", "native", "A100",
        "A6000", "L40S", "L4",
    ] {
        assert_eq!(
            shape(&t.get_profilers("Pytorch", arch, None).unwrap()),
            expected_passes("ncu"),
            "{arch}"
        );
        assert_eq!(
            shape(&t.get_profilers("triton", arch, None).unwrap()),
            expected_passes("ncu"),
            "{arch}"
        );
    }
    for arch in ["lnl", "ptl", "bmg", "dg2", "pvc", "xpu"] {
        assert_eq!(
            shape(&t.get_profilers("pytorch", arch, None).unwrap()),
            u3,
            "{arch}"
        );
        assert_eq!(
            shape(&t.get_profilers("triton", arch, None).unwrap()),
            u3,
            "{arch}"
        );
    }
}

#[test]
fn matching_ignores_case_and_spaces() {
    let t = table();
    let s = t.select("  SyCl ", " BMG ", Some(" VTune ")).unwrap();
    assert_eq!(
        (s.language.as_str(), s.profiler_type.as_str()),
        ("sycl", "vtune")
    );
    assert_eq!(s.arches, vec!["bmg"]);
    assert!(!s.defaulted);
    let s = t.select("OpenCL", "Lnl", None).unwrap();
    assert_eq!(s.language, "ocl");
    assert!(s.defaulted);
    // A blank profiler type means "the default", like None.
    assert_eq!(
        t.select("cuda", "h100", Some("  ")).unwrap().profiler_type,
        "ncu"
    );
}

#[test]
fn arch_lists_of_one_vendor_select_once() {
    let t = table();
    let s = t.select("pytorch", "a100, H100,a100", None).unwrap();
    assert_eq!(s.arches, vec!["a100", "h100"]);
    assert_eq!(s.vendor, Vendor::Nvidia);
    assert_eq!(shape(&s.passes), expected_passes("ncu"));
    let s = t.select("sycl", "lnl,bmg,ptl", None).unwrap();
    assert_eq!(s.passes.len(), 3);
}

#[test]
fn mixed_vendor_list_is_an_error() {
    let err = table().select("pytorch", "a100,bmg", None).unwrap_err();
    match err {
        Error::InvalidArgument { what, message } => {
            assert_eq!(what, "arch");
            assert!(
                message.contains("NVIDIA") && message.contains("Intel"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn empty_list_entries_and_empty_arch_are_errors() {
    let t = table();
    assert!(matches!(
        t.select("cuda", "a100,,h100", None),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        t.select("cuda", "a100,", None),
        Err(Error::InvalidArgument { .. })
    ));
    match t.select("cuda", "  ", None) {
        Err(Error::UnknownValue { what, valid, .. }) => {
            assert_eq!(what, "arch");
            assert!(valid.contains("a100"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_language_lists_languages_and_alias() {
    match table().select("fortran", "a100", None) {
        Err(Error::UnknownValue { what, value, valid }) => {
            assert_eq!((what, value.as_str()), ("language", "fortran"));
            assert_eq!(
                valid,
                "cuda, hip, metal, ocl (alias opencl), pytorch, sycl, triton"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_arch_lists_arches_by_vendor() {
    match table().select("cuda", "a100,rtx9999", None) {
        Err(Error::UnknownValue { what, value, valid }) => {
            assert_eq!((what, value.as_str()), ("arch", "rtx9999"));
            for part in ["nvidia: maxwell", "intel: lnl", "amd: gfx908", "apple: m1"] {
                assert!(valid.contains(part), "{valid}");
            }
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_profiler_type_lists_the_languages_types() {
    match table().select("sycl", "bmg", Some("perf")) {
        Err(Error::UnknownValue { what, value, valid }) => {
            assert_eq!((what, value.as_str()), ("profiler type", "perf"));
            assert_eq!(valid, "unitrace, vtune (for language sycl)");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_profiler_messages_say_why_and_what_fits() {
    let t = table();
    let msg = t.select("hip", "h100", None).unwrap_err().to_string();
    assert!(msg.contains("hip has no profiler for NVIDIA GPUs"), "{msg}");
    assert!(msg.contains("amd → rocprofv3"), "{msg}");

    let msg = t.select("cuda", "gfx942", None).unwrap_err().to_string();
    assert!(msg.contains("cuda has no profiler for AMD GPUs"), "{msg}");
    assert!(msg.contains("nvidia → ncu"), "{msg}");

    let msg = t.select("triton", "m2", None).unwrap_err().to_string();
    assert!(
        msg.contains("triton has no profiler for Apple GPUs"),
        "{msg}"
    );

    let msg = t
        .select("pytorch", "bmg", Some("ncu"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("`ncu` profiles NVIDIA GPUs only"), "{msg}");
    assert!(
        msg.contains("for Intel GPUs use profiler type: unitrace"),
        "{msg}"
    );

    let msg = t.select("sycl", "h100", None).unwrap_err().to_string();
    assert!(msg.contains("`unitrace` profiles Intel GPUs only"), "{msg}");
}

#[test]
fn passes_build_their_backends() {
    let passes = table().get_profilers("sycl", "bmg", None).unwrap();
    let dir = std::path::Path::new("/out");
    let argv = passes[1]
        .create(dir)
        .unwrap()
        .wrap(&["app".into()])
        .unwrap()
        .steps[0]
        .command
        .argv
        .clone();
    let at = argv.iter().position(|a| a == "--group").unwrap();
    assert_eq!(argv[at + 1], "MemoryProfile");
}

#[test]
fn free_function_uses_the_embedded_table() {
    if std::env::var_os("POLYPROF_CONFIG").is_some() {
        return; // a user table is in force; its rows are its own
    }
    assert_eq!(
        get_profilers("ocl", "bmg", Some("unitrace")).unwrap(),
        table()
            .get_profilers("ocl", "bmg", Some("unitrace"))
            .unwrap()
    );
}

// ---- user tables -----------------------------------------------------------------------------

const MINIMAL: &str = r#"
[arches]
nvidia = ["gb300"]
intel = ["bmg"]

[choices]
ncu = [{ profiler = "ncu", extra_args = ["--set", "full"] }]
vtune = [{ profiler = "vtune" }]

[languages.cuda]
types = { ncu = "ncu" }
default = "ncu"

[languages.sycl]
types = { vtune = "vtune" }
default = "vtune"
"#;

#[test]
fn user_table_replaces_the_embedded_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sel.toml");
    std::fs::write(&path, MINIMAL).unwrap();
    let t = Selection::load(Some(&path)).unwrap();
    assert_eq!(t.origin(), path.display().to_string());
    let passes = t.get_profilers("CUDA", "GB300", None).unwrap();
    assert_eq!(passes[0].settings.extra_args, vec!["--set", "full"]);
    assert_eq!(
        shape(&t.get_profilers("sycl", "bmg", None).unwrap()),
        expected_passes("vtune")
    );
    // The embedded arches are gone with the embedded table.
    assert!(matches!(
        t.select("cuda", "a100", None),
        Err(Error::UnknownValue { .. })
    ));
}

fn config_error(text: &str) -> String {
    match Selection::from_toml(text, "test.toml") {
        Err(Error::Config { origin, message }) => {
            assert_eq!(origin, "test.toml");
            message
        }
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn bad_user_tables_are_rejected_with_the_reason() {
    assert!(!config_error("not toml [").is_empty());
    assert!(config_error(&format!("{MINIMAL}\n[extra]\nx = 1\n")).contains("extra"));
    assert!(
        config_error(&MINIMAL.replace("nvidia = [\"gb300\"]", "nvidea = [\"gb300\"]"))
            .contains("nvidea")
    );
    assert!(
        config_error(&MINIMAL.replace("profiler = \"vtune\"", "profiler = \"perf\""))
            .contains("valid profilers")
    );
    assert!(
        config_error(&MINIMAL.replace("vtune = \"vtune\" }", "vtune = \"vtun\" }"))
            .contains("unknown choice `vtun`")
    );
    assert!(
        config_error(&MINIMAL.replace("intel = [\"bmg\"]", "intel = [\"GB300\"]"))
            .contains("listed twice")
    );
    assert!(
        config_error(&MINIMAL.replace("default = \"vtune\"", "default = \"ncu\""))
            .contains("not one of its types")
    );
    assert!(
        config_error(&MINIMAL.replace(
            "vtune = [{ profiler = \"vtune\" }]",
            "vtune = [{ profiler = \"vtune\" }, { profiler = \"ncu\" }]"
        ))
        .contains("mixes profilers")
    );
    assert!(
        config_error(&MINIMAL.replace("vtune = [{ profiler = \"vtune\" }]", "vtune = []"))
            .contains("no passes")
    );
    assert!(
        config_error(&format!(
            "{MINIMAL}\n[languages.cu]\naliases = [\"cuda\"]\ntypes = {{ ncu = \"ncu\" }}\n"
        ))
        .contains("also a language name")
    );
    assert!(
        config_error(&MINIMAL.replace("nvidia = [\"gb300\"]", "nvidia = [\"a,b\"]"))
            .contains("no comma")
    );
}

#[test]
fn missing_user_file_names_the_path() {
    let err = Selection::load(Some(std::path::Path::new("/nonexistent/sel.toml")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/nonexistent/sel.toml"), "{err}");
}
