//! The health check of a device after an eval job left it suspect: a device fault (illegal
//! address, XID) or a hang (a timeout during a call on CUDA). The worker and its CUDA context
//! are gone by then; before the device gets another job, a short probe pinned to it must
//! answer (its vendor's device tool, `profilers::device_tool`, asked about it alone, and, when
//! the eval used torch on CUDA, a one-element tensor op).
//! Healthy: back in the pool; not: quarantined with the reason.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::model::batch::BatchEntry;
use crate::model::probe::{Probe, ProbeError, ProbeOutput, ProbeRequest};
use crate::profilers::device_tool::DeviceTool;
use crate::profilers::device_tools;
use crate::profilers::devices::Device;

use super::spec::JobSpec;

/// Limit of the device tool's query.
const TOOL_TIMEOUT: Duration = Duration::from_secs(20);
/// Limit of the torch check (importing torch and creating a context take seconds).
const TORCH_TIMEOUT: Duration = Duration::from_secs(90);
/// What the torch check runs: a context, a kernel and a copy back.
pub const TORCH_CHECK: &str = "import torch; torch.ones(1, device='cuda').sum().item()";

/// Why a device is checked and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCheck {
    /// What made the device suspect (`device_fault during timing`, `timeout on cuda`).
    pub after: String,
    /// Also run [`TORCH_CHECK`] with this interpreter (the eval used torch on CUDA).
    pub torch_python: Option<PathBuf>,
}

/// Whether the job that just ended on `device` left it suspect: an eval whose verdict is a
/// device fault, or a timeout on CUDA (a hang). Only devices whose vendor has a device tool
/// have a probe.
pub fn needs_check(entry: &BatchEntry, spec: &JobSpec, device: &Device) -> Option<HealthCheck> {
    device.vendor().and_then(device_tools::for_vendor)?;
    let eval = entry.eval.as_ref()?;
    let cuda = eval.device == "cuda";
    let after = match eval.failure.as_deref()? {
        "device_fault" => "a device fault".to_string(),
        "timeout" if cuda => "a timeout on cuda (a hang)".to_string(),
        _ => return None,
    };
    let torch = cuda && eval.framework.as_deref() == Some("torch");
    Some(HealthCheck {
        after: format!("{after} in job `{}`", entry.id),
        torch_python: torch
            .then(|| spec.eval.as_ref().map(|e| e.python()))
            .flatten(),
    })
}

/// The probes of the check, each pinned to `device`: `tool` (found at `tool_path`) asked about
/// it, then the torch check.
pub fn probes(
    device: &Device,
    check: &HealthCheck,
    tool: &dyn DeviceTool,
    tool_path: PathBuf,
) -> Vec<ProbeRequest> {
    let mut query = ProbeRequest::new(tool_path, &[], TOOL_TIMEOUT);
    query.args = tool.health_args(&device.index);
    let mut out = vec![query];
    if let Some(python) = &check.torch_python {
        let mut torch = ProbeRequest::new(python, &["-c", TORCH_CHECK], TORCH_TIMEOUT);
        torch.env.extend(device.pin_env());
        out.push(torch);
    }
    out
}

/// What one probe's answer says about the device: `Ok` with its first line, or why not.
/// `tool` says whether an answer that exited 0 still marks the GPU broken.
pub fn judge(
    request: &ProbeRequest,
    answer: &Result<ProbeOutput, ProbeError>,
    tool: &dyn DeviceTool,
) -> Result<String, String> {
    let shown = request.shown();
    match answer {
        Err(e) => Err(e.to_string()),
        Ok(output) => {
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            let first = |text: &str| {
                text.lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim()
                    .to_string()
            };
            if !output.success() {
                return Err(format!(
                    "`{shown}` failed ({}): {}",
                    output.status_text(),
                    first(&stderr).chars().take(200).collect::<String>()
                ));
            }
            // A device tool can answer 0 yet mark a broken GPU's fields.
            if let Some(why) = tool.broken(&stdout) {
                return Err(format!("`{shown}`: {why}: {}", first(&stdout)));
            }
            Ok(first(&stdout))
        }
    }
}

/// Run the check through `probe` (off the scheduler's thread): `Ok` with what the device
/// answered, or the reason to quarantine it.
pub async fn check_device(
    probe: Arc<dyn Probe>,
    device: &Device,
    check: &HealthCheck,
) -> Result<String, String> {
    let (device, check) = (device.clone(), check.clone());
    let answer = tokio::task::spawn_blocking(move || {
        let Some(tool) = device.vendor().and_then(device_tools::for_vendor) else {
            return Err(format!(
                "polyprof has no device tool for {}, so it cannot be checked",
                device.name()
            ));
        };
        let program = tool.tool().program;
        let Some(path) = probe.find_binary(program) else {
            return Err(format!(
                "{program} is not on PATH, so the device cannot be checked"
            ));
        };
        let mut said = Vec::new();
        for request in probes(&device, &check, tool, path) {
            let answer = probe.run(&request);
            let line = judge(&request, &answer, tool)?;
            if !line.is_empty() {
                said.push(line);
            }
        }
        Ok(said.join("; "))
    })
    .await;
    answer.unwrap_or_else(|e| Err(format!("the health check did not finish: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::batch::EvalSummary;
    use crate::profilers::registry::Vendor;
    use std::path::Path;
    use std::sync::Mutex;

    fn entry(failure: &str, device: &str, framework: &str) -> BatchEntry {
        let mut e = BatchEntry::pending("k", Default::default());
        e.eval = Some(EvalSummary {
            status: "failed".into(),
            failure: Some(failure.into()),
            device: device.into(),
            framework: Some(framework.into()),
            ..Default::default()
        });
        e
    }

    fn spec() -> JobSpec {
        serde_json::from_str(
            r#"{"id": "k", "eval": {"reference": "r.py", "candidate": "c.py", "python": "/py"}}"#,
        )
        .unwrap()
    }

    #[test]
    fn faults_and_hangs_on_cuda_make_a_gpu_suspect() {
        let gpu = Device::gpu(Vendor::Nvidia, "1", None);
        let check = needs_check(&entry("device_fault", "cuda", "torch"), &spec(), &gpu).unwrap();
        assert_eq!(check.torch_python.as_deref(), Some(Path::new("/py")));
        assert!(check.after.contains("device fault"), "{}", check.after);
        let hang = needs_check(&entry("timeout", "cuda", "numpy"), &spec(), &gpu).unwrap();
        assert_eq!(hang.torch_python, None);
        assert!(hang.after.contains("hang"));
        // A timeout on the host, a judged failure, a passed eval or a CPU slot: nothing.
        assert!(needs_check(&entry("timeout", "cpu", "numpy"), &spec(), &gpu).is_none());
        assert!(needs_check(&entry("raised", "cuda", "torch"), &spec(), &gpu).is_none());
        assert!(needs_check(&BatchEntry::default(), &spec(), &gpu).is_none());
        let cpu = Device::cpu(0);
        assert!(needs_check(&entry("device_fault", "cuda", "torch"), &spec(), &cpu).is_none());
    }

    #[test]
    fn the_probes_are_pinned_to_the_device() {
        let gpu = Device::gpu(Vendor::Nvidia, "3", None);
        let check = HealthCheck {
            after: "x".into(),
            torch_python: Some("/py".into()),
        };
        let tool = device_tools::for_vendor(Vendor::Nvidia).unwrap();
        let p = probes(&gpu, &check, tool, "/bin/nvidia-smi".into());
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].args[..2], ["-i", "3"]);
        assert_eq!(p[1].program, Path::new("/py"));
        assert_eq!(p[1].args, ["-c", TORCH_CHECK]);
        assert_eq!(p[1].env["CUDA_VISIBLE_DEVICES"], "3");
        let no_torch = HealthCheck {
            torch_python: None,
            ..check
        };
        assert_eq!(probes(&gpu, &no_torch, tool, "smi".into()).len(), 1);
    }

    fn output(code: i32, stdout: &str, stderr: &str) -> Result<ProbeOutput, ProbeError> {
        Ok(ProbeOutput {
            code: Some(code),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        })
    }

    #[test]
    fn an_answer_is_healthy_only_when_it_exits_0_and_marks_nothing_broken() {
        let tool = device_tools::for_vendor(Vendor::Nvidia).unwrap();
        let r = ProbeRequest::new("nvidia-smi", &["-i", "0"], TOOL_TIMEOUT);
        assert_eq!(
            judge(
                &r,
                &output(0, "0, NVIDIA H200, 00000000:19:00.0\n", ""),
                tool
            )
            .unwrap(),
            "0, NVIDIA H200, 00000000:19:00.0"
        );
        let err = judge(&r, &output(0, "0, [GPU requires reset], ERR!\n", ""), tool).unwrap_err();
        assert!(err.contains("broken"), "{err}");
        let err = judge(
            &r,
            &output(15, "", "Unable to determine the device handle\n"),
            tool,
        )
        .unwrap_err();
        assert!(err.contains("device handle") && err.contains("15"), "{err}");
        let timeout = Err(ProbeError::TimedOut {
            command: "nvidia-smi".into(),
            timeout: TOOL_TIMEOUT,
        });
        assert!(
            judge(&r, &timeout, tool)
                .unwrap_err()
                .contains("did not answer")
        );
    }

    /// A probe whose commands answer from a table (program name → answer).
    struct Answers {
        smi: bool,
        torch_ok: bool,
        asked: Mutex<Vec<String>>,
    }

    impl Probe for Answers {
        fn find_binary(&self, name: &str) -> Option<PathBuf> {
            self.smi.then(|| PathBuf::from(format!("/fake/{name}")))
        }
        fn run(&self, command: &ProbeRequest) -> Result<ProbeOutput, ProbeError> {
            self.asked.lock().unwrap().push(command.shown());
            if command.program.ends_with("nvidia-smi") {
                output(0, "0, NVIDIA H200\n", "")
            } else if self.torch_ok {
                output(0, "", "")
            } else {
                output(
                    1,
                    "",
                    "RuntimeError: CUDA error: an illegal memory access\n",
                )
            }
        }
        fn read_text(&self, _: &Path) -> Option<String> {
            None
        }
        fn write_text(&self, _: &Path, _: &str) -> bool {
            false
        }
        fn list_dir(&self, _: &Path) -> Vec<String> {
            Vec::new()
        }
        fn env_var(&self, _: &str) -> Option<String> {
            None
        }
        fn is_root(&self) -> bool {
            false
        }
        fn host_os(&self) -> &str {
            "linux"
        }
    }

    #[tokio::test]
    async fn the_check_runs_every_probe_and_names_the_first_that_fails() {
        let gpu = Device::gpu(Vendor::Nvidia, "0", None);
        let check = HealthCheck {
            after: "x".into(),
            torch_python: Some("python3".into()),
        };
        let answers = |smi, torch_ok| {
            Arc::new(Answers {
                smi,
                torch_ok,
                asked: Mutex::new(Vec::new()),
            })
        };
        let good = answers(true, true);
        assert_eq!(
            check_device(good.clone(), &gpu, &check).await.unwrap(),
            "0, NVIDIA H200"
        );
        assert_eq!(good.asked.lock().unwrap().len(), 2);
        let bad = check_device(answers(true, false), &gpu, &check)
            .await
            .unwrap_err();
        assert!(bad.contains("illegal memory access"), "{bad}");
        let none = check_device(answers(false, true), &gpu, &check)
            .await
            .unwrap_err();
        assert!(none.contains("not on PATH"), "{none}");
    }
}
