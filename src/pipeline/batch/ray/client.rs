//! The HTTP side of the Ray backend: the dashboard's Job Submission REST API and its state API,
//! over plain HTTP/1.1 (hyper). Every call is bounded by a timeout; an unreachable dashboard is
//! [`RayError::Unreachable`], an error status [`RayError::Http`].

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::api::{self, JobDetails, NodeInfo, SubmitRequest};
use super::error::RayError;

/// A busy dashboard answers in well under this.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A Ray cluster's dashboard.
#[derive(Clone)]
pub struct RayClient {
    /// `http://host:port`, no trailing slash.
    base: String,
    http: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl std::fmt::Debug for RayClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RayClient")
            .field("base", &self.base)
            .finish()
    }
}

/// `http://host:port` from what a user gives (`host:port` is taken as http).
pub fn normalize_address(address: &str) -> Result<String, RayError> {
    let bad = |reason: &str| RayError::Address {
        address: address.to_string(),
        reason: reason.to_string(),
    };
    let text = address.trim();
    let base = if let Some((scheme, rest)) = text.split_once("://") {
        let rest = rest.trim_end_matches('/');
        if rest.is_empty() {
            return Err(bad("no host"));
        }
        match scheme {
            "http" => format!("http://{rest}"),
            "https" => {
                return Err(bad(
                    "https is not supported; reach the dashboard over http (a `kubectl port-forward` or an SSH tunnel to port 8265)",
                ));
            }
            "ray" => {
                return Err(bad(
                    "that is the Ray Client address (port 10001); polyprof talks to the dashboard's Job API instead",
                ));
            }
            other => return Err(bad(&format!("unknown scheme `{other}`"))),
        }
    } else {
        format!("http://{}", text.trim_end_matches('/'))
    };
    let uri: Uri = base
        .parse()
        .map_err(|e: hyper::http::uri::InvalidUri| bad(&e.to_string()))?;
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    // A dashboard behind a path prefix (a proxy) keeps it: paths are appended to `base`.
    Ok(base)
}

impl RayClient {
    pub fn new(address: &str) -> Result<Self, RayError> {
        let base = normalize_address(address)?;
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(Duration::from_secs(10)));
        let http = Client::builder(TokioExecutor::new()).build(connector);
        Ok(RayClient {
            base,
            http,
            timeout: CALL_TIMEOUT,
        })
    }

    /// The dashboard's address as used (`http://host:port`).
    pub fn address(&self) -> &str {
        &self.base
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        what: &str,
    ) -> Result<(StatusCode, String), RayError> {
        let unreachable = |detail: String| RayError::Unreachable {
            address: self.base.clone(),
            what: what.to_string(),
            detail,
        };
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| RayError::Address {
                address: self.base.clone(),
                reason: e.to_string(),
            })?;
        let exchange = async {
            let response = self.http.request(request).await.map_err(|e| {
                // hyper-util's error names only the layer; its source says why (refused, …).
                let mut text = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    text.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                unreachable(text)
            })?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| unreachable(format!("the answer broke off: {e}")))?
                .to_bytes();
            Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(unreachable(format!(
                "no answer within {} s",
                self.timeout.as_secs()
            ))),
        }
    }

    fn http_error(what: &str, status: StatusCode, body: &str) -> RayError {
        // Ray answers a Python traceback; its last line says what went wrong.
        let line = body
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty() && *l != ".")
            .unwrap_or("")
            .chars()
            .take(500)
            .collect();
        RayError::Http {
            what: what.to_string(),
            status: status.as_u16(),
            body: line,
        }
    }

    fn protocol(&self, what: &str, e: impl std::fmt::Display) -> RayError {
        RayError::Protocol {
            address: self.base.clone(),
            what: what.to_string(),
            detail: e.to_string(),
        }
    }

    /// `method path` answered with success and a JSON body, parsed; `what` names it in errors.
    async fn json(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        what: &str,
    ) -> Result<serde_json::Value, RayError> {
        let (status, text) = self.call(method, path, body, what).await?;
        if !status.is_success() {
            return Err(Self::http_error(what, status, &text));
        }
        serde_json::from_str(&text).map_err(|e| self.protocol(what, e))
    }

    /// `GET /api/version`: Ray's version.
    pub async fn version(&self) -> Result<String, RayError> {
        let what = "GET /api/version";
        let value = self.json(Method::GET, "/api/version", None, what).await?;
        value
            .get("ray_version")
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .ok_or_else(|| self.protocol(what, "no `ray_version` in the answer"))
    }

    /// `POST /api/jobs/`.
    pub async fn submit(&self, request: &SubmitRequest) -> Result<(), RayError> {
        let what = format!("the submission of {}", request.submission_id);
        let body = serde_json::to_vec(request).map_err(|e| self.protocol(&what, e))?;
        let (status, text) = self
            .call(Method::POST, "/api/jobs/", Some(body), &what)
            .await?;
        if !status.is_success() {
            return Err(Self::http_error(&what, status, &text));
        }
        Ok(())
    }

    /// `GET /api/jobs/{id}`; `None` when Ray does not know the id.
    pub async fn job(&self, submission_id: &str) -> Result<Option<JobDetails>, RayError> {
        let what = format!("GET /api/jobs/{submission_id}");
        let (status, body) = self
            .call(
                Method::GET,
                &format!("/api/jobs/{submission_id}"),
                None,
                &what,
            )
            .await?;
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(Self::http_error(&what, status, &body));
        }
        api::parse_job(&body)
            .map(Some)
            .map_err(|e| self.protocol(&what, e))
    }

    /// `GET /api/jobs/`: every job the cluster keeps.
    pub async fn jobs(&self) -> Result<Vec<JobDetails>, RayError> {
        let what = "GET /api/jobs/";
        let (status, body) = self.call(Method::GET, "/api/jobs/", None, what).await?;
        if !status.is_success() {
            return Err(Self::http_error(what, status, &body));
        }
        api::parse_jobs(&body).map_err(|e| self.protocol(what, e))
    }

    /// `POST /api/jobs/{id}/stop`: Ray sends the entrypoint SIGTERM (SIGKILL after
    /// `RAY_JOB_STOP_WAIT_TIME_S`, 3 s by default). Whether a running job was stopped.
    pub async fn stop(&self, submission_id: &str) -> Result<bool, RayError> {
        let path = format!("/api/jobs/{submission_id}/stop");
        let what = format!("POST {path}");
        let value = self
            .json(Method::POST, &path, Some(Vec::new()), &what)
            .await?;
        Ok(value
            .get("stopped")
            .and_then(|v| v.as_bool())
            .unwrap_or(false))
    }

    /// `GET /api/jobs/{id}/logs`: the entrypoint's output so far.
    pub async fn logs(&self, submission_id: &str) -> Result<String, RayError> {
        let path = format!("/api/jobs/{submission_id}/logs");
        let what = format!("GET {path}");
        let value = self.json(Method::GET, &path, None, &what).await?;
        Ok(value
            .get("logs")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string())
    }

    /// `GET /api/v0/nodes`: the cluster's nodes, dead ones included.
    pub async fn nodes(&self) -> Result<Vec<NodeInfo>, RayError> {
        let what = "GET /api/v0/nodes";
        let (status, body) = self
            .call(Method::GET, "/api/v0/nodes?limit=10000", None, what)
            .await?;
        if !status.is_success() {
            return Err(Self::http_error(what, status, &body));
        }
        api::parse_nodes(&body).map_err(|e| self.protocol(what, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_as_ray_users_give_them() {
        assert_eq!(
            normalize_address("http://head:8265/").unwrap(),
            "http://head:8265"
        );
        assert_eq!(
            normalize_address("127.0.0.1:8265").unwrap(),
            "http://127.0.0.1:8265"
        );
        let https = normalize_address("https://head:8265").unwrap_err();
        assert!(https.to_string().contains("port-forward"), "{https}");
        let client = normalize_address("ray://head:10001").unwrap_err();
        assert!(client.to_string().contains("Ray Client"), "{client}");
        assert!(normalize_address("http://").is_err());
    }

    #[test]
    fn a_traceback_is_cut_to_its_last_line() {
        let text = std::fs::read_to_string(format!(
            "{}/tests/fixtures/ray/submit-duplicate.txt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let e = RayClient::http_error("the submission", StatusCode::INTERNAL_SERVER_ERROR, &text);
        assert_eq!(
            e.to_string(),
            "Ray refused the submission (HTTP 500): ValueError: Job with submission_id t-0 already exists. Please use a different submission_id."
        );
    }

    /// A port nobody listens on: refused at once, as Unreachable, naming the address.
    #[tokio::test]
    async fn a_closed_port_is_unreachable() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let client = RayClient::new(&format!("127.0.0.1:{port}")).unwrap();
        let e = client.version().await.unwrap_err();
        assert!(matches!(e, RayError::Unreachable { .. }), "{e}");
        assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    }
}
