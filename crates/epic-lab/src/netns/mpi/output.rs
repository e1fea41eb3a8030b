//! The JSON lines `epic_mpi_bench` prints on rank 0.

use epic_proto::wire::Collective;
use serde::Deserialize;

use super::{MpiError, MpiResult};

/// One line, as `bench/mpi/README.md` documents it.
#[derive(Debug, Deserialize)]
struct Line {
    collective: String,
    bytes: u64,
    ranks: usize,
    iters: u32,
    p50_us: f64,
    p99_us: f64,
    correct: bool,
}

fn collective(name: &str) -> Option<Collective> {
    Some(match name {
        "allreduce" => Collective::AllReduce,
        "reduce" => Collective::Reduce,
        "broadcast" => Collective::Broadcast,
        "barrier" => Collective::Barrier,
        "reducescatter" => Collective::ReduceScatter,
        "allgather" => Collective::AllGather,
        _ => return None,
    })
}

/// The results in `stdout`, in order. Lines that are not JSON objects
/// (notices of mpirun) are skipped; a JSON line that is not a result of
/// `ranks` ranks is an error.
pub(super) fn parse(stdout: &[u8], ranks: usize) -> Result<Vec<MpiResult>, MpiError> {
    let text = String::from_utf8_lossy(stdout);
    let mut out = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        if !line.starts_with('{') {
            continue;
        }
        let bad = |reason: String| MpiError::BadOutput {
            line: line.to_string(),
            reason,
        };
        let l: Line = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        let c = collective(&l.collective)
            .ok_or_else(|| bad(format!("unknown collective {:?}", l.collective)))?;
        if l.ranks != ranks {
            return Err(bad(format!("{} ranks, expected {ranks}", l.ranks)));
        }
        out.push(MpiResult {
            collective: c,
            bytes: l.bytes,
            p50_us: l.p50_us,
            p99_us: l.p99_us,
            iters: l.iters,
            correct: l.correct,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_result_lines_and_skips_notices() {
        let text = b"notice\n\
            {\"collective\":\"reducescatter\",\"bytes\":4096,\"ranks\":4,\"iters\":3,\"p50_us\":12.5,\"p99_us\":20.0,\"correct\":true}\n\
            {\"collective\":\"barrier\",\"bytes\":0,\"ranks\":4,\"iters\":3,\"p50_us\":1.0,\"p99_us\":2.0,\"correct\":false}\n";
        let r = parse(text, 4).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].collective, Collective::ReduceScatter);
        assert_eq!(r[0].bytes, 4096);
        assert_eq!(r[0].p99_us, 20.0);
        assert!(r[0].correct);
        assert_eq!(r[1].collective, Collective::Barrier);
        assert!(!r[1].correct);
    }

    #[test]
    fn rejects_bad_lines() {
        let wrong_ranks = b"{\"collective\":\"barrier\",\"bytes\":0,\"ranks\":2,\"iters\":1,\"p50_us\":1,\"p99_us\":1,\"correct\":true}";
        assert!(matches!(
            parse(wrong_ranks, 4),
            Err(MpiError::BadOutput { .. })
        ));
        assert!(parse(b"{\"collective\":\"alltoall\"}", 4).is_err());
        assert!(parse(b"{not json", 4).is_err());
    }
}
