//! The CPU workload `polyprof demo` runs when no GPU profiler is usable: the four kernels of
//! the bundled CUDA program, written for the CPU, each checked, then a pytest-style summary so
//! the runner's end-marker detection is exercised too.

use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use polyprof::results::callpath::{Session, scope};

/// Arguments of the hidden `polyprof demo-workload`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Problem size (matrix side; vectors are size² long).
    #[arg(long, default_value_t = 192)]
    pub size: usize,
    /// Record the four kernels as call-path scopes with their FLOPs and bytes and write the
    /// session's profile (JSON) here, for `polyprof demo` to add to the run's report.
    #[arg(long, value_name = "FILE")]
    pub scopes: Option<PathBuf>,
}

/// FLOPs and the bytes each kernel must move at least (inputs read once, output written once;
/// f32 = 4 bytes), the figures a GPU profiler would report for the same kernels.
fn work(name: &str, n: f64) -> Vec<(&'static str, f64)> {
    let elements = n * n;
    match name {
        "vector_add" => vec![("flops32", elements), ("bytes", 3.0 * elements * 4.0)],
        "matmul_naive" | "matmul_tiled<32>" => {
            vec![
                ("flops32", 2.0 * n * n * n),
                ("bytes", 3.0 * elements * 4.0),
            ]
        }
        // Summed in f64: one FP64 add per element, f32 inputs.
        "reduce_sum" => vec![("flops64", elements), ("bytes", elements * 4.0)],
        _ => Vec::new(),
    }
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let n = args.size.max(8);
    let session = match &args.scopes {
        Some(_) => Some(Session::start("demo-workload")?),
        None => None,
    };
    let nf = n as f64;
    let started = Instant::now();
    let mut out = std::io::stdout().lock();
    let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32).collect();
    let b: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32).collect();
    let mut failures = 0;
    let mut check = |name: &str, ok: bool, seconds: f64| -> std::io::Result<()> {
        failures += usize::from(!ok);
        writeln!(
            out,
            "{name:<16} {:>9.3} ms  {}",
            seconds * 1e3,
            if ok { "PASSED" } else { "FAILED" }
        )
    };

    let t = Instant::now();
    let guard = scope("vector_add", &work("vector_add", nf));
    let sum: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    drop(guard);
    check(
        "vector_add",
        black_box(&sum)[n + 1] == a[n + 1] + b[n + 1],
        t.elapsed().as_secs_f64(),
    )?;

    let t = Instant::now();
    let guard = scope("matmul_naive", &work("matmul_naive", nf));
    let naive = matmul_naive(&a, &b, n);
    drop(guard);
    check(
        "matmul_naive",
        black_box(&naive).len() == n * n,
        t.elapsed().as_secs_f64(),
    )?;

    let t = Instant::now();
    let guard = scope("matmul_tiled<32>", &work("matmul_tiled<32>", nf));
    let tiled = matmul_tiled(&a, &b, n, 32);
    drop(guard);
    check(
        "matmul_tiled<32>",
        tiled == naive,
        t.elapsed().as_secs_f64(),
    )?;

    let t = Instant::now();
    let guard = scope("reduce_sum", &work("reduce_sum", nf));
    let total: f64 = a.iter().map(|&x| f64::from(x)).sum();
    drop(guard);
    let expected: f64 = (0..n * n).map(|i| (i % 7) as f64).sum();
    check(
        "reduce_sum",
        black_box(total) == expected,
        t.elapsed().as_secs_f64(),
    )?;

    let elapsed = started.elapsed().as_secs_f64();
    if let (Some(session), Some(path)) = (session, &args.scopes) {
        let profile = session.finish();
        let text = serde_json::to_vec(&profile)?;
        std::fs::write(path, text).with_context(|| format!("cannot write `{}`", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if failures == 0 {
        writeln!(out, "4 passed in {elapsed:.2}s")?;
        Ok(0)
    } else {
        writeln!(
            out,
            "{failures} failed, {} passed in {elapsed:.2}s",
            4 - failures
        )?;
        Ok(1)
    }
}

fn matmul_naive(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
    let mut c = vec![0.0; n * n];
    for row in 0..n {
        for col in 0..n {
            c[row * n + col] = (0..n).map(|k| a[row * n + k] * b[k * n + col]).sum();
        }
    }
    c
}

fn matmul_tiled(a: &[f32], b: &[f32], n: usize, tile: usize) -> Vec<f32> {
    let mut c = vec![0.0; n * n];
    for row in 0..n {
        for col in 0..n {
            // Same summation order as the naive kernel, walked tile by tile, so results match.
            let mut acc = 0.0;
            for start in (0..n).step_by(tile) {
                for k in start..(start + tile).min(n) {
                    acc += a[row * n + k] * b[k * n + col];
                }
            }
            c[row * n + col] = acc;
        }
    }
    c
}
