//! Unitrace's command names: with `-v` and in timelines a kernel name carries its launch shape,
//! `name[SIMD32 {groupCountX; Y; Z} {groupSizeX; Y; Z}]`, and a memory command its size,
//! `zeCommandListAppendMemoryCopy(M2D)[4194304]`; `--separate-tiles` prefixes `Tile #N: `.

/// A command name split into its base name and the shape unitrace appended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandName<'a> {
    /// The name without tile prefix and shape suffix.
    pub base: &'a str,
    pub tile: Option<u32>,
    pub simd: Option<u32>,
    /// Work-group counts (the grid).
    pub group_count: Option<[u64; 3]>,
    /// Work-group sizes (the local size).
    pub group_size: Option<[u64; 3]>,
    /// Bytes of a memory copy or fill.
    pub bytes: Option<u64>,
}

impl CommandName<'_> {
    /// Global work size: group count × group size in each dimension.
    pub fn global_size(&self) -> Option<[u64; 3]> {
        let (count, size) = (self.group_count?, self.group_size?);
        Some([0, 1, 2].map(|i| count[i].saturating_mul(size[i])))
    }
}

/// Split `name` into base name and shape; a name without a recognised suffix stays whole.
pub fn parse_command_name(name: &str) -> CommandName<'_> {
    let mut parsed = CommandName {
        base: name.trim(),
        ..Default::default()
    };
    if let Some(rest) = parsed.base.strip_prefix("Tile #")
        && let Some((tile, rest)) = rest.split_once(": ")
        && let Ok(tile) = tile.parse()
    {
        parsed.tile = Some(tile);
        parsed.base = rest;
    }
    let Some(inner) = parsed.base.strip_suffix(']') else {
        return parsed;
    };
    let Some(open) = inner.rfind('[') else {
        return parsed;
    };
    let suffix = &inner[open + 1..];
    if let Some(shape) = suffix.strip_prefix("SIMD") {
        let mut parts = shape.splitn(2, ' ');
        let Some(simd) = parts.next().and_then(|s| s.parse().ok()) else {
            return parsed;
        };
        let groups: Vec<[u64; 3]> = parts
            .next()
            .unwrap_or("")
            .split('}')
            .filter_map(|g| triple(g.trim().strip_prefix('{')?))
            .collect();
        parsed.simd = Some(simd);
        parsed.group_count = groups.first().copied();
        parsed.group_size = groups.get(1).copied();
        parsed.base = inner[..open].trim_end();
    } else if let Ok(bytes) = suffix.parse() {
        parsed.bytes = Some(bytes);
        parsed.base = inner[..open].trim_end();
    }
    parsed
}

fn triple(text: &str) -> Option<[u64; 3]> {
    let mut values = text.split(';').map(|v| v.trim().parse::<u64>());
    let triple = [
        values.next()?.ok()?,
        values.next()?.ok()?,
        values.next()?.ok()?,
    ];
    values.next().is_none().then_some(triple)
}

/// Memory copies and fills are listed with the kernels; Intel's own comparison skips them the
/// same way (`tools/unitrace/test/unidiff.py`).
pub fn is_memory_command(base: &str) -> bool {
    base.starts_with("zeCommandList") || base.starts_with("clEnqueue")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_shapes_give_simd_grid_and_local_size() {
        let n = parse_command_name("hgemm_nocopy_nn_64x40_4x8[SIMD16 {56; 1; 1} {64; 8; 1}]");
        assert_eq!(n.base, "hgemm_nocopy_nn_64x40_4x8");
        assert_eq!(n.simd, Some(16));
        assert_eq!(n.group_count, Some([56, 1, 1]));
        assert_eq!(n.group_size, Some([64, 8, 1]));
        assert_eq!(n.global_size(), Some([3584, 8, 1]));
    }

    #[test]
    fn memory_commands_give_bytes_and_plain_names_stay_whole() {
        let n = parse_command_name("zeCommandListAppendMemoryCopy(M2D)[4194304]");
        assert_eq!(n.base, "zeCommandListAppendMemoryCopy(M2D)");
        assert_eq!(n.bytes, Some(4194304));
        assert!(is_memory_command(n.base));
        assert_eq!(parse_command_name("GEMM").base, "GEMM");
        assert_eq!(parse_command_name("a[b]").base, "a[b]");
        let tiled = parse_command_name("Tile #1: GEMM[SIMD32 {1; 2; 3} {4; 5; 6}]");
        assert_eq!(
            (tiled.tile, tiled.base, tiled.simd),
            (Some(1), "GEMM", Some(32))
        );
    }
}
