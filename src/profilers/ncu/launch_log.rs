//! The fingerprint pass's launch log (written by polyprof's CUPTI injection library,
//! `src/profilers/ncu/inject.c`) read into launches with their fingerprints.
//!
//! CUPTI names no module for a launch, so the image is found here: among the module images the
//! process loaded, those whose symbol table defines the launched symbol. Images loaded after the
//! launch count: with CUDA's lazy loading (the default) a module is loaded inside the launch
//! call, after its callback (seen on the H200 with CUDA 13). One distinct image: the launch is
//! keyed by its SHA-256. None or several: the launch is not keyed (it is profiled and never
//! cached), and the reason says why.

use std::collections::{BTreeMap, BTreeSet};

use object::{Object, ObjectSymbol};
use sha2::{Digest, Sha256};

use crate::model::profile_cache::{LaunchFingerprint, hex};
pub use crate::model::profile_cache::{LoggedLaunch, ProcessLaunches};

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEvent {
    /// A module image was loaded (saved as `file`, `bytes` long).
    Module { seq: u64, file: String, bytes: u64 },
    Launch {
        seq: u64,
        grid: [u64; 3],
        block: [u64; 3],
        dynamic_shared_bytes: u64,
        symbol: String,
    },
    /// A CUDA graph was launched: its kernels pass no launch callback.
    Graph { seq: u64, api: String },
    /// The library could not do its work (CUPTI refused the subscription).
    Failed(String),
}

/// Parse one process's log. A malformed line is an error naming it: the library writes every
/// line whole, so a bad one means the file is not the library's.
pub fn parse_log(text: &str) -> Result<Vec<LogEvent>, String> {
    let mut events = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let bad = || format!("line {}: not a launch-log line: {line:?}", n + 1);
        let num = |i: usize| -> Result<u64, String> {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .ok_or_else(bad)
        };
        let event = match fields[0] {
            "M" if fields.len() == 4 => LogEvent::Module {
                seq: num(1)?,
                file: fields[2].to_string(),
                bytes: num(3)?,
            },
            "L" if fields.len() == 10 => LogEvent::Launch {
                seq: num(1)?,
                grid: [num(2)?, num(3)?, num(4)?],
                block: [num(5)?, num(6)?, num(7)?],
                dynamic_shared_bytes: num(8)?,
                symbol: fields[9].to_string(),
            },
            "G" if fields.len() == 3 => LogEvent::Graph {
                seq: num(1)?,
                api: fields[2].to_string(),
            },
            "E" if fields.len() >= 2 => LogEvent::Failed(fields[1..].join("\t")),
            _ => return Err(bad()),
        };
        events.push(event);
    }
    Ok(events)
}

/// A module image as polyprof read it: its digest and the symbols it defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleImage {
    pub sha256: String,
    pub symbols: BTreeSet<String>,
}

/// Hash an image and list the function symbols of its ELF symbol table.
pub fn read_image(bytes: &[u8]) -> Result<ModuleImage, String> {
    let file = object::File::parse(bytes).map_err(|e| format!("not an ELF cubin: {e}"))?;
    let symbols = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text)
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|name| !name.is_empty())
        .collect();
    Ok(ModuleImage {
        sha256: hex(&Sha256::digest(bytes)),
        symbols,
    })
}

/// Key each launch of `events` by the one image that defines its symbol. `image` reads a saved
/// image by its file name (`None`: missing or unreadable).
pub fn resolve(
    events: &[LogEvent],
    image: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
) -> ProcessLaunches {
    let mut out = ProcessLaunches::default();
    // Every image the process loaded, read once, in load order.
    let mut read: BTreeMap<String, Result<ModuleImage, String>> = BTreeMap::new();
    for event in events {
        if let LogEvent::Module { file, .. } = event
            && !read.contains_key(file)
        {
            let parsed = image(file)
                .ok_or_else(|| format!("the image {file} was not saved"))
                .and_then(|bytes| read_image(&bytes));
            read.insert(file.clone(), parsed);
        }
    }
    let unreadable = read.values().find_map(|r| r.as_ref().err()).cloned();
    let images: Vec<&ModuleImage> = read.values().filter_map(|r| r.as_ref().ok()).collect();
    for event in events {
        match event {
            LogEvent::Module { .. } => {}
            LogEvent::Launch {
                grid,
                block,
                dynamic_shared_bytes,
                symbol,
                ..
            } => {
                let defining: BTreeSet<&str> = images
                    .iter()
                    .filter(|m| m.symbols.contains(symbol))
                    .map(|m| m.sha256.as_str())
                    .collect();
                let fingerprint = match (defining.len(), &unreadable) {
                    (1, None) => Ok(LaunchFingerprint {
                        module_sha256: defining
                            .iter()
                            .next()
                            .map_or_else(String::new, |s| s.to_string()),
                        function: symbol.clone(),
                        grid: *grid,
                        block: *block,
                        dynamic_shared_bytes: *dynamic_shared_bytes,
                    }),
                    (0 | 1, Some(why)) => Err(format!(
                        "an image the process loaded could not be read ({why})"
                    )),
                    (0, None) => Err("no image the process loaded defines its symbol".to_string()),
                    (n, _) => Err(format!("{n} different images define its symbol")),
                };
                out.launches.push(LoggedLaunch {
                    index: out.launches.len(),
                    symbol: symbol.clone(),
                    grid: *grid,
                    block: *block,
                    dynamic_shared_bytes: *dynamic_shared_bytes,
                    fingerprint,
                });
            }
            LogEvent::Graph { .. } => out.graphs += 1,
            LogEvent::Failed(why) => out.failures.push(why.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_line_parses_and_a_foreign_line_is_refused() {
        let log = "M\t0\tcubin-00ab-10.bin\t10\nL\t1\t4\t1\t1\t256\t1\t1\t1024\t_Z5scalePfPKfi\nG\t2\tcuGraphLaunch\nE\tcuptiSubscribe failed: in use\n";
        let events = parse_log(log).unwrap();
        assert_eq!(events.len(), 4);
        assert_eq!(
            events[1],
            LogEvent::Launch {
                seq: 1,
                grid: [4, 1, 1],
                block: [256, 1, 1],
                dynamic_shared_bytes: 1024,
                symbol: "_Z5scalePfPKfi".to_string()
            }
        );
        assert!(parse_log("L\t1\tx\n").unwrap_err().contains("line 1"));
        assert!(parse_log("hello\n").is_err());
    }

    #[test]
    fn a_launch_without_its_image_or_with_two_is_not_keyed() {
        let events = parse_log("L\t0\t1\t1\t1\t32\t1\t1\t0\t_Z1kv\n").unwrap();
        let resolved = resolve(&events, &mut |_| None);
        assert!(resolved.launches[0].fingerprint.is_err());
        let events =
            parse_log("M\t0\tmissing.bin\t10\nL\t1\t1\t1\t1\t32\t1\t1\t0\t_Z1kv\n").unwrap();
        let resolved = resolve(&events, &mut |_| None);
        let why = resolved.launches[0].fingerprint.clone().unwrap_err();
        assert!(why.contains("could not be read"), "{why}");
    }
}
