//! Integration-test target: CPU work with progress points placed through the
//! published `coz` crate (the Coz ABI as Rust programs use it).
//!
//! Usage: rust_progress [-n ITERATIONS]  (default: about 3 s of plain run time)
//! Stdout: one deterministic line (iterations and checksum).
//! Lines the tests look for carry a `// @line:NAME` marker.

use std::hint::black_box;
use std::time::Instant;

/// About 1 ms of work per iteration on the reference machine.
const DEFAULT_ITERATIONS: u64 = 3000;
const STEPS_PER_ITERATION: u64 = 450_000;

/// Dependent multiply-xor chain: the optimizer can neither remove nor vectorize it.
#[inline(never)]
fn transaction_work(x: u64, n: u64) -> u64 {
    let mut x = black_box(x);
    for i in 0..n { x = (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9).wrapping_add(i); } // @line:rust_transaction_work
    x
}

#[inline(never)]
fn other_work(x: u64, n: u64) -> u64 {
    let mut x = black_box(x);
    for i in 0..n { x = (x ^ (x >> 31)).wrapping_mul(0x94d0_49bb_1331_11eb).wrapping_add(i); } // @line:rust_other_work
    x
}

fn main() {
    let mut iterations = DEFAULT_ITERATIONS;
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "-n" if i + 1 < args.len() => {
                iterations = args[i + 1].parse().unwrap_or_else(|_| {
                    eprintln!("rust_progress: bad -n value: {}", args[i + 1]);
                    std::process::exit(2)
                });
                i += 2;
            }
            other => {
                eprintln!("rust_progress: unknown argument: {other} (usage: rust_progress [-n ITERATIONS])");
                std::process::exit(2);
            }
        }
    }

    let start = Instant::now();
    let mut x: u64 = 0x1234;
    for _ in 0..iterations {
        coz::begin!("rust_transaction"); // @line:rust_begin
        x = transaction_work(x, STEPS_PER_ITERATION * 3 / 4);
        coz::end!("rust_transaction"); // @line:rust_end
        x = other_work(x, STEPS_PER_ITERATION / 4);
        coz::progress!(); // @line:rust_progress_unnamed
        coz::progress!("rust_iteration"); // @line:rust_progress_named
    }
    println!("rust_progress iterations={iterations} checksum={x}");
    eprintln!("rust_progress: elapsed={:.3} s", start.elapsed().as_secs_f64());
}
