//! Unitrace's text summaries (`-d` device timing with its Kernel Properties table, `-h` host API
//! timing). Cells are right-aligned and separated by `", "`; Level Zero kernel names are quoted
//! and may contain commas, OpenCL names are bare. Rows are split from the right by the header's
//! column count, so a comma inside a name never shifts a value, and columns are found by name.

use super::lines::{Warnings, split_right};
use crate::model::number::{self, Problem};
use crate::model::parsed::Diagnostic;

/// Why a timing row was skipped.
enum RowError {
    /// Not the table's shape.
    Shape(String),
    /// A cell that holds no number a record may take.
    Number {
        column: String,
        text: String,
        problem: Problem,
    },
}

/// Which summary a timing table belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Summary {
    /// `=== Device Timing Summary ===`: kernels and memory commands on the GPU.
    Device,
    /// `=== API Timing Summary ===`: host API calls.
    Api,
}

/// One row of a timing table, exactly as printed (times in ns).
#[derive(Debug, Clone, PartialEq)]
pub struct TimingRow {
    pub name: String,
    pub calls: u64,
    pub total_ns: u64,
    /// `Time (%)` of the backend's total.
    pub percent: Option<f64>,
    pub average_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

/// A timing table of one backend (`L0 Backend`, `CL GPU Backend`, `CL CPU Backend`).
#[derive(Debug, Clone, PartialEq)]
pub struct TimingTable {
    pub summary: Summary,
    pub backend: String,
    pub rows: Vec<TimingRow>,
}

/// One row of `=== Kernel Properties ===`, by column name.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelProperties {
    pub name: String,
    pub fields: Vec<(String, String)>,
}

impl KernelProperties {
    pub fn get(&self, column: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, v)| v.as_str())
    }

    /// `SIMD` column (absent in older unitrace, which prints it in the name instead).
    pub fn simd_width(&self) -> Option<u32> {
        self.get("SIMD")?.parse().ok()
    }
}

/// Everything the summaries of one text file hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tables {
    pub timing: Vec<TimingTable>,
    pub properties: Vec<KernelProperties>,
    /// Totals printed above the tables, e.g. `Total Device Time for L0 backend (ns)`.
    pub totals: Vec<(String, u64)>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Tables {
    /// Device timing tables (kernels and memory commands).
    pub fn device_timing(&self) -> impl Iterator<Item = &TimingTable> {
        self.timing.iter().filter(|t| t.summary == Summary::Device)
    }

    pub fn total(&self, label: &str) -> Option<u64> {
        self.totals
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, v)| *v)
    }

    pub fn is_empty(&self) -> bool {
        self.timing.is_empty() && self.properties.is_empty()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Timing(Summary),
    Properties,
    /// A section these tables do not cover (kernel metrics, the application's own output).
    Other,
}

/// Column positions of a timing header, found by name.
struct TimingColumns {
    /// Column names, for diagnostics.
    names: Vec<String>,
    count: usize,
    calls: usize,
    total: usize,
    percent: Option<usize>,
    average: usize,
    min: usize,
    max: usize,
}

impl TimingColumns {
    fn find(columns: &[&str]) -> Option<Self> {
        let at = |name: &str| columns.iter().position(|c| *c == name);
        Some(TimingColumns {
            names: columns.iter().map(|c| c.to_string()).collect(),
            count: columns.len(),
            calls: at("Calls")?,
            total: at("Time (ns)")?,
            percent: at("Time (%)"),
            average: at("Average (ns)")?,
            min: at("Min (ns)")?,
            max: at("Max (ns)")?,
        })
    }

    fn row(&self, line: &str) -> Result<TimingRow, RowError> {
        let (name, cells) = split_right(line, self.count - 1)
            .ok_or_else(|| RowError::Shape(format!("expected {} cells", self.count)))?;
        // `cells[i]` is column `i + 1`; column 0 is the name.
        let cell = |column: usize| cells[column - 1];
        let bad = |column: usize, problem: Problem| RowError::Number {
            column: self.names.get(column).cloned().unwrap_or_default(),
            text: cell(column).to_string(),
            problem,
        };
        let int = |column: usize| match cell(column).parse::<u64>() {
            Ok(value) if value as f64 <= number::LARGEST => Ok(value),
            Ok(_) => Err(bad(column, Problem::TooLarge)),
            Err(_) => Err(bad(
                column,
                number::classify(cell(column))
                    .err()
                    .unwrap_or(Problem::NotANumber),
            )),
        };
        let percent = match self.percent {
            Some(c) => number::parse_measure(cell(c)).map_err(|p| bad(c, p))?,
            None => None,
        };
        Ok(TimingRow {
            name: name.to_string(),
            calls: int(self.calls)?,
            total_ns: int(self.total)?,
            percent,
            average_ns: int(self.average)?,
            min_ns: int(self.min)?,
            max_ns: int(self.max)?,
        })
    }
}

enum Header {
    Timing(TimingColumns),
    Properties(Vec<String>),
    /// A header this parser does not read (its rows are skipped).
    Skip,
}

/// Parse every timing and Kernel Properties table in `text`; anything else is ignored.
pub fn parse_tables(text: &str) -> Tables {
    let mut tables = Tables::default();
    let mut warnings = Warnings::default();
    let mut section = Section::Other;
    let mut backend = String::new();
    let mut header: Option<Header> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            header = None;
            continue;
        }
        if let Some(title) = banner(line, "===") {
            section = match title {
                "Device Timing Summary" => Section::Timing(Summary::Device),
                "API Timing Summary" => Section::Timing(Summary::Api),
                "Kernel Properties" => Section::Properties,
                _ => Section::Other,
            };
            backend.clear();
            header = None;
            continue;
        }
        if let Some(title) = banner(line, "==") {
            if title.ends_with("Backend") && matches!(section, Section::Timing(_)) {
                backend = title.to_string();
            } else {
                section = Section::Other;
            }
            header = None;
            continue;
        }
        if section == Section::Other {
            continue;
        }
        if line.starts_with("Kernel,") || line.starts_with("Function,") {
            let columns: Vec<&str> = line
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            header = Some(match section {
                Section::Timing(summary) => match TimingColumns::find(&columns) {
                    Some(found) => {
                        tables.timing.push(TimingTable {
                            summary,
                            backend: backend.clone(),
                            rows: Vec::new(),
                        });
                        Header::Timing(found)
                    }
                    None => {
                        warnings.push(
                            "unitrace_unknown_header",
                            format!("line {}: timing header without Calls/Time (ns)/Average (ns)/Min (ns)/Max (ns): `{line}`", index + 1),
                            Some("this unitrace version prints another table layout; its rows are skipped"),
                        );
                        Header::Skip
                    }
                },
                _ => Header::Properties(columns.iter().map(|c| c.to_string()).collect()),
            });
            continue;
        }
        match &header {
            None => {
                if let Section::Timing(_) = section
                    && let Some((label, value)) = line.rsplit_once(':')
                    && let Ok(value) = value.trim().parse()
                {
                    tables.totals.push((label.trim().to_string(), value));
                }
            }
            Some(Header::Skip) => {}
            Some(Header::Timing(columns)) => match columns.row(line) {
                Ok(row) => {
                    if let Some(table) = tables.timing.last_mut() {
                        table.rows.push(row);
                    }
                }
                Err(RowError::Number {
                    column,
                    text,
                    problem,
                }) => tables.diagnostics.push(number::bad_number(
                    "device timing summary",
                    &format!("line {}", index + 1),
                    &column,
                    &text,
                    problem,
                )),
                Err(RowError::Shape(why)) => warnings.push(
                    "unitrace_bad_row",
                    format!("line {}: {why}: `{line}`", index + 1),
                    None,
                ),
            },
            Some(Header::Properties(columns)) => match split_right(line, columns.len() - 1) {
                Some((name, cells)) => tables.properties.push(KernelProperties {
                    name: name.to_string(),
                    fields: columns[1..]
                        .iter()
                        .cloned()
                        .zip(cells.iter().map(|c| c.to_string()))
                        .collect(),
                }),
                None => warnings.push(
                    "unitrace_bad_row",
                    format!(
                        "line {}: expected {} cells in Kernel Properties: `{line}`",
                        index + 1,
                        columns.len()
                    ),
                    None,
                ),
            },
        }
    }
    let bad = std::mem::take(&mut tables.diagnostics);
    tables.diagnostics = warnings.finish("unitrace summary");
    tables
        .diagnostics
        .extend(bad.into_iter().take(number::REPORTED_PER_FILE));
    tables
}

/// `=== Title ===` → `Title` (with `marks` `===` or `==`).
fn banner<'a>(line: &'a str, marks: &str) -> Option<&'a str> {
    let inner = line.strip_prefix(marks)?.strip_suffix(marks)?;
    // `===` lines also start with `==`; keep the levels apart.
    if inner.starts_with('=') || inner.ends_with('=') {
        return None;
    }
    Some(inner.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DPC_D: &str = include_str!("../../../tests/fixtures/unitrace/dpc_gemm_device_timing.txt");
    const DPC_H: &str = include_str!("../../../tests/fixtures/unitrace/dpc_gemm_host_timing.txt");
    const CL_D: &str = include_str!("../../../tests/fixtures/unitrace/cl_gemm_device_timing.txt");
    const CL_H: &str = include_str!("../../../tests/fixtures/unitrace/cl_gemm_host_timing.txt");
    const FP16: &str = include_str!("../../../tests/fixtures/unitrace/gemm_fp16_bytes.1799860");

    const GEMM: &str = "RunAndCheck(sycl::_V1::queue, std::vector<float, std::allocator<float> > const&, std::vector<float, std::allocator<float> > const&, std::vector<float, std::allocator<float> >&, unsigned int, float)::{lambda(sycl::_V1::handler&)#1}::operator()(sycl::_V1::handler&) const::__GEMM";

    fn row(
        name: &str,
        calls: u64,
        total: u64,
        pct: f64,
        avg: u64,
        min: u64,
        max: u64,
    ) -> TimingRow {
        TimingRow {
            name: name.into(),
            calls,
            total_ns: total,
            percent: Some(pct),
            average_ns: avg,
            min_ns: min,
            max_ns: max,
        }
    }

    #[test]
    fn level_zero_device_timing_reads_quoted_names_with_commas() {
        let t = parse_tables(DPC_D);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.total("Total Execution Time (ns)"), Some(214649009));
        assert_eq!(
            t.total("Total Device Time for L0 backend (ns)"),
            Some(97642160)
        );
        assert_eq!(t.timing.len(), 1);
        let table = &t.timing[0];
        assert_eq!(
            (table.summary, table.backend.as_str()),
            (Summary::Device, "L0 Backend")
        );
        assert_eq!(
            table.rows,
            vec![
                row(GEMM, 4, 89769760, 91.9375, 22442440, 22436320, 22454240),
                row(
                    "zeCommandListAppendMemoryCopy(M2D)",
                    12,
                    5238880,
                    5.365387,
                    436573,
                    328560,
                    774800
                ),
                row(
                    "zeCommandListAppendMemoryCopy(D2M)",
                    4,
                    2633520,
                    2.697114,
                    658380,
                    581280,
                    864800
                ),
            ]
        );
        assert_eq!(t.properties.len(), 1);
        let p = &t.properties[0];
        assert_eq!(p.name, GEMM);
        assert_eq!(p.get("Compiled"), Some("JIT"));
        assert_eq!(p.simd_width(), Some(32));
        assert_eq!(p.get("Register File Size Per Thread"), Some("128"));
    }

    #[test]
    fn opencl_device_timing_reads_bare_names() {
        let t = parse_tables(CL_D);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            t.total("Total Device Time for CL GPU backend (ns)"),
            Some(46625120)
        );
        let table = &t.timing[0];
        assert_eq!(table.backend, "CL GPU Backend");
        assert_eq!(
            table.rows,
            vec![
                row("GEMM", 4, 44280640, 94.97, 11070160, 9633280, 12989120),
                row(
                    "clEnqueueWriteBuffer",
                    8,
                    1406560,
                    3.02,
                    175820,
                    153040,
                    203600
                ),
                row(
                    "clEnqueueReadBuffer",
                    4,
                    937920,
                    2.01,
                    234480,
                    222400,
                    240080
                ),
            ]
        );
    }

    #[test]
    fn host_timing_gives_one_table_per_backend() {
        let t = parse_tables(DPC_H);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let backends: Vec<(&str, usize)> = t
            .timing
            .iter()
            .map(|t| (t.backend.as_str(), t.rows.len()))
            .collect();
        assert_eq!(
            backends,
            [
                ("L0 Backend", 41),
                ("CL CPU Backend", 5),
                ("CL GPU Backend", 5)
            ]
        );
        assert!(t.timing.iter().all(|t| t.summary == Summary::Api));
        assert_eq!(
            t.timing[0].rows[0],
            row(
                "zeCommandListHostSynchronize",
                8,
                19911548,
                63.257973,
                2488943,
                1270,
                5135361
            )
        );
        assert_eq!(
            t.total("Total API Time for L0 backend (ns)"),
            Some(31476739)
        );
        let cl = parse_tables(CL_H);
        assert_eq!(cl.timing[2].rows.len(), 21);
        assert_eq!(
            cl.timing[2].rows[0],
            row("clFinish", 4, 11973950, 73.76, 2993487, 2929705, 3024733)
        );
    }

    #[test]
    fn older_format_reads_space_separated_properties_and_stops_at_metrics() {
        let t = parse_tables(FP16);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let rows = &t.timing[0].rows;
        assert_eq!(rows.len(), 8);
        assert_eq!(
            rows[1],
            row(
                "hgemm_nocopy_nn_64x40_4x8[SIMD16 {56; 1; 1} {64; 8; 1}]",
                1,
                4731360,
                21.49,
                4731360,
                4731360,
                4731360
            )
        );
        assert_eq!(t.properties.len(), 3);
        assert_eq!(t.properties[0].get("Number of Arguments"), Some("27"));
        assert_eq!(t.properties[0].get("SLM Per Work Group"), Some("8"));
        assert_eq!(
            t.properties[2].name,
            "binary_test[SIMD16 {1; 1; 1} {4; 2; 1}]"
        );
        assert_eq!(t.properties[2].simd_width(), None);
    }

    #[test]
    fn damaged_rows_warn_and_keep_the_rest() {
        let text = "=== Device Timing Summary ===\n\n== L0 Backend ==\n\n\
            Kernel, Calls, Time (ns), Time (%), Average (ns), Min (ns), Max (ns)\n\
            \"a, b\", 2, 10, 50.0, 5, 4, 6\n\
            \"cut\", 2, 10\n\
            \"x\", two, 10, 50.0, 5, 4, 6\n\
            c\0, 1, 3, 1.0, 3, 3, 3\n";
        let t = parse_tables(text);
        let names: Vec<&str> = t.timing[0].rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a, b", "c\0"]);
        assert_eq!(t.diagnostics.len(), 2);
        assert!(
            t.diagnostics[1].message.contains("`two`"),
            "{:?}",
            t.diagnostics
        );
        assert!(parse_tables("").is_empty());
        assert!(parse_tables("Kernel, Calls\n1, 2\n").is_empty());
    }
}
