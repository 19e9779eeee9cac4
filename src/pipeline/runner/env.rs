//! Environment policies: what the child process sees of polyprof's environment.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::model::error::{Error, Result};

/// Variables kept by `clean` (on top of the caller's allowlist). `*` at the end is a prefix.
pub const CLEAN_BASE: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "TMPDIR",
];

/// Variables `untrusted` keeps besides [`CLEAN_BASE`]: what GPU programs and Python need to run.
pub const UNTRUSTED_BASE: &[&str] = &[
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
    "ONEAPI_DEVICE_SELECTOR",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "OMP_NUM_THREADS",
];

/// What the child inherits from polyprof's environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum EnvPolicy {
    /// Everything (the CLI default).
    #[default]
    Inherit,
    /// Only [`CLEAN_BASE`] plus `allow` (names; a trailing `*` matches a prefix).
    Clean {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allow: Vec<String>,
    },
    /// Like `clean` plus [`UNTRUSTED_BASE`], and credentials are never passed, not even when
    /// allowlisted or set explicitly: for running generated code.
    Untrusted {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allow: Vec<String>,
    },
}

impl FromStr for EnvPolicy {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "inherit" => Ok(EnvPolicy::Inherit),
            "clean" => Ok(EnvPolicy::Clean { allow: Vec::new() }),
            "untrusted" => Ok(EnvPolicy::Untrusted { allow: Vec::new() }),
            _ => Err(Error::UnknownValue {
                what: "environment policy",
                value: text.to_string(),
                valid: "inherit, clean, untrusted".to_string(),
            }),
        }
    }
}

impl fmt::Display for EnvPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EnvPolicy::Inherit => "inherit",
            EnvPolicy::Clean { .. } => "clean",
            EnvPolicy::Untrusted { .. } => "untrusted",
        })
    }
}

pub fn name_matches(name: &str, pattern: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// True for names that look like credentials: `*_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`,
/// cloud and registry credentials. Case-insensitive.
pub fn is_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const SUFFIXES: &[&str] = &[
        "_KEY",
        "_TOKEN",
        "_SECRET",
        "_APIKEY",
        "_PASS",
        "_PWD",
        "_CREDENTIALS",
        "_AUTH",
        "_COOKIE",
        "_SESSION",
    ];
    const CONTAINS: &[&str] = &[
        "PASSWORD",
        "PASSWD",
        "SECRET",
        "TOKEN",
        "API_KEY",
        "PRIVATE_KEY",
    ];
    const PREFIXES: &[&str] = &[
        "AWS_",
        "AZURE_",
        "GOOGLE_",
        "GCLOUD_",
        "GCP_",
        "ARM_CLIENT",
        "VAULT_",
        "DOCKER_AUTH",
        "KUBECONFIG",
        "SSH_AUTH_SOCK",
        "NETRC",
        "PGPASS",
    ];
    const EXACT: &[&str] = &["GOOGLE_APPLICATION_CREDENTIALS", "KEY", "TOKEN", "SECRET"];
    SUFFIXES.iter().any(|s| upper.ends_with(s))
        || CONTAINS.iter().any(|s| upper.contains(s))
        || PREFIXES.iter().any(|s| upper.starts_with(s))
        || EXACT.contains(&upper.as_str())
}

impl EnvPolicy {
    /// The same policy with `allow` as its allowlist (`inherit` has none).
    pub fn with_allow(&self, allow: Vec<String>) -> EnvPolicy {
        match self {
            EnvPolicy::Inherit => EnvPolicy::Inherit,
            EnvPolicy::Clean { .. } => EnvPolicy::Clean { allow },
            EnvPolicy::Untrusted { .. } => EnvPolicy::Untrusted { allow },
        }
    }

    /// Whether polyprof's own variable `name` reaches the child (credentials aside).
    fn inherits(&self, name: &str) -> bool {
        let listed = |allow: &[String], bases: &[&[&str]]| {
            bases
                .iter()
                .any(|b| b.iter().any(|p| name_matches(name, p)))
                || allow.iter().any(|p| name_matches(name, p))
        };
        match self {
            EnvPolicy::Inherit => true,
            EnvPolicy::Clean { allow } => listed(allow, &[CLEAN_BASE]),
            EnvPolicy::Untrusted { allow } => listed(allow, &[CLEAN_BASE, UNTRUSTED_BASE]),
        }
    }

    /// Whether a variable named `name` is withheld as a credential, even when set explicitly.
    fn withholds(&self, name: &str) -> bool {
        matches!(self, EnvPolicy::Untrusted { .. }) && is_credential(name)
    }

    /// Whether polyprof's own variable `name` is passed to the child.
    pub fn passes_inherited(&self, name: &str) -> bool {
        self.inherits(name) && !self.withholds(name)
    }

    /// Whether a variable set for the command (`--env`, a job's `env`) is passed to it.
    pub fn passes_explicit(&self, name: &str) -> bool {
        !self.withholds(name)
    }
}

/// The child's full environment, and the names dropped as credentials (for a warning).
pub struct BuiltEnv {
    pub vars: BTreeMap<String, String>,
    pub dropped_credentials: Vec<String>,
}

/// Apply `policy` to `parent`, then add `extra` (the job's and the step's variables).
pub fn build_env(
    policy: &EnvPolicy,
    parent: impl IntoIterator<Item = (String, String)>,
    extra: &BTreeMap<String, String>,
) -> BuiltEnv {
    let mut dropped_credentials = Vec::new();
    let mut vars = BTreeMap::new();
    for (name, value) in parent {
        if !policy.inherits(&name) {
            continue;
        }
        if policy.withholds(&name) {
            dropped_credentials.push(name);
            continue;
        }
        vars.insert(name, value);
    }
    for (name, value) in extra {
        if policy.withholds(name) {
            dropped_credentials.push(name.clone());
            continue;
        }
        vars.insert(name.clone(), value.clone());
    }
    dropped_credentials.sort();
    dropped_credentials.dedup();
    BuiltEnv {
        vars,
        dropped_credentials,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Vec<(String, String)> {
        [
            ("PATH", "/bin"),
            ("LC_ALL", "C"),
            ("FOO_TOKEN", "t"),
            ("OPENAI_API_KEY", "k"),
            ("AWS_REGION", "r"),
            ("DB_PASSWORD_FILE", "p"),
            ("CUDA_VISIBLE_DEVICES", "0"),
            ("HARMLESS", "h"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn untrusted_never_passes_credentials_even_when_allowed() {
        let policy = EnvPolicy::Untrusted {
            allow: vec!["FOO_TOKEN".into(), "HARMLESS".into()],
        };
        let extra = BTreeMap::from([("MY_SECRET".to_string(), "s".to_string())]);
        let env = build_env(&policy, parent(), &extra);
        let names: Vec<&str> = env.vars.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["CUDA_VISIBLE_DEVICES", "HARMLESS", "LC_ALL", "PATH"]
        );
        assert_eq!(env.dropped_credentials, ["FOO_TOKEN", "MY_SECRET"]);
    }

    #[test]
    fn clean_keeps_only_the_allowlist_and_inherit_keeps_all() {
        let env = build_env(
            &EnvPolicy::Clean {
                allow: vec!["AWS_*".into()],
            },
            parent(),
            &BTreeMap::new(),
        );
        let names: Vec<&str> = env.vars.keys().map(String::as_str).collect();
        assert_eq!(names, ["AWS_REGION", "LC_ALL", "PATH"]);
        let env = build_env(&EnvPolicy::Inherit, parent(), &BTreeMap::new());
        assert_eq!(env.vars.len(), parent().len());
    }

    #[test]
    fn credential_names() {
        for name in [
            "GITHUB_TOKEN",
            "hf_token",
            "ANTHROPIC_API_KEY",
            "AZURE_CLIENT_ID",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "PGPASSWORD",
            "X_SECRET",
        ] {
            assert!(is_credential(name), "{name}");
        }
        for name in [
            "PATH",
            "CUDA_VISIBLE_DEVICES",
            "KEYBOARD",
            "HOME",
            "PYTHONPATH",
        ] {
            assert!(!is_credential(name), "{name}");
        }
    }
}
