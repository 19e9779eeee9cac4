//! The file a traced eval keeps its GPU records in (`evidence.timeline.records`): the traces as
//! gzipped JSON, and the SHA-256 of those bytes. Beside evidence.json rather than in it: a small
//! kernel's eval records tens of thousands of activities (about 55 MB of JSON for a 16 M-element
//! add on an H100), which gzip takes to about 1 MB since names and fields repeat.

use std::io::{Read, Write};

use sha2::{Digest, Sha256};

use crate::model::gpu_trace::GpuTrace;
use crate::model::profile_cache::hex;

/// The most a records file may inflate to (a bomb is refused, not unpacked).
const MAX_INFLATED: u64 = 2 << 30;

/// `traces` encoded, and the digest of the encoded bytes.
pub fn encode(traces: &[GpuTrace]) -> std::io::Result<(Vec<u8>, String)> {
    let json = serde_json::to_vec(traces)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&json)?;
    let bytes = gz.finish()?;
    let digest = hex(&Sha256::digest(&bytes));
    Ok((bytes, digest))
}

/// The traces of a records file whose digest must be `sha256`.
pub fn decode(bytes: &[u8], sha256: &str) -> Result<Vec<GpuTrace>, String> {
    let digest = hex(&Sha256::digest(bytes));
    if digest != sha256 {
        return Err(format!(
            "the records file's SHA-256 is {digest}, not the {sha256} the evidence recorded: it \
             changed after the eval"
        ));
    }
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut json)
        .map_err(|e| format!("the records file is not gzip: {e}"))?;
    if json.len() as u64 > MAX_INFLATED {
        return Err(format!(
            "the records file inflates past {MAX_INFLATED} bytes"
        ));
    }
    serde_json::from_slice(&json)
        .map_err(|e| format!("the records file is not a list of traces: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::gpu_trace::{ActivityKind, GpuActivity};

    #[test]
    fn traces_round_trip_and_a_changed_file_is_refused() {
        let activity = GpuActivity {
            kind: ActivityKind::Kernel,
            correlation: 3,
            start_ns: 10,
            end_ns: 20,
            device: 0,
            stream: 7,
            name: "_Z3addPfS_".into(),
            demangled: Some("add(float*, float*)".into()),
            grid: Some([4, 1, 1]),
            block: Some([256, 1, 1]),
            dynamic_shared_bytes: Some(0),
            bytes: None,
            value: None,
            graph: 0,
            thread: Some(77),
        };
        let traces = vec![GpuTrace {
            pid: 77,
            activities: vec![activity; 1000],
            dropped: 1,
            ..GpuTrace::default()
        }];
        let (bytes, digest) = encode(&traces).unwrap();
        assert!(bytes.len() < 10_000, "{} bytes", bytes.len());
        assert_eq!(decode(&bytes, &digest).unwrap(), traces);
        let mut changed = bytes.clone();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        assert!(
            decode(&changed, &digest)
                .unwrap_err()
                .contains("changed after the eval")
        );
        let digest_of = |b: &[u8]| hex(&Sha256::digest(b));
        assert!(
            decode(b"not gzip", &digest_of(b"not gzip"))
                .unwrap_err()
                .contains("not gzip")
        );
    }
}
