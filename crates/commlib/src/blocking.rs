//! Blocking wrappers: the same communicator for code without an async
//! runtime. [COMM-004]
//!
//! The progress task has to run between calls too (peers wait for this
//! rank's acknowledgements), so the wrapper runs it on a multi-thread
//! runtime: its own, with one worker thread, or one the caller hands in.
//! Calls block the calling thread; making one from inside an async
//! runtime returns [`ArgError::InsideRuntime`] instead of blocking it.

use std::future::Future;

use epic_io::{Clock, FramePorts};
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

use crate::config::CommConfig;
use crate::element::{Element, Op};
use crate::error::{ArgError, CommError};
use crate::stats::CommStats;

/// A [`crate::Communicator`] with blocking methods. [COMM-004]
///
/// [`close`](Communicator::close) lingers like the async one; dropping the
/// wrapper without closing stops a runtime it owns, and with it the
/// progress task, at once.
#[derive(Debug)]
pub struct Communicator {
    inner: Option<crate::Communicator>,
    handle: Handle,
    /// The runtime the wrapper owns, if it owns one.
    runtime: Option<Runtime>,
}

impl Communicator {
    /// Builds the communicator on a runtime of its own (one worker thread).
    pub fn new<T: FramePorts>(
        cfg: CommConfig,
        transport: T,
        clock: Clock,
    ) -> Result<Communicator, CommError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("commlib-progress")
            .enable_all()
            .build()
            .map_err(|e| CommError::Transport(e.into()))?;
        let handle = runtime.handle().clone();
        let mut c = Communicator::with_handle(handle, cfg, transport, clock)?;
        c.runtime = Some(runtime);
        Ok(c)
    }

    /// Builds the communicator on the caller's runtime, which must be a
    /// multi-thread runtime (a current-thread runtime would run the
    /// progress task only during calls).
    pub fn with_handle<T: FramePorts>(
        handle: Handle,
        cfg: CommConfig,
        transport: T,
        clock: Clock,
    ) -> Result<Communicator, CommError> {
        if handle.runtime_flavor() == RuntimeFlavor::CurrentThread {
            return Err(ArgError::CurrentThreadRuntime.into());
        }
        let inner = {
            let _guard = handle.enter();
            crate::Communicator::new(cfg, transport, clock)?
        };
        Ok(Communicator {
            inner: Some(inner),
            handle,
            runtime: None,
        })
    }

    fn block<'a, F, R>(
        &'a mut self,
        f: impl FnOnce(&'a mut crate::Communicator) -> F,
    ) -> Result<R, CommError>
    where
        F: Future<Output = Result<R, CommError>>,
    {
        if Handle::try_current().is_ok() {
            return Err(ArgError::InsideRuntime.into());
        }
        let handle = self.handle.clone();
        let inner = self.inner.as_mut().ok_or(CommError::Closed)?;
        handle.block_on(f(inner))
    }

    /// This rank.
    pub fn rank(&self) -> u16 {
        self.inner.as_ref().map_or(0, crate::Communicator::rank)
    }

    /// Ranks in the group.
    pub fn ranks(&self) -> u16 {
        self.inner.as_ref().map_or(0, crate::Communicator::ranks)
    }

    /// Whether collectives run in the network.
    pub fn uses_inc(&self) -> bool {
        self.inner
            .as_ref()
            .is_some_and(crate::Communicator::uses_inc)
    }

    /// See [`crate::Communicator::all_reduce`].
    pub fn all_reduce<E: Element>(
        &mut self,
        send: &[E],
        recv: &mut [E],
        op: Op,
    ) -> Result<(), CommError> {
        self.block(|c| c.all_reduce(send, recv, op))
    }

    /// See [`crate::Communicator::reduce`].
    pub fn reduce<E: Element>(
        &mut self,
        send: &[E],
        recv: &mut [E],
        op: Op,
        root: u16,
    ) -> Result<(), CommError> {
        self.block(|c| c.reduce(send, recv, op, root))
    }

    /// See [`crate::Communicator::broadcast`].
    pub fn broadcast<E: Element>(&mut self, buf: &mut [E], root: u16) -> Result<(), CommError> {
        self.block(|c| c.broadcast(buf, root))
    }

    /// See [`crate::Communicator::barrier`].
    pub fn barrier(&mut self) -> Result<(), CommError> {
        self.block(|c| c.barrier())
    }

    /// See [`crate::Communicator::reduce_scatter`].
    pub fn reduce_scatter<E: Element>(
        &mut self,
        send: &[E],
        recv: &mut [E],
        op: Op,
    ) -> Result<(), CommError> {
        self.block(|c| c.reduce_scatter(send, recv, op))
    }

    /// See [`crate::Communicator::all_gather`].
    pub fn all_gather<E: Element>(&mut self, send: &[E], recv: &mut [E]) -> Result<(), CommError> {
        self.block(|c| c.all_gather(send, recv))
    }

    /// See [`crate::Communicator::stats`].
    pub fn stats(&mut self) -> Result<CommStats, CommError> {
        self.block(|c| c.stats())
    }

    /// See [`crate::Communicator::close`]: blocks for the linger time.
    pub fn close(mut self) -> Result<CommStats, CommError> {
        if Handle::try_current().is_ok() {
            return Err(ArgError::InsideRuntime.into());
        }
        let inner = self.inner.take().ok_or(CommError::Closed)?;
        self.handle.block_on(inner.close())
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        // Dropping a runtime blocks; inside an async context that is not
        // allowed, so let it wind down in the background.
        if let Some(rt) = self.runtime.take() {
            drop(self.inner.take());
            rt.shutdown_background();
        }
    }
}
