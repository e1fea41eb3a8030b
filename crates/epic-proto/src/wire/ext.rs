//! The extension headers between the BTH and the payload, as one group.
//! [IBTA 1.4 §9.2] [WIRE-042]

use super::field;
use super::{
    AethPacket, AethRepr, AtomicAckEthPacket, AtomicAckEthRepr, AtomicEthPacket, AtomicEthRepr,
    CnpPacket, CnpRepr, DethPacket, DethRepr, EmitError, Error, HeaderLayout, IethPacket, IethRepr,
    ImmDtPacket, ImmDtRepr, RethPacket, RethRepr,
};

/// The extension headers of one packet, each present or not. Wire order is
/// the field order here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ExtHeaders {
    /// DETH (UD).
    pub deth: Option<DethRepr>,
    /// RETH.
    pub reth: Option<RethRepr>,
    /// AtomicETH.
    pub atomic_eth: Option<AtomicEthRepr>,
    /// AETH.
    pub aeth: Option<AethRepr>,
    /// AtomicAckETH.
    pub atomic_ack_eth: Option<AtomicAckEthRepr>,
    /// ImmDt.
    pub immdt: Option<ImmDtRepr>,
    /// IETH.
    pub ieth: Option<IethRepr>,
    /// CNP reserved block.
    pub cnp: Option<CnpRepr>,
}

/// Parses one optional header at `*at`, advancing past it.
macro_rules! parse_one {
    ($buf:expr, $at:ident, $want:expr, $packet:ident, $repr:ident) => {
        if $want {
            let p = $packet::new_checked(field::rest($buf, $at)).map_err(|e| e.add_offset($at))?;
            let r = $repr::parse(&p).map_err(|e| e.add_offset($at))?;
            $at += r.buffer_len();
            Some(r)
        } else {
            None
        }
    };
}

/// Emits one optional header at `*at`, advancing past it.
macro_rules! emit_one {
    ($buf:expr, $at:ident, $opt:expr) => {
        if let Some(h) = $opt {
            h.emit($buf.get_mut($at..).unwrap_or(&mut []))?;
            $at += h.buffer_len();
        }
    };
}

impl ExtHeaders {
    /// Which headers are present.
    pub const fn layout(&self) -> HeaderLayout {
        HeaderLayout {
            deth: self.deth.is_some(),
            reth: self.reth.is_some(),
            atomic_eth: self.atomic_eth.is_some(),
            aeth: self.aeth.is_some(),
            atomic_ack_eth: self.atomic_ack_eth.is_some(),
            immdt: self.immdt.is_some(),
            ieth: self.ieth.is_some(),
            cnp: self.cnp.is_some(),
            payload: false,
        }
    }

    /// Total length in bytes.
    pub const fn buffer_len(&self) -> usize {
        self.layout().len()
    }

    /// Parses the headers `layout` names from the start of `buf`; offsets in
    /// errors are relative to `buf`. Returns the headers and their length.
    pub fn parse(buf: &[u8], layout: HeaderLayout) -> Result<(ExtHeaders, usize), Error> {
        let mut ext = ExtHeaders::default();
        let len = ExtHeaders::parse_into(buf, layout, &mut ext)?;
        Ok((ext, len))
    }

    /// Like [`parse`](Self::parse), but fills `out` header by header, so
    /// that on an error `out` still holds the headers before the failing
    /// one (for lax decoding). Returns the length parsed.
    #[inline(always)]
    pub fn parse_into(
        buf: &[u8],
        layout: HeaderLayout,
        out: &mut ExtHeaders,
    ) -> Result<usize, Error> {
        let mut at = 0usize;
        out.deth = parse_one!(buf, at, layout.deth, DethPacket, DethRepr);
        out.reth = parse_one!(buf, at, layout.reth, RethPacket, RethRepr);
        out.atomic_eth = parse_one!(buf, at, layout.atomic_eth, AtomicEthPacket, AtomicEthRepr);
        out.aeth = parse_one!(buf, at, layout.aeth, AethPacket, AethRepr);
        out.atomic_ack_eth = parse_one!(
            buf,
            at,
            layout.atomic_ack_eth,
            AtomicAckEthPacket,
            AtomicAckEthRepr
        );
        out.immdt = parse_one!(buf, at, layout.immdt, ImmDtPacket, ImmDtRepr);
        out.ieth = parse_one!(buf, at, layout.ieth, IethPacket, IethRepr);
        out.cnp = parse_one!(buf, at, layout.cnp, CnpPacket, CnpRepr);
        Ok(at)
    }

    /// Writes the present headers in wire order; returns their length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        field::check_emit(buf, self.buffer_len())?;
        let mut at = 0usize;
        emit_one!(buf, at, self.deth);
        emit_one!(buf, at, self.reth);
        emit_one!(buf, at, self.atomic_eth);
        emit_one!(buf, at, self.aeth);
        emit_one!(buf, at, self.atomic_ack_eth);
        emit_one!(buf, at, self.immdt);
        emit_one!(buf, at, self.ieth);
        emit_one!(buf, at, self.cnp);
        Ok(at)
    }
}
