//! The CPU workload `polyprof demo` runs when no GPU profiler is usable: the four kernels of
//! the bundled CUDA program, written for the CPU, each checked, then a pytest-style summary so
//! the runner's end-marker detection is exercised too.

use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

/// Arguments of the hidden `polyprof demo-workload`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Problem size (matrix side; vectors are size² long).
    #[arg(long, default_value_t = 192)]
    pub size: usize,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let n = args.size.max(8);
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
    let sum: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    check(
        "vector_add",
        black_box(&sum)[n + 1] == a[n + 1] + b[n + 1],
        t.elapsed().as_secs_f64(),
    )?;

    let t = Instant::now();
    let naive = matmul_naive(&a, &b, n);
    check(
        "matmul_naive",
        black_box(&naive).len() == n * n,
        t.elapsed().as_secs_f64(),
    )?;

    let t = Instant::now();
    let tiled = matmul_tiled(&a, &b, n, 32);
    check(
        "matmul_tiled<32>",
        tiled == naive,
        t.elapsed().as_secs_f64(),
    )?;

    let t = Instant::now();
    let total: f64 = a.iter().map(|&x| f64::from(x)).sum();
    let expected: f64 = (0..n * n).map(|i| (i % 7) as f64).sum();
    check(
        "reduce_sum",
        black_box(total) == expected,
        t.elapsed().as_secs_f64(),
    )?;

    let elapsed = started.elapsed().as_secs_f64();
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
