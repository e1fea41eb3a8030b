//! `epic manager serve|status`: the IncManager and a look at it.
//! [MGR-060] [MGR-070]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use epic_control::client::{ClientError, ManagerClient};
use manager::service::{bind_any, serve, Manager, ManagerOptions};
use manager::topology::parse_topology;
use manager::Policy;

use crate::args::Format;

/// Arguments of `epic manager`.
#[derive(Debug, clap::Args)]
pub(crate) struct ManagerArgs {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Run the IncManager until SIGINT/SIGTERM.
    Serve(ServeArgs),
    /// Print what a running manager knows: switches, groups, allocations.
    Status(StatusArgs),
}

/// Where the token comes from.
#[derive(Debug, clap::Args)]
struct TokenArgs {
    /// A file whose first line is the token (else $EPIC_MANAGER_TOKEN).
    #[arg(long)]
    token_file: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Address to listen on: host:port (port 0 picks one; the address is
    /// printed) or unix:PATH, a Unix socket every network namespace of
    /// the machine reaches.
    #[arg(long, default_value = "127.0.0.1:7470")]
    listen: String,
    /// The store (created if missing): groups, allocations and agent
    /// sessions survive a restart.
    #[arg(long)]
    db: PathBuf,
    /// Placement policy.
    #[arg(long, default_value = "spatial")]
    policy: Policy,
    /// A topology file (switches, hosts, links, or a generated Clos);
    /// agents add what they report. Seeds the store on its first start.
    #[arg(long)]
    topology: Option<PathBuf>,
    /// How often agents send heartbeats, ms.
    #[arg(long, default_value_t = 500)]
    heartbeat_ms: u64,
    /// Silence after which a switch is lost and its groups broken, ms.
    #[arg(long, default_value_t = 3000)]
    heartbeat_timeout_ms: u64,
    #[command(flatten)]
    token: TokenArgs,
}

#[derive(Debug, clap::Args)]
struct StatusArgs {
    /// The manager's address (host:port or unix:PATH).
    #[arg(long, default_value = "127.0.0.1:7470")]
    manager: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    token: TokenArgs,
}

/// The token from `--token-file` or `$EPIC_MANAGER_TOKEN`.
pub(crate) fn read_token(file: Option<&Path>) -> Result<String, String> {
    let t = match file {
        Some(f) => std::fs::read_to_string(f)
            .map_err(|e| format!("{}: {e}", f.display()))?
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string(),
        None => std::env::var("EPIC_MANAGER_TOKEN").unwrap_or_default(),
    };
    if t.is_empty() {
        return Err("no token: pass --token-file FILE or set EPIC_MANAGER_TOKEN".into());
    }
    Ok(t)
}

pub(crate) fn run(args: &ManagerArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("epic manager: {e}");
            return ExitCode::from(1);
        }
    };
    match &args.command {
        Sub::Serve(a) => rt.block_on(serve_main(a)),
        Sub::Status(a) => rt.block_on(status_main(a)),
    }
}

async fn serve_main(a: &ServeArgs) -> ExitCode {
    let token = match read_token(a.token.token_file.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("epic manager serve: {e}");
            return ExitCode::from(2);
        }
    };
    let topology = match &a.topology {
        Some(p) => match std::fs::read_to_string(p)
            .map_err(|e| e.to_string())
            .and_then(|t| parse_topology(&t).map_err(|e| e.to_string()))
        {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("epic manager serve: {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let mut opts = ManagerOptions::new(token);
    opts.policy = a.policy;
    opts.db = Some(a.db.clone());
    opts.topology = topology;
    opts.heartbeat = Duration::from_millis(a.heartbeat_ms.max(10));
    opts.heartbeat_timeout = Duration::from_millis(a.heartbeat_timeout_ms.max(a.heartbeat_ms));
    let m = match Manager::open(opts) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("epic manager serve: {e}");
            return ExitCode::from(2);
        }
    };
    let (listener, addr) = match bind_any(&a.listen).await {
        Ok(x) => x,
        Err(e) => {
            eprintln!("epic manager serve: {}: {e}", a.listen);
            return ExitCode::from(1);
        }
    };
    let reg = m.registry();
    println!(
        "epic manager: listening on {addr}, policy {}, {} switches, {} groups recovered",
        a.policy,
        reg.topology().switches().len(),
        reg.resources().grants().len()
    );
    let closer = m.clone();
    let r = serve(m, listener, shutdown_signal()).await;
    closer.close();
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("epic manager serve: {e}");
            ExitCode::from(1)
        }
    }
}

async fn status_main(a: &StatusArgs) -> ExitCode {
    let token = match read_token(a.token.token_file.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("epic manager status: {e}");
            return ExitCode::from(2);
        }
    };
    let r = async {
        let mut c = ManagerClient::connect(&a.manager, &token).await?;
        let topo = c.topology().await?;
        let groups = c.groups().await?;
        let allocs = c.allocations().await?;
        Ok::<_, ClientError>((topo, groups, allocs))
    }
    .await;
    let (topo, groups, allocs) = match r {
        Ok(x) => x,
        Err(e) => {
            eprintln!("epic manager status: {e}");
            return ExitCode::from(1);
        }
    };
    match a.format {
        Format::Json => {
            let j = serde_json::json!({
                "policy": topo.policy,
                "hosts": topo.hosts,
                "links": topo.links,
                "switches": topo.switches.iter().map(|s| serde_json::json!({
                    "name": s.name, "tier": s.tier, "up": s.up,
                    "sram_bytes": s.sram_bytes, "contexts": s.contexts,
                })).collect::<Vec<_>>(),
                "groups": groups.groups.iter().map(|g| serde_json::json!({
                    "name": g.name, "group": g.group, "mode": g.mode, "ranks": g.ranks,
                    "state": g.state, "tree": g.tree_switches,
                })).collect::<Vec<_>>(),
                "allocations": allocs.allocations.iter().map(|x| serde_json::json!({
                    "switch": x.switch_name, "group": x.group,
                    "offset": x.region.as_ref().map_or(0, |r| r.offset),
                    "len": x.region.as_ref().map_or(0, |r| r.len),
                    "used": x.bytes_used, "shared": x.shared,
                })).collect::<Vec<_>>(),
            });
            println!("{j:#}");
        }
        Format::Table => {
            println!(
                "policy {}: {} switches, {} hosts, {} links",
                topo.policy,
                topo.switches.len(),
                topo.hosts,
                topo.links
            );
            for s in &topo.switches {
                println!(
                    "  {:<14} tier {:<2} {:<4} sram {:>10} B  contexts {}",
                    s.name,
                    s.tier,
                    if s.up { "up" } else { "DOWN" },
                    s.sram_bytes,
                    s.contexts
                );
            }
            println!("{} groups", groups.groups.len());
            for g in &groups.groups {
                println!(
                    "  {:<16} id {:<5} mode {} ranks {:<4} {:<12} tree {}",
                    g.name,
                    g.group,
                    g.mode,
                    g.ranks,
                    g.state,
                    g.tree_switches.join(",")
                );
            }
            println!("{} allocations", allocs.allocations.len());
            for x in &allocs.allocations {
                let (o, l) = x.region.as_ref().map_or((0, 0), |r| (r.offset, r.len));
                println!(
                    "  {:<14} group {:<5} [{o}, +{l}) used {}{}",
                    x.switch_name,
                    x.group,
                    x.bytes_used,
                    if x.shared { " shared" } else { "" }
                );
            }
        }
    }
    ExitCode::SUCCESS
}

/// Resolves on the first SIGINT or SIGTERM (never, if they cannot be
/// watched: the manager then runs until killed).
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
