//! SIGINT and SIGTERM (SPEC §4; docs/output-format.md "Stopping and resuming"): the first
//! asks the run to stop at the next frame boundary, write a checkpoint and exit with
//! 128 + the signal number (130 for SIGINT, 143 for SIGTERM, as shells report them); a
//! second one of either exits at once with that code. SIGXFSZ (a file-size limit such as
//! `ulimit -f` reached) is caught so the write fails with an error the run reports, instead
//! of the process being killed without a word.

use signal_hook::consts::{SIGINT, SIGTERM, SIGXFSZ};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Which stop signals have arrived.
pub struct StopRequests {
    interrupt: Arc<AtomicBool>,
    terminate: Arc<AtomicBool>,
}

impl StopRequests {
    /// Installs the handlers. Failing to install them only loses graceful stopping.
    pub fn install() -> std::io::Result<StopRequests> {
        let requests = StopRequests {
            interrupt: Arc::new(AtomicBool::new(false)),
            terminate: Arc::new(AtomicBool::new(false)),
        };
        for (signal, flag) in [
            (SIGINT, &requests.interrupt),
            (SIGTERM, &requests.terminate),
        ] {
            let code = 128 + signal;
            // Registered first, so it sees the flags before this signal sets them: a second
            // signal, of either kind, exits at once.
            signal_hook::flag::register_conditional_shutdown(
                signal,
                code,
                Arc::clone(&requests.interrupt),
            )?;
            signal_hook::flag::register_conditional_shutdown(
                signal,
                code,
                Arc::clone(&requests.terminate),
            )?;
            signal_hook::flag::register(signal, Arc::clone(flag))?;
        }
        signal_hook::flag::register(SIGXFSZ, Arc::new(AtomicBool::new(false)))?;
        Ok(requests)
    }

    /// The signal asking to stop, if one has arrived.
    pub fn requested(&self) -> Option<Stop> {
        if self.interrupt.load(Ordering::SeqCst) {
            Some(Stop::Interrupt)
        } else if self.terminate.load(Ordering::SeqCst) {
            Some(Stop::Terminate)
        } else {
            None
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    Interrupt,
    Terminate,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
        }
    }

    /// The exit code: 128 + the signal number.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::Interrupt => (128 + SIGINT) as u8,
            Stop::Terminate => (128 + SIGTERM) as u8,
        }
    }
}
