//! Reading `evidence.json` text: the schema version is checked before the fields, so evidence
//! from a newer polyprof is refused with a message that says so, not with a field error.

use super::evidence::{EVIDENCE_VERSION, EvalEvidence};

#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error("the evidence is not JSON ({0}); was the eval interrupted while writing it?")]
    NotJson(#[source] serde_json::Error),
    #[error("the evidence has no numeric `schema_version`; is this an evidence.json?")]
    NoVersion,
    #[error(
        "the evidence is schema version {found}, newer than the {known} this polyprof reads; \
         judge it with the polyprof that wrote it, or upgrade"
    )]
    Newer { found: u64, known: u32 },
    #[error("the evidence does not match schema version {version}: {source}")]
    Invalid {
        version: u64,
        #[source]
        source: serde_json::Error,
    },
}

/// The scored pass's records into `evidence` from the bytes of its records file (as read from
/// the eval directory), or, when they cannot be had, why (the timeline is then not judged).
pub fn attach_records(evidence: &mut EvalEvidence, bytes: Result<Vec<u8>, String>) {
    let Some(scored) = evidence.timeline.as_mut() else {
        return;
    };
    let Some(records) = &scored.records else {
        return;
    };
    let decoded = bytes.and_then(|b| crate::model::gpu_trace_file::decode(&b, &records.sha256));
    match decoded {
        Ok(traces) => scored.traces = traces,
        Err(why) => {
            scored.error = Some(format!("{}: {why}", records.path));
        }
    }
}

/// Parse `text` as evidence this polyprof can judge.
pub fn parse_evidence(text: &str) -> Result<EvalEvidence, EvidenceError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(EvidenceError::NotJson)?;
    let version = value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .ok_or(EvidenceError::NoVersion)?;
    if version > u64::from(EVIDENCE_VERSION) {
        return Err(EvidenceError::Newer {
            found: version,
            known: EVIDENCE_VERSION,
        });
    }
    serde_json::from_value(value).map_err(|source| EvidenceError::Invalid { version, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::test_support::evidence;

    #[test]
    fn evidence_round_trips() {
        let e = evidence();
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(parse_evidence(&text).unwrap(), e);
    }

    #[test]
    fn newer_broken_and_foreign_documents_are_refused_clearly() {
        let mut value = serde_json::to_value(evidence()).unwrap();
        value["schema_version"] = 99.into();
        value["problem"] = "changed meaning".into();
        let err = parse_evidence(&value.to_string()).unwrap_err();
        assert!(
            matches!(err, EvidenceError::Newer { found: 99, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("newer than the 1"));
        assert!(matches!(
            parse_evidence("{\"schema_version\": 1, \"trials\": 3}"),
            Err(EvidenceError::Invalid { version: 1, .. })
        ));
        assert!(matches!(
            parse_evidence("{\"kernels\": []}"),
            Err(EvidenceError::NoVersion)
        ));
        assert!(matches!(
            parse_evidence("{\"schema_ver"),
            Err(EvidenceError::NotJson(_))
        ));
    }
    #[test]
    fn records_are_attached_from_their_file_only_when_their_digest_matches() {
        use crate::eval::evidence::{RecordsFile, ScoredTrace};
        use crate::model::gpu_trace::GpuTrace;
        let traces = vec![GpuTrace {
            pid: 9,
            ..GpuTrace::default()
        }];
        let (bytes, sha256) = crate::model::gpu_trace_file::encode(&traces).unwrap();
        let mut e = evidence();
        e.timeline = Some(ScoredTrace {
            records: Some(RecordsFile {
                path: "scored-trace.json.gz".into(),
                sha256,
                activities: 0,
            }),
            ..ScoredTrace::default()
        });
        // The records are not in evidence.json itself.
        let text = serde_json::to_string(&e).unwrap();
        let mut read = parse_evidence(&text).unwrap();
        attach_records(&mut read, Ok(bytes.clone()));
        let scored = read.timeline.as_ref().unwrap();
        assert_eq!(
            (scored.traces.clone(), scored.error.clone()),
            (traces, None)
        );
        let mut read = parse_evidence(&text).unwrap();
        attach_records(&mut read, Ok(bytes[1..].to_vec()));
        assert!(
            read.timeline
                .unwrap()
                .error
                .unwrap()
                .contains("changed after the eval")
        );
        let mut read = parse_evidence(&text).unwrap();
        attach_records(&mut read, Err("cannot read it: gone".into()));
        assert_eq!(
            read.timeline.unwrap().error.as_deref(),
            Some("scored-trace.json.gz: cannot read it: gone")
        );
    }
}
