//! The engine's create request for one command of a plan: pure translation of a
//! [`ContainerJob`], the command and its environment into `ContainerCreateBody`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use bollard::models::{
    ContainerCreateBody, DeviceMapping, DeviceRequest, HostConfig, HostConfigLogConfig, Mount,
    MountType,
};

use super::error::ContainerError;
use super::job::{ContainerJob, GpuRequest, OutputTransfer};
use crate::model::plan::CommandSpec;
use crate::pipeline::runner::EnvPolicy;
use crate::pipeline::runner::env::{BuiltEnv, build_env, name_matches};

/// The label every polyprof container carries; its value is the job id.
pub const JOB_LABEL: &str = "polyprof.job";

/// The container's environment: the policy applied to only those host variables the caller
/// allowlisted by name, then the job's and the command's variables. Unlike a local run, even
/// `inherit` and the clean base (`PATH`, `HOME`, …) take nothing from the host: the image sets
/// its own, and host values would be wrong (or secret) inside.
pub fn container_env(
    policy: &EnvPolicy,
    host: impl IntoIterator<Item = (String, String)>,
    extra: &BTreeMap<String, String>,
) -> BuiltEnv {
    let allow: &[String] = match policy {
        EnvPolicy::Inherit => &[],
        EnvPolicy::Clean { allow } | EnvPolicy::Untrusted { allow } => allow,
    };
    let chosen = host
        .into_iter()
        .filter(|(name, _)| allow.iter().any(|p| name_matches(name, p)));
    build_env(policy, chosen, extra)
}

fn gpu_request(gpus: &GpuRequest) -> DeviceRequest {
    // What docker/cli's `--gpus` parser sends (opts/gpus.go).
    let (count, device_ids) = match gpus {
        GpuRequest::All => (Some(-1), None),
        GpuRequest::Count(n) => (Some(i64::from(*n)), None),
        GpuRequest::Ids(ids) => (None, Some(ids.clone())),
    };
    DeviceRequest {
        driver: Some(String::new()),
        count,
        device_ids,
        capabilities: Some(vec![vec!["gpu".to_string()]]),
        options: Some(HashMap::new()),
    }
}

fn absolute(path: &Path) -> Result<PathBuf, ContainerError> {
    std::fs::canonicalize(path).map_err(|source| ContainerError::MountSource {
        path: path.display().to_string(),
        source,
    })
}

fn bind(source: &Path, target: &Path, read_only: bool) -> Mount {
    Mount {
        source: Some(source.display().to_string()),
        target: Some(target.display().to_string()),
        typ: Some(MountType::BIND),
        read_only: Some(read_only),
        ..Default::default()
    }
}

/// The create request. `output_dir` is bound read-write at its own absolute path, so the paths
/// in the plan (the profiler's `-o <dir>/…`) mean the same inside and out.
pub fn create_body(
    job: &ContainerJob,
    spec: &CommandSpec,
    env: &BTreeMap<String, String>,
    output_dir: &Path,
    labels: HashMap<String, String>,
) -> Result<ContainerCreateBody, ContainerError> {
    let output_dir = absolute(output_dir)?;
    let mut mounts = Vec::new();
    if job.output == OutputTransfer::Bind {
        mounts.push(bind(&output_dir, &output_dir, false));
    }
    for m in &job.mounts {
        mounts.push(bind(&absolute(&m.source)?, &m.target, m.read_only));
    }
    let workdir = spec
        .cwd
        .clone()
        .or_else(|| job.workdir.clone())
        .unwrap_or_else(|| output_dir.clone());
    let devices = job
        .devices
        .iter()
        .map(|d| DeviceMapping {
            path_on_host: Some(d.display().to_string()),
            path_in_container: Some(d.display().to_string()),
            cgroup_permissions: Some("rwm".to_string()),
        })
        .collect::<Vec<_>>();
    let host_config = HostConfig {
        init: Some(true),
        network_mode: Some(job.network.clone().unwrap_or_else(|| "none".to_string())),
        pids_limit: job.limits.pids,
        memory: job.limits.memory_bytes,
        shm_size: job.limits.shm_bytes,
        // Only what the plan asked for: the engine's default set is dropped.
        cap_drop: Some(vec!["ALL".to_string()]),
        cap_add: (!job.capabilities.is_empty()).then(|| job.capabilities.clone()),
        security_opt: Some(vec!["no-new-privileges".to_string()]),
        device_requests: job.gpus.as_ref().map(|g| vec![gpu_request(g)]),
        devices: (!devices.is_empty()).then_some(devices),
        mounts: Some(mounts),
        // Output is streamed to polyprof over the attach connection; the engine keeps no copy
        // on its disk (a chatty job cannot fill /var/lib/docker).
        log_config: Some(HostConfigLogConfig {
            typ: Some("none".to_string()),
            config: None,
        }),
        auto_remove: Some(false),
        ..Default::default()
    };
    let cmd = spec
        .argv
        .iter()
        .map(|a| {
            a.to_str()
                .map(str::to_string)
                .ok_or_else(|| ContainerError::ArgNotText {
                    lossy: a.to_string(),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ContainerCreateBody {
        image: Some(job.image.clone()),
        cmd: Some(cmd),
        env: Some(env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        working_dir: Some(workdir.display().to_string()),
        user: job.user.clone(),
        labels: Some(labels),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        attach_stdin: Some(false),
        open_stdin: Some(false),
        tty: Some(false),
        host_config: Some(host_config),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::container::job::BindMount;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn host_variables_never_reach_the_container_unless_allowlisted() {
        let host = vars(&[
            ("PATH", "/host/bin"),
            ("SECRET_TOKEN", "s"),
            ("MY_OPT", "1"),
        ]);
        let extra = BTreeMap::from([("PROFILER_VAR".to_string(), "x".to_string())]);
        let env = container_env(&EnvPolicy::Inherit, host.clone(), &extra).vars;
        assert_eq!(env.keys().collect::<Vec<_>>(), ["PROFILER_VAR"]);
        let clean = EnvPolicy::Clean {
            allow: vec!["MY_*".into()],
        };
        let env = container_env(&clean, host.clone(), &extra).vars;
        assert_eq!(env.keys().collect::<Vec<_>>(), ["MY_OPT", "PROFILER_VAR"]);
        let untrusted = EnvPolicy::Untrusted {
            allow: vec!["SECRET_TOKEN".into()],
        };
        let built = container_env(&untrusted, host, &extra);
        assert!(!built.vars.contains_key("SECRET_TOKEN"));
        assert_eq!(built.dropped_credentials, ["SECRET_TOKEN"]);
    }

    #[test]
    fn body_binds_output_at_its_own_path_and_asks_only_for_what_the_job_says() {
        let out = tempfile::tempdir().unwrap();
        let input = tempfile::tempdir().unwrap();
        let mut job = ContainerJob::new("img:1");
        job.mounts.push(BindMount {
            source: input.path().to_path_buf(),
            target: "/in".into(),
            read_only: true,
        });
        job.gpus = Some(GpuRequest::All);
        job.capabilities = vec!["SYS_ADMIN".into()];
        let spec = CommandSpec::new(vec!["echo".into(), "a b".into()]);
        let body = create_body(&job, &spec, &BTreeMap::new(), out.path(), HashMap::new()).unwrap();
        let host = body.host_config.unwrap();
        let mounts = host.mounts.unwrap();
        let out_path = std::fs::canonicalize(out.path())
            .unwrap()
            .display()
            .to_string();
        assert_eq!(mounts[0].source.as_deref(), Some(out_path.as_str()));
        assert_eq!(mounts[0].target.as_deref(), Some(out_path.as_str()));
        assert_eq!(
            (mounts[0].read_only, mounts[1].read_only),
            (Some(false), Some(true))
        );
        assert_eq!(body.working_dir.as_deref(), Some(out_path.as_str()));
        assert_eq!(body.cmd.unwrap(), ["echo", "a b"]);
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert_eq!(host.init, Some(true));
        assert_eq!(host.cap_drop.unwrap(), ["ALL"]);
        assert_eq!(host.cap_add.unwrap(), ["SYS_ADMIN"]);
        let gpu = serde_json::to_value(&host.device_requests.unwrap()[0]).unwrap();
        assert_eq!(
            gpu,
            serde_json::json!({"Driver": "", "Count": -1, "Capabilities": [["gpu"]], "Options": {}})
        );
    }

    #[test]
    fn missing_mount_source_is_a_clear_error() {
        let out = tempfile::tempdir().unwrap();
        let mut job = ContainerJob::new("img:1");
        job.mounts.push("/no/such/dir:/in:ro".parse().unwrap());
        let spec = CommandSpec::new(vec!["true".into()]);
        let err = create_body(&job, &spec, &BTreeMap::new(), out.path(), HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("/no/such/dir"), "{err}");
    }
}

#[cfg(all(test, unix))]
mod arg_tests {
    use super::*;

    #[test]
    fn an_argument_that_is_not_utf8_is_refused_not_mangled() {
        let out = tempfile::tempdir().unwrap();
        let job = ContainerJob::new("img:1");
        let odd = crate::model::arg::Arg::from_bytes(b"a\xffb".to_vec());
        let spec = CommandSpec::new(vec!["echo".into(), odd]);
        let err = create_body(&job, &spec, &BTreeMap::new(), out.path(), HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not UTF-8") && err.contains("a\u{fffd}b"),
            "{err}"
        );
    }
}
