//! `cuobjdump --dump-resource-usage <binary>`: registers, shared, local and constant memory per
//! kernel, without a GPU. One `Fatbin elf code:` block per embedded ELF; function names are
//! mangled (a small demangler gives the short name ncu prints, for joining the two).

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

/// Itanium-mangled `_Z…` → the short name ncu prints (namespaces and simple template arguments,
/// no parameters): `_Z12matmul_tiledILi32EEvPKfS1_Pfi` → `matmul_tiled<32>`. `None` for manglings
/// beyond that (the caller keeps the mangled name).
pub fn demangle_short(mangled: &str) -> Option<String> {
    let rest = mangled.strip_prefix("_Z")?;
    let mut parser = Demangler {
        s: rest.as_bytes(),
        pos: 0,
    };
    let name = parser.name()?;
    Some(name)
}

struct Demangler<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Demangler<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn number(&mut self) -> Option<usize> {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        std::str::from_utf8(&self.s[start..self.pos])
            .ok()?
            .parse()
            .ok()
    }

    fn source_name(&mut self) -> Option<String> {
        let len = self.number()?;
        let end = self.pos.checked_add(len)?;
        let text = std::str::from_utf8(self.s.get(self.pos..end)?).ok()?;
        self.pos = end;
        Some(text.to_string())
    }

    /// `N 2ns 4func E`, or a plain source name, each optionally followed by template args.
    fn name(&mut self) -> Option<String> {
        let mut name = if self.eat(b'N') {
            let mut parts = Vec::new();
            while !self.eat(b'E') {
                let mut part = self.source_name()?;
                if self.peek() == Some(b'I') {
                    part.push_str(&self.template_args()?);
                }
                parts.push(part);
            }
            parts.join("::")
        } else {
            self.source_name()?
        };
        if self.peek() == Some(b'I') {
            name.push_str(&self.template_args()?);
        }
        Some(name)
    }

    fn template_args(&mut self) -> Option<String> {
        if !self.eat(b'I') {
            return None;
        }
        let mut args = Vec::new();
        while !self.eat(b'E') {
            args.push(self.template_arg()?);
        }
        Some(format!("<{}>", args.join(", ")))
    }

    fn template_arg(&mut self) -> Option<String> {
        if self.eat(b'L') {
            // Literal: L <type> <value> E; `n` marks a negative value.
            let ty = self.peek()?;
            self.pos += 1;
            let negative = self.eat(b'n');
            let value = self.number()?;
            if !self.eat(b'E') {
                return None;
            }
            let sign = if negative { "-" } else { "" };
            return Some(match ty {
                b'b' => (if value == 0 { "false" } else { "true" }).to_string(),
                b'j' => format!("{sign}{value}u"),
                b'l' => format!("{sign}{value}l"),
                b'm' => format!("{sign}{value}ul"),
                _ => format!("{sign}{value}"),
            });
        }
        let ty = self.peek()?;
        self.pos += 1;
        Some(
            match ty {
                b'i' => "int",
                b'j' => "unsigned int",
                b'f' => "float",
                b'd' => "double",
                b'c' => "char",
                b'h' => "unsigned char",
                b's' => "short",
                b't' => "unsigned short",
                b'l' => "long",
                b'm' => "unsigned long",
                b'x' => "long long",
                b'y' => "unsigned long long",
                b'b' => "bool",
                _ => return None,
            }
            .to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_simple_kernels() {
        assert_eq!(
            demangle_short("_Z12matmul_tiledILi32EEvPKfS1_Pfi").as_deref(),
            Some("matmul_tiled<32>")
        );
        assert_eq!(
            demangle_short("_Z10vector_addPKfS0_Pfi").as_deref(),
            Some("vector_add")
        );
        assert_eq!(
            demangle_short("_ZN2ns6kernelIfLj4EEEvPT_").as_deref(),
            Some("ns::kernel<float, 4u>")
        );
        assert_eq!(demangle_short("plain_c_kernel"), None);
        assert_eq!(demangle_short("_Z99short"), None);
    }
}
