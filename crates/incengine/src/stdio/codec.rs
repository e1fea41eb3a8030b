//! The framing codec, shared by the harness and the DUT. [CONF-030]
//! [CONF-031] [CONF-032]
//!
//! The readers never panic and never allocate more than one message
//! ([`MAX_MESSAGE`] bytes) whatever the input; every malformed input is a
//! [`FramingError`]. The writers refuse (with
//! [`io::ErrorKind::InvalidInput`]) a message longer than
//! [`MAX_MESSAGE`].

use std::io::{self, Read, Write};

use epic_proto::time::Instant;

/// The largest length field: the kind byte and the body. [CONF-030]
pub const MAX_MESSAGE: u32 = 65_536;

/// Bytes of the length field.
const LENGTH_FIELD: usize = 4;

/// The message kinds. [CONF-031] [CONF-032]
pub mod kind {
    /// Harness → DUT: `u64` time_ns, `u16` port, the frame bytes.
    pub const FRAME: u8 = 0x01;
    /// Harness → DUT: `u64` time_ns; virtual time has advanced.
    pub const TIME: u8 = 0x02;
    /// Harness → DUT: empty; the DUT stops and exits 0.
    pub const END: u8 = 0x03;
    /// DUT → harness: UTF-8 text describing the DUT.
    pub const READY: u8 = 0x81;
    /// DUT → harness: UTF-8 reason the configuration was refused.
    pub const REFUSED: u8 = 0x82;
    /// DUT → harness: `u16` port, the frame bytes.
    pub const DUT_FRAME: u8 = 0x83;
    /// DUT → harness: `u64` deadline_ns, `u64::MAX` for none.
    pub const IDLE: u8 = 0x84;
}

/// A message from the harness to the DUT. [CONF-031]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToDut {
    /// A frame arriving on `port` at `time` (Ethernet, no FCS; any bytes,
    /// malformed included).
    Frame {
        /// The virtual time it arrives at.
        time: Instant,
        /// The ingress port: the index in the configuration's
        /// `interfaces`.
        port: u16,
        /// The frame.
        frame: Vec<u8>,
    },
    /// Virtual time has advanced to this instant.
    Time(Instant),
    /// Stop and exit 0.
    End,
}

/// A message from the DUT to the harness. [CONF-032]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromDut {
    /// The configuration is installed; text describing the DUT.
    Ready(String),
    /// The configuration cannot be installed; why.
    Refused(String),
    /// A frame leaving through `port`.
    Frame {
        /// The egress port.
        port: u16,
        /// The frame.
        frame: Vec<u8>,
    },
    /// The end of a reply: the DUT's next timer, `None` for none. On the
    /// wire `None` is `u64::MAX`, so `Some(Instant::MAX)` reads back as
    /// `None`.
    Idle(Option<Instant>),
}

/// A malformed message, or the input failing. [CONF-030] [CONF-033]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FramingError {
    /// Reading the input failed.
    #[error("reading a message: {0}")]
    Io(#[from] io::Error),
    /// The length field is 0 or above [`MAX_MESSAGE`].
    #[error("message length {0} is outside 1..={MAX_MESSAGE}")]
    Length(u32),
    /// A kind this direction does not have.
    #[error("unknown message kind {0:#04x}")]
    UnknownKind(u8),
    /// The body is shorter than its kind needs.
    #[error("message kind {kind:#04x}: body of {len} bytes, at least {min} needed")]
    ShortBody {
        /// The kind.
        kind: u8,
        /// The body's length.
        len: usize,
        /// The least its kind needs.
        min: usize,
    },
    /// The body is longer than its fixed-size kind allows.
    #[error("message kind {kind:#04x}: body of {len} bytes, at most {max} allowed")]
    LongBody {
        /// The kind.
        kind: u8,
        /// The body's length.
        len: usize,
        /// The most its kind allows.
        max: usize,
    },
    /// A text body that is not UTF-8.
    #[error("message kind {kind:#04x}: text is not UTF-8: {source}")]
    Utf8 {
        /// The kind.
        kind: u8,
        /// Where the text went wrong.
        source: std::string::FromUtf8Error,
    },
    /// The input ended inside a message.
    #[error("input ended inside a message: {read} of its {expected} bytes")]
    Eof {
        /// Bytes of the message read, length field included.
        read: usize,
        /// Bytes it needed (4 while in the length field).
        expected: usize,
    },
    /// A time earlier than the one before. [CONF-033]
    #[error("time went backwards: {time} after {previous}")]
    TimeBackwards {
        /// The time of the message before.
        previous: Instant,
        /// The time of this message.
        time: Instant,
    },
}

/// Writes one harness → DUT message. [CONF-031]
pub fn write_to_dut(w: &mut impl Write, m: &ToDut) -> io::Result<()> {
    match m {
        ToDut::Frame { time, port, frame } => write_message(
            w,
            kind::FRAME,
            &[&time.as_nanos().to_be_bytes(), &port.to_be_bytes(), frame],
        ),
        ToDut::Time(time) => write_message(w, kind::TIME, &[&time.as_nanos().to_be_bytes()]),
        ToDut::End => write_message(w, kind::END, &[]),
    }
}

/// Writes one DUT → harness message. [CONF-032]
pub fn write_from_dut(w: &mut impl Write, m: &FromDut) -> io::Result<()> {
    match m {
        FromDut::Ready(text) => write_message(w, kind::READY, &[text.as_bytes()]),
        FromDut::Refused(text) => write_message(w, kind::REFUSED, &[text.as_bytes()]),
        FromDut::Frame { port, frame } => write_dut_frame(w, *port, frame),
        FromDut::Idle(deadline) => write_idle(w, *deadline),
    }
}

/// Writes a DUT → harness FRAME from a borrowed frame.
pub(super) fn write_dut_frame(w: &mut impl Write, port: u16, frame: &[u8]) -> io::Result<()> {
    write_message(w, kind::DUT_FRAME, &[&port.to_be_bytes(), frame])
}

/// Writes a DUT → harness IDLE.
pub(super) fn write_idle(w: &mut impl Write, deadline: Option<Instant>) -> io::Result<()> {
    let ns = deadline.map_or(u64::MAX, Instant::as_nanos);
    write_message(w, kind::IDLE, &[&ns.to_be_bytes()])
}

/// Writes the length field, the kind and the body made of `parts`.
fn write_message(w: &mut impl Write, kind: u8, parts: &[&[u8]]) -> io::Result<()> {
    let len = parts
        .iter()
        .map(|p| p.len())
        .try_fold(1usize, usize::checked_add)
        .and_then(|l| u32::try_from(l).ok())
        .filter(|l| *l <= MAX_MESSAGE)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("message kind {kind:#04x} is longer than {MAX_MESSAGE} bytes"),
            )
        })?;
    w.write_all(&len.to_be_bytes())?;
    w.write_all(&[kind])?;
    for p in parts {
        w.write_all(p)?;
    }
    Ok(())
}

/// Reads one harness → DUT message; `None` at end of input on a message
/// boundary. [CONF-031]
pub fn read_to_dut(r: &mut impl Read) -> Result<Option<ToDut>, FramingError> {
    let Some((k, body)) = read_message(r)? else {
        return Ok(None);
    };
    let mut b = Body::new(k, &body);
    let m = match k {
        kind::FRAME => {
            let time = Instant::from_nanos(b.u64()?);
            let port = b.u16()?;
            ToDut::Frame {
                time,
                port,
                frame: b.rest().to_vec(),
            }
        }
        kind::TIME => {
            let time = Instant::from_nanos(b.u64()?);
            b.end()?;
            ToDut::Time(time)
        }
        kind::END => {
            b.end()?;
            ToDut::End
        }
        _ => return Err(FramingError::UnknownKind(k)),
    };
    Ok(Some(m))
}

/// Reads one DUT → harness message; `None` at end of input on a message
/// boundary. [CONF-032]
pub fn read_from_dut(r: &mut impl Read) -> Result<Option<FromDut>, FramingError> {
    let Some((k, body)) = read_message(r)? else {
        return Ok(None);
    };
    let text = |body: Vec<u8>| {
        String::from_utf8(body).map_err(|source| FramingError::Utf8 { kind: k, source })
    };
    let m = match k {
        kind::READY => FromDut::Ready(text(body)?),
        kind::REFUSED => FromDut::Refused(text(body)?),
        kind::DUT_FRAME => {
            let mut b = Body::new(k, &body);
            let port = b.u16()?;
            FromDut::Frame {
                port,
                frame: b.rest().to_vec(),
            }
        }
        kind::IDLE => {
            let mut b = Body::new(k, &body);
            let ns = b.u64()?;
            b.end()?;
            FromDut::Idle((ns != u64::MAX).then_some(Instant::from_nanos(ns)))
        }
        _ => return Err(FramingError::UnknownKind(k)),
    };
    Ok(Some(m))
}

/// Reads one message: its kind and body. `None` at end of input before
/// the first byte.
fn read_message(r: &mut impl Read) -> Result<Option<(u8, Vec<u8>)>, FramingError> {
    let mut len = [0u8; LENGTH_FIELD];
    let got = read_full(r, &mut len)?;
    if got == 0 {
        return Ok(None);
    }
    if got < LENGTH_FIELD {
        return Err(FramingError::Eof {
            read: got,
            expected: LENGTH_FIELD,
        });
    }
    let len = u32::from_be_bytes(len);
    if len == 0 || len > MAX_MESSAGE {
        return Err(FramingError::Length(len));
    }
    // At most MAX_MESSAGE: fits any usize this crate builds for.
    let n = usize::try_from(len).map_err(|_| FramingError::Length(len))?;
    let mut k = [0u8; 1];
    let mut body = vec![0u8; n.saturating_sub(1)];
    let got = read_full(r, &mut k)? + read_full(r, &mut body)?;
    if got < n {
        return Err(FramingError::Eof {
            read: LENGTH_FIELD + got,
            expected: LENGTH_FIELD + n,
        });
    }
    Ok(Some((u8::from_be_bytes(k), body)))
}

/// Fills `buf` as far as the input goes; the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while let Some(rest) = buf.get_mut(got..) {
        if rest.is_empty() {
            break;
        }
        match r.read(rest) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A cursor over one message's body.
struct Body<'a> {
    kind: u8,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Body<'a> {
    fn new(kind: u8, bytes: &'a [u8]) -> Body<'a> {
        Body { kind, bytes, at: 0 }
    }

    /// The next `N` bytes, or the body is short.
    fn take<const N: usize>(&mut self) -> Result<[u8; N], FramingError> {
        let end = self.at.saturating_add(N);
        let a = self
            .bytes
            .get(self.at..end)
            .and_then(|s| <[u8; N]>::try_from(s).ok())
            .ok_or(FramingError::ShortBody {
                kind: self.kind,
                len: self.bytes.len(),
                min: end,
            })?;
        self.at = end;
        Ok(a)
    }

    fn u16(&mut self) -> Result<u16, FramingError> {
        self.take().map(u16::from_be_bytes)
    }

    fn u64(&mut self) -> Result<u64, FramingError> {
        self.take().map(u64::from_be_bytes)
    }

    /// Everything not yet taken.
    fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.at..).unwrap_or_default()
    }

    /// Refuses bytes after the fixed fields.
    fn end(&self) -> Result<(), FramingError> {
        if self.at < self.bytes.len() {
            return Err(FramingError::LongBody {
                kind: self.kind,
                len: self.bytes.len(),
                max: self.at,
            });
        }
        Ok(())
    }
}
