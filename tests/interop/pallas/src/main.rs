//! Test harness: plays Mithril's DMQ parts with pallas-network's own clients and servers.
//!
//! The pytest suite in `tests/interop/` runs this program against a real `dmq-node` (roles
//! `signer` and `aggregator`) and runs its `server` role against the project's client library.
//! Every message and verdict crosses the wire through pallas's own types and codecs, at each
//! release line Mithril has shipped: 1.x (current layout), 0.35 (legacy layout, structured
//! reject reasons) and 0.34 (legacy layout, reject reason as bare text).
//!
//! With pallas-network 1.x it also stands in for cardano-node (role `cardano-node`): the
//! node's stake link queries it over local state query and reads pallas's encodings.
//!
//! pallas-network 1.1.1 (what current Mithril pins) cannot share this program's dependency graph
//! with 1.4.0 (cargo admits one release per semver-compatible range), so it is built as its own
//! program (`v1_1_1/`, the same role code) beside this one, which hands version `1.1.1` to it.
//!
//! Usage: `dmq-pallas-interop <1|1.1.1|0.35|0.34> <signer|aggregator|server|cardano-node> [--flag value]...`,
//! `dmq-pallas-interop 1 cardano-node --socket PATH --magic N --chain FILE`.
//! Everything it learns is printed on standard output as one JSON object per line.

mod args;
mod cardano_node;
mod output;
#[macro_use]
mod roles;
mod v034;
mod v035;
mod v1;

use std::process::ExitCode;

use args::Args;

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let (version, role) = match (argv.next(), argv.next()) {
        (Some(version), Some(role)) => (version, role),
        _ => return usage("expected a pallas version and a role"),
    };
    if version == "1.1.1" {
        return v1_1_1(&role, argv);
    }
    let args = match Args::parse(argv) {
        Ok(args) => args,
        Err(message) => return usage(&message),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let result = runtime.block_on(async {
        match version.as_str() {
            "1" if role == "cardano-node" => cardano_node::run(&args).await,
            "1" => v1::run(&role, &args).await,
            "0.35" => v035::run(&role, &args).await,
            "0.34" => v034::run(&role, &args).await,
            other => Err(format!("unknown pallas version {other:?} (1, 1.1.1, 0.35 or 0.34)")),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => usage(&message),
    }
}

/// Runs the 1.1.1 program, found beside this one, with the same role and flags, in this process
/// (exec): the tests see one program whichever line they ask for.
fn v1_1_1(role: &str, argv: impl Iterator<Item = String>) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let program = match std::env::current_exe() {
        Ok(path) => path.with_file_name(V1_1_1_PROGRAM),
        Err(e) => return usage(&format!("cannot find this program's path: {e}")),
    };
    let error = std::process::Command::new(&program).arg(role).args(argv).exec();
    usage(&format!("cannot run {}: {error}", program.display()))
}

const V1_1_1_PROGRAM: &str = "dmq-pallas-interop-1-1-1";

fn usage(message: &str) -> ExitCode {
    eprintln!("dmq-pallas-interop: {message}");
    eprintln!("usage: dmq-pallas-interop <1|1.1.1|0.35|0.34> <signer|aggregator|server|cardano-node> --socket PATH --magic N [...]");
    eprintln!("       dmq-pallas-interop 1 cardano-node --socket PATH --magic N --chain FILE");
    ExitCode::from(2)
}
