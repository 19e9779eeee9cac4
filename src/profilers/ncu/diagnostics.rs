//! ncu's `==ERROR==`/`==WARNING==`/`==PROF==` lines turned into classified diagnostics.
//! Nothing is swallowed: an unknown `==ERROR==` is still an error of kind `ncu_error`.

use super::scan::{Level, Message};
use crate::model::parsed::{Diagnostic, Severity};

/// Where NVIDIA documents the counter-permission fix.
pub const ERR_NVGPUCTRPERM_URL: &str = "https://developer.nvidia.com/ERR_NVGPUCTRPERM";

/// The fix for ERR_NVGPUCTRPERM, spelled out.
pub const COUNTER_PERMISSION_FIX: &str = "run as root or with CAP_SYS_ADMIN (CAP_PERFMON from \
driver R565); in a container add `--cap-add SYS_ADMIN`; or allow all users on the host with the \
driver option `options nvidia NVreg_RestrictProfilingToAdminUsers=0` (in /etc/modprobe.d, then \
reload the driver or reboot); see https://developer.nvidia.com/ERR_NVGPUCTRPERM";

struct Rule {
    needle: &'static str,
    kind: &'static str,
    severity: Severity,
    hint: Option<&'static str>,
}

/// Known messages, most specific first. Matched case-sensitively against the message text.
const RULES: &[Rule] = &[
    Rule {
        needle: "ERR_NVGPUCTRPERM",
        kind: "counter_permission",
        severity: Severity::Error,
        hint: Some(COUNTER_PERMISSION_FIX),
    },
    Rule {
        needle: "No kernels were profiled",
        kind: "no_kernels_profiled",
        severity: Severity::Warning,
        hint: Some(
            "the program launched no CUDA kernel, or the kernel filter (-k, --launch-skip, \
             --launch-count, --nvtx-include) matched none; for a program that starts child \
             processes use --target-processes all",
        ),
    },
    Rule {
        needle: "The application returned an error code",
        kind: "application_error",
        severity: Severity::Error,
        hint: Some("the profiled program itself failed; its own output says why"),
    },
    Rule {
        needle: "does not exist or is not an executable",
        kind: "missing_binary",
        severity: Severity::Error,
        hint: Some("check the target path; give an absolute path or put the program on PATH"),
    },
    Rule {
        needle: "LibraryNotLoaded",
        kind: "profiler_library_not_loaded",
        severity: Severity::Error,
        hint: Some(
            "ncu could not load its driver library: the NVIDIA driver is missing, too old for \
             this ncu, or hidden (e.g. gVisor or a container without the driver's libraries)",
        ),
    },
    Rule {
        needle: "failed to connect to the CUDA driver",
        kind: "profiler_library_not_loaded",
        severity: Severity::Error,
        hint: Some(
            "a stub libcuda.so is first on the library path; remove it from LD_LIBRARY_PATH",
        ),
    },
    Rule {
        needle: "driver resource was unavailable",
        kind: "driver_resource_busy",
        severity: Severity::Error,
        hint: Some(
            "another profiler or DCGM is collecting counters on this GPU; stop it (e.g. \
             `dcgmi profile --pause`) or use another GPU",
        ),
    },
    Rule {
        needle: "did not match any section",
        kind: "bad_section",
        severity: Severity::Error,
        hint: Some("run `ncu --list-sections` for valid names; regexes need the `regex:` prefix"),
    },
    Rule {
        needle: "Use --list-sections",
        kind: "bad_section",
        severity: Severity::Error,
        hint: None,
    },
    Rule {
        needle: "Failed to find metric",
        kind: "unknown_metric",
        severity: Severity::Error,
        hint: Some("check the name with `ncu --query-metrics`"),
    },
    Rule {
        needle: "Cannot lock GPU clock frequencies",
        kind: "clock_control_failed",
        severity: Severity::Error,
        hint: Some("use --clock-control none (clocks cannot be locked on MIG)"),
    },
    Rule {
        needle: "lock file",
        kind: "lock_file",
        severity: Severity::Error,
        hint: Some("make the system temp directory writable, or set TMPDIR to a writable one"),
    },
    Rule {
        needle: "bad allocation",
        kind: "replay_out_of_memory",
        severity: Severity::Error,
        hint: Some("kernel replay ran out of host memory; narrow the run with -k/--launch-count"),
    },
    Rule {
        needle: "Backing up device memory",
        kind: "replay_memory_backup",
        severity: Severity::Warning,
        hint: None,
    },
    Rule {
        needle: "Unable to access the following",
        kind: "metrics_unavailable",
        severity: Severity::Warning,
        hint: None,
    },
    Rule {
        needle: "Failed to profile",
        kind: "profile_failed",
        severity: Severity::Error,
        hint: None,
    },
    Rule {
        needle: "An error occurred while trying to profile",
        kind: "profile_failed",
        severity: Severity::Error,
        hint: None,
    },
    Rule {
        needle: "Failed to prepare kernel for profiling",
        kind: "counter_library",
        severity: Severity::Error,
        hint: None,
    },
    Rule {
        needle: "counter measurement library",
        kind: "counter_library",
        severity: Severity::Error,
        hint: None,
    },
    Rule {
        needle: "Trying to shutdown target application",
        kind: "target_shutdown",
        severity: Severity::Warning,
        hint: Some(
            "ncu was stopped before the program ended; only kernels profiled so far are in the output",
        ),
    },
    Rule {
        needle: "Running with unmodified GPU clocks",
        kind: "unlocked_clocks",
        severity: Severity::Info,
        hint: None,
    },
];

/// Classify one message; `None` for routine `==PROF==` progress lines.
pub fn classify(message: &Message) -> Option<Diagnostic> {
    if let Some(rule) = RULES.iter().find(|r| message.text.contains(r.needle)) {
        return Some(Diagnostic {
            severity: rule.severity,
            kind: rule.kind.to_string(),
            message: message.text.clone(),
            hint: rule.hint.map(str::to_string),
            metric: None,
        });
    }
    let (severity, kind) = match message.level {
        Level::Error => (Severity::Error, "ncu_error"),
        Level::Warning => (Severity::Warning, "ncu_warning"),
        Level::Prof => return None,
    };
    Some(Diagnostic {
        severity,
        kind: kind.to_string(),
        message: message.text.clone(),
        hint: None,
        metric: None,
    })
}

/// The application's exit code from `The application returned an error code (3).`
pub fn application_exit_code(text: &str) -> Option<i32> {
    let start = text.find("error code (")? + "error code (".len();
    let end = text[start..].find(')')? + start;
    text[start..end].trim().parse().ok()
}

/// Push `diagnostic`, folding an immediate follow-up line of the same kind into the previous one
/// (`did not match any section` + `Use --list-sections …`).
pub fn push(diagnostics: &mut Vec<Diagnostic>, diagnostic: Diagnostic) {
    if let Some(last) = diagnostics.last_mut()
        && last.kind == diagnostic.kind
        && diagnostic.hint.is_none()
        && last.kind == "bad_section"
    {
        last.message.push(' ');
        last.message.push_str(&diagnostic.message);
        return;
    }
    if diagnostics.contains(&diagnostic) {
        return;
    }
    diagnostics.push(diagnostic);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(level: Level, text: &str) -> Message {
        Message {
            level,
            text: text.to_string(),
        }
    }

    #[test]
    fn unknown_errors_are_kept_and_progress_lines_are_not_diagnostics() {
        let unknown = classify(&message(Level::Error, "Something new broke")).unwrap();
        assert_eq!(
            (unknown.severity, unknown.kind.as_str()),
            (Severity::Error, "ncu_error")
        );
        assert!(classify(&message(Level::Prof, "Connected to process 1 (/a)")).is_none());
    }

    #[test]
    fn exit_code_is_read_from_the_message() {
        assert_eq!(
            application_exit_code("The application returned an error code (3)."),
            Some(3)
        );
        assert_eq!(application_exit_code("error code (x)"), None);
    }
}
