//! `xpbd-sim`: parses the command line, runs the command and maps its result to an exit code
//! (0 ok, 1 failed after start or `diff` found differences, 2 bad input, 3 a quality gate
//! broken). Nothing else lives here but the `say!` macro the command modules share.

/// `eprintln!` that never panics: a closed stderr (`xpbd-sim run … 2>&1 | head -1`) must not
/// stop or crash a run.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod app;
mod cli;
mod shot;
mod signals;
mod wedge_cmd;

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    xpbd_sim::memory::return_large_blocks_when_freed();
    // A panic is a bug, never the user's fault: say so in one line, without a backtrace.
    // Writes ignore errors: a closed stderr must not turn into a second panic.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(
            std::io::stderr(),
            "error: internal error in xpbd-sim (please report it): {info}"
        );
    }));
    let cli = cli::Cli::parse();
    match std::panic::catch_unwind(|| app::dispatch(cli.command)) {
        Ok(Ok(outcome)) => ExitCode::from(outcome.exit_code()),
        Ok(Err(failure)) => {
            let _ = writeln!(std::io::stderr(), "error: {:#}", failure.error());
            ExitCode::from(failure.exit_code())
        }
        Err(_) => ExitCode::from(1),
    }
}
