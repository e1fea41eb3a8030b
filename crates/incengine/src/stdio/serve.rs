//! The DUT side: this crate's switch driven in lockstep virtual time over
//! the stdio framing. [CONF-032] [CONF-033] [CONF-034]

use std::io::{self, BufWriter, Read, Write};

use epic_io::{PortStats, MAX_FRAME};
use epic_proto::time::Instant;

use super::codec::{read_to_dut, write_dut_frame, write_from_dut, write_idle};
use super::{FramingError, FromDut, ToDut};
use crate::counters::SwitchCounters;
use crate::dataplane::Dataplane;
use crate::spec::{SwitchError, SwitchSpec};

/// Why [`serve_stdio`] stopped before END or end of input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// The configuration could not be installed; REFUSED was sent with
    /// this error's text. [CONF-032]
    #[error("{0}")]
    Refused(SwitchError),
    /// A malformed message from the harness, or reading it failed.
    #[error(transparent)]
    Framing(#[from] FramingError),
    /// A FRAME for a port the switch does not have.
    #[error("frame on port {port}, but the switch has {ports} ports")]
    NoSuchPort {
        /// The port named.
        port: u16,
        /// Ports the switch has.
        ports: u16,
    },
    /// Writing to the harness failed.
    #[error("writing to the harness: {0}")]
    Output(io::Error),
}

/// Serves the switch of `spec` with `ports` ports as a device under test:
/// reads harness messages from `input`, writes the replies to `output`
/// (buffered, flushed after every READY, REFUSED and IDLE), and returns
/// the final counters after END or end of input on a message boundary.
/// [CONF-031]…[CONF-034]
///
/// Builds the switch first: if that fails (a context does not fit the
/// arena, a route or endpoint names a missing port) it sends REFUSED with
/// the error's text and returns [`StdioError::Refused`]; otherwise READY.
/// Then, for each FRAME or TIME at time t (never earlier than the one
/// before): the timers due at or before t fire, the frame (if any) goes
/// to the engine, or to the router when it is not EPIC; every frame this
/// releases is sent as a FRAME, then one IDLE with the next deadline.
/// A frame longer than the switch's largest (`epic_io::MAX_FRAME`) is
/// dropped and counted as `rx_oversize`, as the raw-socket ports do.
/// No clock is read and no input panics.
pub fn serve_stdio(
    spec: SwitchSpec,
    ports: u16,
    mut input: impl Read,
    output: impl Write,
) -> Result<SwitchCounters, StdioError> {
    let mut out = BufWriter::new(output);
    let describe = format!(
        "epic switch {} (incengine {}): {} ports, {} contexts",
        spec.name,
        env!("CARGO_PKG_VERSION"),
        ports,
        spec.contexts.len()
    );
    let mut dataplane = match Dataplane::build(spec, ports) {
        Ok(d) => d,
        Err(e) => {
            write_from_dut(&mut out, &FromDut::Refused(e.to_string()))
                .and_then(|()| out.flush())
                .map_err(StdioError::Output)?;
            return Err(StdioError::Refused(e));
        }
    };
    write_from_dut(&mut out, &FromDut::Ready(describe))
        .and_then(|()| out.flush())
        .map_err(StdioError::Output)?;
    let mut stats = vec![PortStats::default(); usize::from(ports)];
    let mut clock = Instant::ZERO;
    loop {
        let (time, frame) = match read_to_dut(&mut input)? {
            None | Some(ToDut::End) => break,
            Some(ToDut::Time(time)) => (time, None),
            Some(ToDut::Frame { time, port, frame }) => (time, Some((port, frame))),
        };
        if time < clock {
            return Err(FramingError::TimeBackwards {
                previous: clock,
                time,
            }
            .into());
        }
        clock = time;
        // Count the frame in first: the port's counters are borrowed by
        // `send` below.
        let frame = match frame {
            None => None,
            Some((port, frame)) => {
                let Some(s) = stats.get_mut(usize::from(port)) else {
                    return Err(StdioError::NoSuchPort { port, ports });
                };
                if frame.len() > MAX_FRAME {
                    s.rx_oversize += 1;
                    None
                } else {
                    s.rx_frames += 1;
                    s.rx_bytes += frame.len() as u64;
                    Some((port, frame))
                }
            }
        };
        let mut send = |port: u16, f: &[u8]| {
            if let Some(s) = stats.get_mut(usize::from(port)) {
                s.tx_frames += 1;
                s.tx_bytes += f.len() as u64;
            }
            write_dut_frame(&mut out, port, f)
        };
        // [CONF-033] Timers due at or before t, then the frame.
        if dataplane.poll_timeout().is_some_and(|due| due <= time) {
            dataplane
                .handle_timeout(time, &mut send)
                .map_err(StdioError::Output)?;
        }
        if let Some((port, frame)) = frame {
            dataplane
                .handle_frame(time, port, &frame, &mut send)
                .map_err(StdioError::Output)?;
        }
        write_idle(&mut out, dataplane.poll_timeout())
            .and_then(|()| out.flush())
            .map_err(StdioError::Output)?;
    }
    out.flush().map_err(StdioError::Output)?;
    Ok(dataplane.counters(|port| stats.get(usize::from(port)).copied().unwrap_or_default()))
}
