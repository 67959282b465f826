//! The background writer: frame files and stats lines are encoded and written on their own
//! thread while the solver computes the next frame.
//!
//! The solver hands over a snapshot (positions, velocities, the frame's stats line) through a
//! channel with one slot, so at most one frame waits while another is written: one frame of
//! lag, bounded memory, and the solver waits only when the disk is slower than it. Snapshot
//! buffers travel back to be reused. Files are written in frame order, and a frame's stats
//! line only after its files are whole.

use super::frame::FrameWriter;
use super::stats::StatsLog;
use crate::mesh::fluid_surface::FluidSurfaceMesh;
use crate::model::ObjectLayout;
use anyhow::{anyhow, Context, Result};
use glam::DVec3;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

struct Snapshot {
    frame: u64,
    x: Vec<DVec3>,
    v: Vec<DVec3>,
    stats_line: String,
    /// New object layouts when the topology changed (tearing) since the last frame.
    objects: Option<Vec<ObjectLayout>>,
    /// The frame's reconstructed fluid surfaces (`fluid.surface`).
    surfaces: Vec<FluidSurfaceMesh>,
}

/// What the writer thread did, returned when it finishes.
pub struct WriterReport {
    pub stats: StatsLog,
    /// Frames whose files and stats line were written completely.
    pub frames_written: u64,
    pub bytes: u64,
    /// Time the writer thread spent encoding and writing (overlaps the simulation).
    pub busy: Duration,
    /// The first I/O error, after which nothing more was written.
    pub error: Option<anyhow::Error>,
}

pub struct BackgroundWriter {
    sender: SyncSender<Snapshot>,
    recycled: Receiver<Snapshot>,
    thread: JoinHandle<WriterReport>,
    /// Whether frames have files (any format): without, snapshots carry no particles.
    writes_files: bool,
    /// Time the solver spent waiting for a free slot.
    pub waited: Duration,
}

impl BackgroundWriter {
    pub fn start(files: FrameWriter, stats: StatsLog, objects: Vec<ObjectLayout>) -> Result<Self> {
        let writes_files = files.options().writes_files();
        let (sender, receiver) = mpsc::sync_channel::<Snapshot>(1);
        let (recycle, recycled) = mpsc::channel::<Snapshot>();
        let thread = std::thread::Builder::new()
            .name("xpbd-writer".into())
            .spawn(move || write_loop(files, stats, objects, receiver, recycle))
            .map_err(|e| anyhow!("cannot start the writer thread: {e}"))?;
        Ok(BackgroundWriter {
            sender,
            recycled,
            thread,
            writes_files,
            waited: Duration::ZERO,
        })
    }

    /// Whether frames have files: without, the writer keeps only the stats log.
    pub fn writes_files(&self) -> bool {
        self.writes_files
    }

    /// Hands frame `frame` over for writing (the positions and velocities are copied only
    /// when there are frame files to write: `--no-output` keeps no second copy). Fails when the writer has stopped on an error
    /// (call [`finish`](Self::finish) to learn it).
    pub fn submit(
        &mut self,
        frame: u64,
        x: &[DVec3],
        v: &[DVec3],
        stats_line: String,
        objects: Option<Vec<ObjectLayout>>,
        surfaces: Vec<FluidSurfaceMesh>,
    ) -> Result<()> {
        let mut snapshot = self.recycled.try_recv().unwrap_or(Snapshot {
            frame,
            x: Vec::new(),
            v: Vec::new(),
            stats_line: String::new(),
            objects: None,
            surfaces: Vec::new(),
        });
        snapshot.objects = objects;
        snapshot.surfaces = if self.writes_files {
            surfaces
        } else {
            Vec::new()
        };
        snapshot.frame = frame;
        snapshot.x.clear();
        snapshot.v.clear();
        if self.writes_files {
            snapshot.x.extend_from_slice(x);
            snapshot.v.extend_from_slice(v);
        }
        snapshot.stats_line = stats_line;
        let start = Instant::now();
        let sent = self.sender.send(snapshot);
        self.waited += start.elapsed();
        sent.map_err(|_| anyhow!("the writer stopped"))
    }

    /// Waits until every frame handed over is written and returns what the writer did.
    pub fn finish(self) -> WriterReport {
        drop(self.sender);
        match self.thread.join() {
            Ok(report) => report,
            Err(_) => panic!("the writer thread panicked"),
        }
    }
}

fn write_loop(
    mut files: FrameWriter,
    mut stats: StatsLog,
    mut objects: Vec<ObjectLayout>,
    receiver: Receiver<Snapshot>,
    recycle: mpsc::Sender<Snapshot>,
) -> WriterReport {
    let mut frames_written = 0;
    let mut bytes = 0;
    let mut busy = Duration::ZERO;
    let mut error = None;
    for mut snapshot in receiver {
        if let Some(changed) = snapshot.objects.take() {
            objects = changed;
        }
        let start = Instant::now();
        let written = files
            .write_frame(&objects, &snapshot.x, &snapshot.v, snapshot.frame)
            .and_then(|b| {
                let surfaces = &snapshot.surfaces;
                Ok(b + files.write_fluid_surfaces(&objects, surfaces, snapshot.frame)?)
            })
            .and_then(|b| stats.write_line(&snapshot.stats_line).map(|()| b))
            .with_context(|| format!("frame {}", snapshot.frame));
        busy += start.elapsed();
        match written {
            Ok(b) => {
                bytes += b;
                frames_written += 1;
            }
            Err(e) => {
                error = Some(e);
                break; // dropping the receiver makes the next submit fail
            }
        }
        let _ = recycle.send(snapshot);
    }
    if error.is_none() {
        // The whole-run files get every frame written, however the run ended.
        let start = Instant::now();
        match files.finish().context("the whole-run files") {
            Ok(b) => bytes += b,
            Err(e) => error = Some(e),
        }
        busy += start.elapsed();
    }
    WriterReport {
        stats,
        frames_written,
        bytes,
        busy,
        error,
    }
}
