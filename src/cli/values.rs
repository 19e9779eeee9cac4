//! The values shell completion offers for `--profiler`, `--language`, `--arch` and `--device`:
//! a value parser that lists them as clap's possible values (what clap_complete completes and
//! `--help` shows) yet accepts any text, so each command keeps its own checks, aliases and error
//! messages (`opencl`, case, a user's own device table).

use std::sync::OnceLock;

use clap::builder::{PossibleValue, TypedValueParser};

use polyprof::profilers::registry::{BACKENDS, Vendor};
use polyprof::profilers::selection::Selection;
use polyprof::results::devices::DeviceTable;

/// Any text, with `values()` offered for completion.
#[derive(Clone, Copy)]
pub struct Offered(fn() -> &'static [&'static str]);

impl TypedValueParser for Offered {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0().iter().map(|v| PossibleValue::new(*v))))
    }
}

/// Every registered profiler backend (`none` included).
pub fn profilers() -> Offered {
    Offered(|| {
        static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
        NAMES.get_or_init(|| BACKENDS.iter().map(|b| b.name).collect())
    })
}

/// The profilers that can witness an eval, and `none`.
pub fn witnesses() -> Offered {
    Offered(|| {
        static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
        NAMES.get_or_init(|| {
            let mut names = polyprof::profilers::witness::WITNESS_PROFILERS.to_vec();
            names.push("none");
            names
        })
    })
}

/// The embedded selection table's languages.
pub fn languages() -> Offered {
    Offered(|| {
        static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
        NAMES.get_or_init(|| {
            Selection::embedded()
                .map(|table| leak(table.languages()))
                .unwrap_or_default()
        })
    })
}

/// The embedded selection table's arches, every vendor's.
pub fn arches() -> Offered {
    Offered(|| {
        static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
        NAMES.get_or_init(|| {
            Selection::embedded()
                .map(|table| {
                    leak(
                        Vendor::ALL
                            .iter()
                            .flat_map(|v| table.arches(*v).to_vec())
                            .collect(),
                    )
                })
                .unwrap_or_default()
        })
    })
}

/// The built-in device table's names (those a shell can complete as one word).
pub fn devices() -> Offered {
    Offered(|| {
        static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
        NAMES.get_or_init(|| {
            DeviceTable::builtin()
                .map(|table| {
                    leak(
                        table
                            .devices
                            .iter()
                            .map(|d| d.name.clone())
                            .filter(|name| !name.contains(char::is_whitespace))
                            .collect(),
                    )
                })
                .unwrap_or_default()
        })
    })
}

/// Names made `'static` once per process (clap's possible values borrow them).
fn leak(mut names: Vec<String>) -> Vec<&'static str> {
    names.dedup();
    names
        .into_iter()
        .map(|name| &*Box::leak(name.into_boxed_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(parser: Offered) -> Vec<String> {
        parser
            .possible_values()
            .unwrap()
            .map(|v| v.get_name().to_string())
            .collect()
    }

    #[test]
    fn each_list_comes_from_its_table() {
        assert!(offered(profilers()).contains(&"ncu".to_string()));
        assert!(offered(languages()).contains(&"cuda".to_string()));
        assert!(offered(arches()).contains(&"h100".to_string()));
        assert!(offered(devices()).contains(&"H200".to_string()));
    }
}
