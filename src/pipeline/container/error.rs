//! What can go wrong between polyprof and the container engine, each with what to do about it.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ContainerError {
    #[error(
        "cannot reach the Docker engine ({detail}); is the daemon running (`docker info`), is DOCKER_HOST right, and may this user open the socket?"
    )]
    NoEngine { detail: String },
    #[error(
        "image `{image}` is not on the engine and polyprof never pulls; build or load it first (`docker build -t {image} .`, `docker load -i FILE.tar`, or for the test image `scripts/build-test-image.sh`)"
    )]
    ImageMissing { image: String },
    #[error(
        "GPUs were requested but the engine has no GPU runtime (NVIDIA Container Toolkit); check `docker info` → Runtimes, or run without --gpus (engine said: {detail})"
    )]
    NoGpuRuntime { detail: String },
    #[error("the engine refused to {action}: {detail}")]
    Engine { action: String, detail: String },
    #[error("`{value}` is not a GPU request: use all, a count (2), or device ids (0,1)")]
    BadGpuRequest { value: String },
    #[error("`{value}` is not a bind mount: {why}")]
    BadMount { value: String, why: String },
    #[error(
        "argument `{lossy}` is not UTF-8, and the Docker Engine API takes text; run it locally or pass it through a file"
    )]
    ArgNotText { lossy: String },
    #[error("mount source {path} cannot be used: {source}")]
    MountSource {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What the engine's message means, for the call that produced it.
pub fn classify(action: &str, image: &str, error: bollard::errors::Error) -> ContainerError {
    use bollard::errors::Error as E;
    let detail = error.to_string();
    match &error {
        E::DockerResponseServerError {
            status_code,
            message,
        } => {
            if *status_code == 404 && message.contains("No such image") {
                ContainerError::ImageMissing {
                    image: image.to_string(),
                }
            } else if is_gpu_runtime_missing(message) {
                ContainerError::NoGpuRuntime {
                    detail: message.clone(),
                }
            } else {
                ContainerError::Engine {
                    action: action.to_string(),
                    detail: message.clone(),
                }
            }
        }
        E::HyperResponseError { .. }
        | E::IOError { .. }
        | E::RequestTimeoutError
        | E::SocketNotFoundError(_)
        | E::HyperLegacyError { .. }
        | E::UnsupportedURISchemeError { .. }
        | E::HttpClientError { .. } => ContainerError::NoEngine { detail },
        _ => ContainerError::Engine {
            action: action.to_string(),
            detail,
        },
    }
}

/// docker's message when `--gpus` meets an engine without the NVIDIA hook:
/// `could not select device driver "" with capabilities: [[gpu]]`.
pub fn is_gpu_runtime_missing(message: &str) -> bool {
    message.contains("could not select device driver")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(status_code: u16, message: &str) -> bollard::errors::Error {
        bollard::errors::Error::DockerResponseServerError {
            status_code,
            message: message.to_string(),
        }
    }

    #[test]
    fn engine_messages_become_advice() {
        let e = classify("create", "x:1", server(404, "No such image: x:1"));
        assert!(e.to_string().contains("scripts/build-test-image.sh"), "{e}");
        let e = classify(
            "start",
            "x:1",
            server(
                500,
                r#"failed to create shim: could not select device driver "" with capabilities: [[gpu]]"#,
            ),
        );
        let text = e.to_string();
        assert!(
            text.contains("no GPU runtime (NVIDIA Container Toolkit)"),
            "{text}"
        );
        assert!(text.contains("`docker info` → Runtimes"), "{text}");
        let e = classify("start", "x:1", server(409, "conflict"));
        assert!(matches!(e, ContainerError::Engine { .. }));
    }
}
