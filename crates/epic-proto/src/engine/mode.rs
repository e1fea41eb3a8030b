//! The half of a context that depends on its mode, and the one interface
//! the context reaches it through. [ENG-010] [M1-001] [M2-001] [M3-001]
//!
//! A [`Context`](super::Context) is a [`Shared`] half (configuration,
//! shape, edges, invocations) and a [`ModeState`]: Mode I's RC endpoints
//! and message buffers ([`Terminated`]), Mode II's Up pipe
//! ([`Translated`]) or Mode III's two pipes and per-hop transport state
//! ([`Augmented`]). The context picks the variant once per call and hands
//! it the shared half through [`ModeMachine`] (`with_mode!`); no mode
//! reads another's state.

use alloc::boxed::Box;
use core::mem::size_of;

use super::config::{ContextConfig, EngineConfig, Mode, INVOCATION_SLOTS};
use super::endpoint::EndpointState;
use super::footprint::{raw_children, ContextFootprint};
use super::invocation::Invocation;
use super::mode1::Terminated;
use super::mode2::Translated;
use super::mode3::Augmented;
use super::modules::lookup_table::Entry;
use super::shared::Shared;
use crate::roce::ConfigError;

/// A context's mode and the state only that mode keeps.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ModeState {
    /// Mode I (§4.2). Boxed: its endpoints and buffers are large.
    Terminated(Box<Terminated>),
    /// Mode II (Algorithm 1, §4.3).
    Translated(Translated),
    /// Mode III (Algorithms 2–3, §4.4).
    Augmented(Augmented),
}

impl ModeState {
    /// The state of a fresh context of `cfg`.
    pub(crate) fn new(
        eng: &EngineConfig,
        cfg: &ContextConfig,
        shared: &Shared,
    ) -> Result<ModeState, ConfigError> {
        Ok(match cfg.mode {
            Mode::Terminated => ModeState::Terminated(Box::new(Terminated::new(eng, cfg)?)),
            Mode::Translated => ModeState::Translated(Translated::new(cfg, shared)),
            Mode::Augmented => ModeState::Augmented(Augmented::new(cfg, shared)),
        })
    }
}

/// Runs `$body` with `$m` bound to the mode's state, whichever variant it
/// is (`ref` or `mut`): one `match`, each arm calling [`ModeMachine`] on a
/// concrete type, so the per-frame calls can inline (a `&dyn ModeMachine`
/// could not).
macro_rules! with_mode {
    (ref $mode:expr, $m:ident => $body:expr) => {
        match &$mode {
            $crate::engine::mode::ModeState::Terminated(b) => {
                let $m: &$crate::engine::mode1::Terminated = b;
                $body
            }
            $crate::engine::mode::ModeState::Translated($m) => $body,
            $crate::engine::mode::ModeState::Augmented($m) => $body,
        }
    };
    (mut $mode:expr, $m:ident => $body:expr) => {
        match &mut $mode {
            $crate::engine::mode::ModeState::Terminated(b) => {
                let $m: &mut $crate::engine::mode1::Terminated = b;
                $body
            }
            $crate::engine::mode::ModeState::Translated($m) => $body,
            $crate::engine::mode::ModeState::Augmented($m) => $body,
        }
    };
}
pub(crate) use with_mode;

impl ContextFootprint {
    /// The footprint a context of `cfg` will have, computed without
    /// allocating it.
    pub fn of(cfg: &ContextConfig) -> ContextFootprint {
        if cfg.mode == Mode::Terminated {
            // Message buffers replace the pipes. [M1-011]
            let eps = cfg.endpoints.len();
            return ContextFootprint {
                payload: Terminated::message_bytes(cfg),
                staging: Terminated::staging_bytes(cfg),
                reproducible: 0,
                degree: 0,
                slot_meta: 0,
                arrived: 0,
                endpoints: eps * (size_of::<EndpointState>() + Terminated::edge_bytes(cfg)),
                invocations: INVOCATION_SLOTS * Terminated::invocation_bytes(),
                lookup: eps * size_of::<(u32, Entry)>(),
            };
        }
        let n = cfg.slots as usize;
        let u = usize::from(cfg.max_payload);
        let eps = cfg.endpoints.len();
        let (down, edge) = match cfg.mode {
            Mode::Augmented => (n, Augmented::EDGE_BYTES),
            _ => (0, Translated::EDGE_BYTES),
        };
        ContextFootprint {
            payload: n * 2 * u + down * u,
            staging: 0,
            reproducible: n * raw_children(cfg) * u,
            degree: n + down,
            slot_meta: (n + down) * super::pipe::SLOT_META_BYTES,
            arrived: eps * (n.div_ceil(64) + down.div_ceil(64)) * 8,
            endpoints: eps * (size_of::<EndpointState>() + edge),
            invocations: INVOCATION_SLOTS * size_of::<Invocation>(),
            lookup: eps * size_of::<(u32, Entry)>(),
        }
    }
}
