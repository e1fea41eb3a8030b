//! The ranks' ports: kernel UDP sockets on port 4791 opened inside each
//! host namespace (a socket keeps the namespace it was made in, so the
//! communicators run in this process while their traffic leaves from the
//! host namespaces' veths). [LAB-006]

use std::net::Ipv4Addr;
use std::path::PathBuf;

use epic_io::{UdpOptions, UdpPorts};
use epic_proto::wire::EthernetAddress;

use super::{NetnsError, RankBindError};

/// Binds `ip:4791` inside namespace `ns` on a short-lived thread that
/// enters it, registered with the calling tokio runtime.
pub(crate) fn bind_in(
    rank: usize,
    ns: &str,
    ip: Ipv4Addr,
    mac: EthernetAddress,
    first_hop_mac: EthernetAddress,
) -> Result<UdpPorts, NetnsError> {
    let fail = |source: RankBindError| NetnsError::Rank { rank, source };
    let handle =
        tokio::runtime::Handle::try_current().map_err(|e| fail(RankBindError::NoRuntime(e)))?;
    let path = PathBuf::from("/var/run/netns").join(ns);
    let options = UdpOptions {
        // Room for a window of 4 MiB messages in flight from every peer.
        socket_buffer_bytes: 16 << 20,
        send_queue_frames: 1024,
        ..UdpOptions::default()
    };
    let thread = std::thread::Builder::new()
        .name(format!("epic-lab-bind-{rank}"))
        .spawn(move || -> Result<UdpPorts, RankBindError> {
            epic_io::enter_netns(&path)
                .map_err(|source| RankBindError::EnterNetns { path, source })?;
            let _rt = handle.enter();
            UdpPorts::bind_with(ip, mac, first_hop_mac, &options).map_err(RankBindError::Bind)
        })
        .map_err(|e| fail(RankBindError::Thread(e)))?;
    match thread.join() {
        Ok(r) => r.map_err(fail),
        Err(_) => Err(fail(RankBindError::Panicked)),
    }
}
