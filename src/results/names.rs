//! Kernel names that fit a table: full names stay in JSON and CSV; tables shorten them, and
//! [`fit_names`] keeps the shortened names of one table apart.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::model::kernel_name::without_namespaces;

/// `name` shortened to at most `width` characters by cutting its middle (`…` marks the cut):
/// the start (two thirds) says what the kernel is and its first template arguments, the end
/// tells instances of one template apart.
pub fn truncate_middle(name: &str, width: usize) -> String {
    let count = name.chars().count();
    if count <= width {
        return name.to_string();
    }
    if width <= 1 {
        return "…".chars().take(width).collect();
    }
    let keep = width - 1;
    let head = (2 * keep).div_ceil(3);
    let tail = keep - head;
    let start: String = name.chars().take(head).collect();
    let end: String = name.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

/// Every name of one table shortened to at most `width` characters, each still telling its
/// kernel apart. Names that fit stay as they are. Longer ones become the function's own name
/// plus the template arguments that differ between that function's instances in the table
/// (namespaces dropped, the shared arguments shown as `…`):
/// `at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<…>>`
/// → `vectorized_elementwise_kernel<…, FillFunctor<float>, …>`. Names still alike after that
/// get a number, ` #1`, ` #2`, … in the order of their full names, so a name keeps its number
/// from run to run while the table's kernels stay the same. `--kernel` takes a fitted name
/// back ([`crate::model::kernel_name::fitted_name_matches`]).
pub fn fit_names(names: &[String], width: usize) -> Vec<String> {
    let parts: Vec<Parts> = names.iter().map(|n| split_template(n)).collect();
    // The argument positions in which a function's instances differ.
    let mut values: HashMap<(&str, usize), Vec<BTreeSet<&str>>> = HashMap::new();
    for part in &parts {
        if let Some(args) = &part.args {
            let sets = values
                .entry((part.function, args.len()))
                .or_insert_with(|| vec![BTreeSet::new(); args.len()]);
            for (set, arg) in sets.iter_mut().zip(args) {
                set.insert(arg);
            }
        }
    }
    let mut fitted: Vec<String> = names
        .iter()
        .zip(&parts)
        .map(|(name, part)| {
            if name.chars().count() <= width {
                return name.clone();
            }
            let compact = match &part.args {
                Some(args) => {
                    let differs = values
                        .get(&(part.function, args.len()))
                        .map(|sets| sets.iter().map(|s| s.len() > 1).collect::<Vec<_>>())
                        .unwrap_or_default();
                    compact_template(part.function, args, &differs, width)
                }
                None => without_namespaces(name),
            };
            truncate_middle(&compact, width)
        })
        .collect();
    number_duplicates(names, &mut fitted, width);
    fitted
}

/// Give each group of equal `fitted` names a ` #N` suffix (N in the order of the full names),
/// cutting the name's middle to make room, until all are distinct.
fn number_duplicates(names: &[String], fitted: &mut [String], width: usize) {
    // Identical full names (the same kernel twice) are left alike; numbering them would say
    // they differ.
    for _round in 0..3 {
        let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (index, name) in fitted.iter().enumerate() {
            groups.entry(name.clone()).or_default().push(index);
        }
        let mut changed = false;
        for (shared, mut members) in groups {
            let distinct: BTreeSet<&str> = members.iter().map(|&i| names[i].as_str()).collect();
            if distinct.len() < 2 {
                continue;
            }
            members.sort_by(|&a, &b| names[a].cmp(&names[b]));
            let order: Vec<&str> = distinct.into_iter().collect();
            for index in members {
                let number = order.iter().position(|n| *n == names[index]).unwrap_or(0) + 1;
                let suffix = format!(" #{number}");
                let room = width.saturating_sub(suffix.chars().count());
                fitted[index] = format!("{}{suffix}", truncate_middle(&shared, room));
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

/// `function<kept arguments>` with the arguments in which instances do not differ shown once
/// as `…` and the kept ones without namespaces, each cut to a share of `width` when the whole
/// does not fit.
fn compact_template(function: &str, args: &[&str], differs: &[bool], width: usize) -> String {
    let kept: Vec<usize> = (0..args.len())
        .filter(|&i| differs.get(i).copied().unwrap_or(false))
        .collect();
    let render = |fit: &dyn Fn(String) -> String| {
        let mut pieces: Vec<String> = Vec::new();
        for (index, arg) in args.iter().enumerate() {
            if kept.contains(&index) {
                pieces.push(fit(without_namespaces(arg)));
            } else if pieces.last().is_none_or(|last| last != "…") {
                pieces.push("…".to_string());
            }
        }
        pieces
    };
    let whole = format!("{function}<{}>", render(&|arg| arg).join(", "));
    if whole.chars().count() <= width || kept.is_empty() {
        return whole;
    }
    let pieces = render(&|arg| arg).len();
    let fixed = function.chars().count() + 2 + 2 * (pieces - 1) + (pieces - kept.len());
    let each = (width.saturating_sub(fixed) / kept.len()).max(8);
    format!(
        "{function}<{}>",
        render(&|arg| truncate_middle(&arg, each)).join(", ")
    )
}

/// A short name split at its template argument list.
struct Parts<'a> {
    /// The function's own name, without namespaces (`vectorized_elementwise_kernel`).
    function: &'a str,
    /// The top-level template arguments; `None` when the name has none.
    args: Option<Vec<&'a str>>,
}

fn split_template(name: &str) -> Parts<'_> {
    let open = template_open(name);
    let head = &name[..open.unwrap_or(name.len())];
    let function = head.rsplit("::").next().unwrap_or(head).trim();
    let args = open.and_then(|at| template_arguments(&name[at + 1..]));
    Parts { function, args }
}

/// Where the name's template argument list opens: the first `<` that is not the anonymous
/// namespace's `<unnamed>`.
fn template_open(name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = name[from..].find('<') {
        let at = from + found;
        if name[at..].starts_with("<unnamed>") {
            from = at + "<unnamed>".len();
            continue;
        }
        return Some(at);
    }
    None
}

/// The comma-separated arguments up to the `>` closing the list `rest` starts inside; `None`
/// when the brackets do not close.
fn template_arguments(rest: &str) -> Option<Vec<&str>> {
    let mut depth = 0i32;
    let mut start = 0;
    let mut args = Vec::new();
    for (index, ch) in rest.char_indices() {
        match ch {
            '<' | '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '>' if depth == 0 => {
                args.push(rest[start..index].trim());
                return Some(args);
            }
            '>' => depth -= 1,
            ',' if depth == 0 => {
                args.push(rest[start..index].trim());
                start = index + 1;
            }
            _ => {}
        }
    }
    None
}

/// A call path (`job / pass / process / kernel`) shortened to `width` characters from the
/// left: the kernel at its end is what tells rows apart.
pub fn truncate_left(path: &str, width: usize) -> String {
    let count = path.chars().count();
    if count <= width {
        return path.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let tail: String = path.chars().skip(count - (width - 1)).collect();
    format!("…{tail}")
}

/// The width a table may use: the terminal's when known, else `COLUMNS`, else 120.
pub fn table_width(terminal: Option<usize>, columns_env: Option<&str>) -> usize {
    terminal
        .filter(|w| *w > 0)
        .or_else(|| {
            columns_env
                .and_then(|c| c.trim().parse().ok())
                .filter(|w| *w > 0)
        })
        .unwrap_or(DEFAULT_TABLE_WIDTH)
}

/// The narrowest name column a fitted table gets while other columns can still be left out or
/// wrapped (`results::fit`).
pub const MIN_NAME_WIDTH: usize = 24;

/// Table width when neither the terminal nor `COLUMNS` says.
pub const DEFAULT_TABLE_WIDTH: usize = 120;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn long_names_lose_their_middle_and_short_ones_nothing() {
        assert_eq!(truncate_middle("vector_add", 20), "vector_add");
        let lambda = format!("void at::native::elementwise_kernel<{}>", "x".repeat(1000));
        let short = truncate_middle(&lambda, 40);
        assert_eq!(short.chars().count(), 40);
        assert!(short.starts_with("void at::native::ele"), "{short}");
        assert!(short.ends_with("xxx>"), "{short}");
        assert!(short.contains('…'));
        assert_eq!(truncate_middle("abcdef", 1), "…");
        assert_eq!(truncate_middle("abcdef", 0), "");
        // Multi-byte characters are cut on character boundaries.
        assert_eq!(truncate_middle("µµµµµµ", 4), "µµ…µ");
    }

    /// The short names of 113 real PyTorch/cuBLAS kernels, sorted, each once.
    pub(crate) fn pytorch_short_names() -> Vec<String> {
        let text = include_str!("../../tests/fixtures/ncu-h200-names/pytorch-kernel-names.txt");
        let mut names: Vec<String> = text
            .lines()
            .map(crate::model::record::short_kernel_name)
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// On the kernels of a PyTorch workload, cutting the middle printed different kernels alike
    /// even at 200 columns; fitted names stay apart at every width, and fit.
    #[test]
    fn fitted_names_of_one_table_stay_apart() {
        let names = pytorch_short_names();
        let cut: BTreeSet<String> = names.iter().map(|n| truncate_middle(n, 150)).collect();
        assert!(
            cut.len() < names.len(),
            "the fixture no longer shows the problem"
        );
        for width in [MIN_NAME_WIDTH, 40, 60, 100, 150, 200] {
            let fitted = fit_names(&names, width);
            let distinct: BTreeSet<&String> = fitted.iter().collect();
            assert_eq!(distinct.len(), names.len(), "width {width}: {fitted:#?}");
            for name in &fitted {
                assert!(name.chars().count() <= width, "width {width}: {name}");
            }
        }
    }

    #[test]
    fn fitted_names_keep_the_function_and_the_arguments_that_differ() {
        let names: Vec<String> = [
            "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1ul>>",
            "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, std::array<char *, 1ul>>",
            "at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char *, 3ul>>",
            "vector_add",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            fit_names(&names, 90),
            [
                "vectorized_elementwise_kernel<…, FillFunctor<float>, array<char *, 1ul>>",
                "vectorized_elementwise_kernel<…, FillFunctor<BFloat16>, array<char *, 1ul>>",
                "vectorized_elementwise_kernel<…, CUDAFunctor_add<BFloat16>, array<char *, 3ul>>",
                "vector_add",
            ]
        );
        // Narrower, each kept argument gets its share.
        let narrow = fit_names(&names, 60);
        assert_eq!(
            narrow[0],
            "vectorized_elementwise_kernel<…, FillFunc…at>, array<ch…ul>>"
        );
        assert!(narrow.iter().all(|n| n.chars().count() <= 60), "{narrow:?}");
        // The same names in another order get the same fitted names.
        let mut reversed = names.clone();
        reversed.reverse();
        let mut again = fit_names(&reversed, 60);
        again.reverse();
        assert_eq!(again, narrow);
    }

    #[test]
    fn names_still_alike_are_numbered_in_the_order_of_their_full_names() {
        let names: Vec<String> = [
            format!("kernel_{}b{}", "x".repeat(40), "x".repeat(40)),
            format!("kernel_{}a{}", "x".repeat(40), "x".repeat(40)),
            "short".to_string(),
        ]
        .to_vec();
        let fitted = fit_names(&names, 30);
        assert!(fitted[0].ends_with(" #2"), "{fitted:?}");
        assert!(fitted[1].ends_with(" #1"), "{fitted:?}");
        assert_eq!(fitted[2], "short");
        assert!(fitted.iter().all(|n| n.chars().count() <= 30));
        // One kernel listed twice is not numbered.
        let twice = vec![names[0].clone(), names[0].clone()];
        let fitted = fit_names(&twice, 30);
        assert_eq!(fitted[0], fitted[1]);
        assert!(!fitted[0].contains('#'));
    }

    #[test]
    fn call_paths_keep_their_end() {
        assert_eq!(
            truncate_left("app 1 / ncu.000 / app [1579] / matmul_naive", 20),
            "…579] / matmul_naive"
        );
        assert_eq!(truncate_left("a / b", 10), "a / b");
        assert_eq!(truncate_left("a / b", 0), "");
    }

    #[test]
    fn width_comes_from_the_terminal_then_columns_then_120() {
        assert_eq!(table_width(Some(90), Some("200")), 90);
        assert_eq!(table_width(None, Some("200")), 200);
        assert_eq!(table_width(None, Some("wide")), 120);
        assert_eq!(table_width(Some(0), None), 120);
    }
}
