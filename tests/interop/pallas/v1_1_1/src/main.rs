//! The harness's roles at pallas-network 1.1.1, run by `dmq-pallas-interop 1.1.1 <role> ...`
//! (see `../../src/main.rs`); the role code is the main harness's, included as-is.

#[path = "../../src/args.rs"]
mod args;
#[path = "../../src/output.rs"]
mod output;
#[macro_use]
#[path = "../../src/roles.rs"]
mod roles;
mod v1_1_1;

use std::process::ExitCode;

use args::Args;

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let role = match argv.next() {
        Some(role) => role,
        None => return usage("expected a role"),
    };
    let args = match Args::parse(argv) {
        Ok(args) => args,
        Err(message) => return usage(&message),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(v1_1_1::run(&role, &args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => usage(&message),
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("dmq-pallas-interop-1-1-1: {message}");
    eprintln!("usage: dmq-pallas-interop-1-1-1 <signer|aggregator|server> --socket PATH --magic N [...]");
    ExitCode::from(2)
}
