//! One JSON object per line on standard output, flushed at once: the tests read it live.

use std::io::Write;

use serde_json::Value;

pub fn emit(event: Value) {
    let mut out = std::io::stdout().lock();
    // A closed pipe means the test has what it wanted; nothing to report to anyone.
    let _ = writeln!(out, "{event}");
    let _ = out.flush();
}

pub fn hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}
