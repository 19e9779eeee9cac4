//! `cuobjdump --dump-resource-usage <binary>`: registers, shared, local and constant memory per
//! kernel, without a GPU. One `Fatbin elf code:` block per embedded ELF; function names are
//! mangled (demangled to the short name polyprof prints, for joining the two).

use super::names::demangle_short;
use std::collections::BTreeMap;

use serde::Serialize;

/// Resources of one function of one ELF.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FunctionResources {
    /// Mangled name as printed (`_Z12matmul_tiledILi32EEvPKfS1_Pfi`).
    pub name: String,
    /// Short demangled name (`matmul_tiled<32>`) when the mangling is simple enough.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_name: Option<String>,
    /// `sm_90` of the ELF block the function is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    pub registers: u32,
    pub stack: u64,
    /// Shared memory as the ELF states it; on sm_90 this includes the 1 KiB reserved per block.
    pub shared: u64,
    pub local: u64,
    /// `CONSTANT[bank]` sizes by bank.
    pub constant: BTreeMap<u32, u64>,
    pub texture: u32,
    pub surface: u32,
    pub sampler: u32,
}

impl FunctionResources {
    /// Static shared memory declared by the kernel: on sm_90 the ELF count includes the 1 KiB
    /// the system reserves per block (8192 B declared shows `SHARED:9216`; none shows 1024).
    pub fn declared_shared(&self) -> u64 {
        let reserved = match arch_number(self.arch.as_deref()) {
            Some(n) if n >= 90 => 1024,
            _ => 0,
        };
        self.shared.saturating_sub(reserved)
    }
}

fn arch_number(arch: Option<&str>) -> Option<u32> {
    arch?
        .trim()
        .strip_prefix("sm_")?
        .trim_end_matches(char::is_alphabetic)
        .parse()
        .ok()
}

/// Parse the whole dump. Lines that fit no known shape are ignored.
pub fn parse(text: &str) -> Vec<FunctionResources> {
    let mut functions = Vec::new();
    let mut arch: Option<String> = None;
    let mut current: Option<FunctionResources> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("Fatbin ") {
            arch = None;
        } else if let Some(value) = trimmed.strip_prefix("arch =") {
            arch = Some(value.trim().to_string());
        } else if let Some(name) = trimmed
            .strip_prefix("Function ")
            .and_then(|rest| rest.strip_suffix(':'))
        {
            if let Some(done) = current.take() {
                functions.push(done);
            }
            current = Some(FunctionResources {
                name: name.to_string(),
                short_name: demangle_short(name),
                arch: arch.clone(),
                ..Default::default()
            });
        } else if trimmed.starts_with("REG:")
            && let Some(function) = current.as_mut()
        {
            fill(function, trimmed);
        }
    }
    if let Some(done) = current.take() {
        functions.push(done);
    }
    functions
}

fn fill(function: &mut FunctionResources, line: &str) {
    for item in line.split_whitespace() {
        let Some((key, value)) = item.split_once(':') else {
            continue;
        };
        let Ok(value) = value.parse::<u64>() else {
            continue;
        };
        let small = u32::try_from(value).unwrap_or(u32::MAX);
        match key {
            "REG" => function.registers = small,
            "STACK" => function.stack = value,
            "SHARED" => function.shared = value,
            "LOCAL" => function.local = value,
            "TEXTURE" => function.texture = small,
            "SURFACE" => function.surface = small,
            "SAMPLER" => function.sampler = small,
            _ => {
                if let Some(bank) = key
                    .strip_prefix("CONSTANT[")
                    .and_then(|k| k.strip_suffix(']'))
                    .and_then(|k| k.parse().ok())
                {
                    function.constant.insert(bank, value);
                }
            }
        }
    }
}
