//! `epic decode FILE [--format text|json]`: one line per captured frame.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use epic_proto::trace::FrameRecord;

use epic_pcap::{CaptureError, CaptureReader};

/// Output format of `epic decode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// One human-readable line per frame.
    Text,
    /// JSON Lines: one object per frame.
    Json,
}

/// Arguments of `epic decode`.
#[derive(Debug, clap::Args)]
pub(crate) struct DecodeArgs {
    /// A pcap or pcapng capture of Ethernet frames.
    file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Decodes every frame; exit 0 when the capture was read to the end (bad
/// frames are records with an `error`), 2 when it could not be read.
pub(crate) fn run(args: &DecodeArgs) -> ExitCode {
    match decode(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(DecodeError::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("epic decode: {e}");
            ExitCode::from(2)
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum DecodeError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("writing output: {0}")]
    Output(#[from] io::Error),
}

fn decode(args: &DecodeArgs) -> Result<(), DecodeError> {
    let reader = CaptureReader::open(&args.file)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut number = 0u64;
    for frame in reader {
        let frame = match frame {
            Ok(f) => f,
            Err(e) => {
                out.flush()?;
                return Err(e.into());
            }
        };
        number += 1;
        let record = FrameRecord::decode(number, frame.ts_ns, &frame.data);
        match args.format {
            Format::Text => writeln!(out, "{record}")?,
            Format::Json => {
                serde_json::to_writer(&mut out, &record).map_err(io::Error::from)?;
                out.write_all(b"\n")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
