//! The stats log: JSON Lines, one `run` record, one `frame` record per frame, one `summary`
//! (SPEC §3; field reference in docs/output-format.md). Flushed after every record so a
//! watcher (or a killed run) always sees whole lines. serde_json writes non-finite floats as
//! `null`, never as a `NaN` token; the solver stops before a state can become non-finite.

use crate::quote::shown_path;
use anyhow::{Context, Result};
use serde::Serialize;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct StatsLog {
    path: PathBuf,
    file: BufWriter<File>,
}

impl StatsLog {
    pub fn create(path: &Path) -> Result<Self> {
        let file =
            File::create(path).with_context(|| format!("cannot create {}", shown_path(path)))?;
        Ok(StatsLog {
            path: path.to_path_buf(),
            file: BufWriter::new(file),
        })
    }

    /// Reopens the log of an interrupted run for `--resume`: keeps its `run` and `resume`
    /// records and the `frame` records up to `last_frame` (rewritten crash-safely), then
    /// appends after them.
    pub fn resume(path: &Path, last_frame: u64) -> Result<Self> {
        let text = read_log(path)?;
        let mut kept = String::new();
        for (line, record) in records(&text) {
            let keep = match record["type"].as_str() {
                Some("run") | Some("resume") => true,
                Some("frame") => record["frame"].as_u64().is_some_and(|f| f <= last_frame),
                _ => false,
            };
            if keep {
                kept.push_str(line);
                kept.push('\n');
            }
        }
        super::durable::write_atomically(path, kept.as_bytes())?;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {}", shown_path(path)))?;
        Ok(StatsLog {
            path: path.to_path_buf(),
            file: BufWriter::new(file),
        })
    }

    /// The frames an earlier run's log has a `frame` record for: those whose files were all
    /// written (the record follows the files).
    pub fn recorded_frames(path: &Path) -> Result<std::collections::BTreeSet<u64>> {
        let text = read_log(path)?;
        Ok(records(&text)
            .filter(|(_, record)| record["type"] == "frame")
            .filter_map(|(_, record)| record["frame"].as_u64())
            .collect())
    }

    /// Every whole record of a log, in order (a line cut short by a kill is skipped).
    pub fn read_records(path: &Path) -> Result<Vec<serde_json::Value>> {
        let text = read_log(path)?;
        Ok(records(&text).map(|(_, record)| record).collect())
    }

    /// Appends one record as a line and flushes it to the file.
    pub fn write<T: Serialize>(&mut self, record: &T) -> Result<()> {
        self.write_line(&to_line(record)?)
    }

    /// Appends a record already serialised by [`to_line`] and flushes it.
    pub fn write_line(&mut self, line: &str) -> Result<()> {
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.write_all(b"\n"))
            .and_then(|()| self.file.flush())
            .with_context(|| format!("cannot write {}", shown_path(&self.path)))
    }
}

fn read_log(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {} to resume it", shown_path(path)))
}

/// The whole records of a log with their lines; a line cut short by a kill is skipped.
fn records(text: &str) -> impl Iterator<Item = (&str, serde_json::Value)> {
    text.lines()
        .filter_map(|line| Some((line, serde_json::from_str(line).ok()?)))
}

/// A record as one line of JSON.
pub fn to_line<T: Serialize>(record: &T) -> Result<String> {
    Ok(serde_json::to_string(record)?)
}

impl StatsLog {}

/// Seconds since the Unix epoch as an RFC 3339 UTC timestamp (`2026-11-22T04:05:06Z`).
pub fn rfc3339_utc(unix_seconds: u64) -> String {
    let days = unix_seconds / 86_400;
    let seconds_of_day = unix_seconds % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        seconds_of_day / 3600,
        seconds_of_day % 3600 / 60,
        seconds_of_day % 60
    )
}

/// Peak resident memory of this process (`VmHWM`), bytes, where the OS reports it.
pub fn peak_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_civil_utc() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_795_316_706), "2026-11-22T03:05:06Z");
    }
}
