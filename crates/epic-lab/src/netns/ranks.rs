//! The ranks' ports: kernel UDP sockets on port 4791 opened inside each
//! host namespace (a socket keeps the namespace it was made in, so the
//! communicators run in this process while their traffic leaves from the
//! host namespaces' veths). [LAB-006]

use std::net::Ipv4Addr;
use std::path::PathBuf;

use epic_io::{UdpOptions, UdpPorts};
use epic_proto::wire::EthernetAddress;

use super::NetnsError;

/// Binds `ip:4791` inside namespace `ns` on a short-lived thread that
/// enters it, registered with the calling tokio runtime.
pub(crate) fn bind_in(
    rank: usize,
    ns: &str,
    ip: Ipv4Addr,
    mac: EthernetAddress,
    first_hop_mac: EthernetAddress,
) -> Result<UdpPorts, NetnsError> {
    let handle = tokio::runtime::Handle::try_current().map_err(|e| NetnsError::Rank {
        rank,
        message: format!("no tokio runtime: {e}"),
    })?;
    let path = PathBuf::from("/var/run/netns").join(ns);
    let options = UdpOptions {
        // Room for a window of 4 MiB messages in flight from every peer.
        socket_buffer_bytes: 16 << 20,
        send_queue_frames: 1024,
        ..UdpOptions::default()
    };
    let thread = std::thread::Builder::new()
        .name(format!("epic-lab-bind-{rank}"))
        .spawn(move || -> Result<UdpPorts, String> {
            epic_io::enter_netns(&path).map_err(|e| format!("entering {}: {e}", path.display()))?;
            let _rt = handle.enter();
            UdpPorts::bind_with(ip, mac, first_hop_mac, &options).map_err(|e| e.to_string())
        })
        .map_err(|e| NetnsError::Rank {
            rank,
            message: e.to_string(),
        })?;
    match thread.join() {
        Ok(r) => r.map_err(|message| NetnsError::Rank { rank, message }),
        Err(_) => Err(NetnsError::Rank {
            rank,
            message: "the binding thread panicked".into(),
        }),
    }
}
