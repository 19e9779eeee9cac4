//! Headless Chromium driven through the DevTools protocol over a pipe
//! (`--remote-debugging-pipe`: JSON messages ending in a NUL byte, read by Chromium on descriptor
//! 3 and written on 4), so a test sends the page real (trusted) mouse and key input, as a person
//! would, and reads its DOM back with `Runtime.evaluate`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::io::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long one protocol reply may take (a page of 10,000 slices loads in well under this).
const REPLY: Duration = Duration::from_secs(60);

pub fn chromium_binary() -> PathBuf {
    which::which("chromium")
        .or_else(|_| which::which("chromium-browser"))
        .expect("headless Chromium is needed: apt-get install chromium (.ci/run installs it)")
}

pub struct Browser {
    child: Child,
    to: std::io::PipeWriter,
    from: Receiver<Value>,
    next_id: u64,
    session: String,
    /// Console messages and uncaught exceptions of the page, as text.
    pub console: Vec<String>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Start Chromium with a `width` × `height` window and open `page` in it; returns once the
    /// page's script has marked `<body data-ready="1">`.
    pub fn open(page: &Path, width: u32, height: u32) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (chromium_reads, to) = std::io::pipe().unwrap();
        let (from, chromium_writes) = std::io::pipe().unwrap();
        let (read_fd, write_fd) = (chromium_reads.as_raw_fd(), chromium_writes.as_raw_fd());
        let mut command = Command::new(chromium_binary());
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--remote-debugging-pipe",
                &format!("--window-size={width},{height}"),
                &format!("--user-data-dir={}", profile.path().display()),
                "about:blank",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec. The pipe
        // ends are first moved above 3 and 4 so that dup2 cannot overwrite one with the other.
        unsafe {
            command.pre_exec(move || {
                let r = libc::fcntl(read_fd, libc::F_DUPFD_CLOEXEC, 10);
                let w = libc::fcntl(write_fd, libc::F_DUPFD_CLOEXEC, 10);
                if r < 0 || w < 0 || libc::dup2(r, 3) < 0 || libc::dup2(w, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        drop((chromium_reads, chromium_writes));
        let (sender, receiver) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from);
            let mut message = Vec::new();
            while reader.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                message.pop();
                if let Ok(value) = serde_json::from_slice::<Value>(&message)
                    && sender.send(value).is_err()
                {
                    break;
                }
                message.clear();
            }
        });
        let mut browser = Browser {
            child,
            to,
            from: receiver,
            next_id: 0,
            session: String::new(),
            console: Vec::new(),
            _profile: profile,
        };
        let url = format!("file://{}", page.canonicalize().unwrap().display());
        let target = browser.call("Target.createTarget", json!({ "url": "about:blank" }));
        let target = target["targetId"].as_str().unwrap().to_string();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        browser.call("Runtime.enable", json!({}));
        browser.call("Page.navigate", json!({ "url": url }));
        browser.wait_for("document.body && document.body.dataset.ready === '1'");
        browser
    }

    /// Send one command (to the page's session once attached) and return its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            message["sessionId"] = Value::from(self.session.clone());
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + REPLY;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let reply = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no reply to {method} from Chromium: {e}"));
            if reply["id"] == id {
                assert!(reply["error"].is_null(), "{method}: {reply}");
                return reply["result"].clone();
            }
            self.note(&reply);
        }
    }

    /// Keep what the page said on its console and what it threw.
    fn note(&mut self, event: &Value) {
        match event["method"].as_str() {
            Some("Runtime.consoleAPICalled") => {
                let args = event["params"]["args"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let text: Vec<String> = args.iter().map(|a| a["value"].to_string()).collect();
                self.console.push(text.join(" "));
            }
            Some("Runtime.exceptionThrown") => {
                self.console
                    .push(event["params"]["exceptionDetails"].to_string());
            }
            _ => {}
        }
    }

    /// The value of a JavaScript expression in the page.
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        assert!(
            result["exceptionDetails"].is_null(),
            "{expression}: {}",
            result["exceptionDetails"]
        );
        result["result"]["value"].clone()
    }

    /// Wait until `expression` is true in the page.
    pub fn wait_for(&mut self, expression: &str) {
        let deadline = Instant::now() + REPLY;
        while self.eval(expression) != Value::Bool(true) {
            assert!(Instant::now() < deadline, "waited in vain for {expression}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn mouse(&mut self, kind: &str, x: f64, y: f64, extra: Value) {
        let mut params = json!({ "type": kind, "x": x, "y": y });
        if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
            params.extend(extra.clone());
        }
        self.call("Input.dispatchMouseEvent", params);
    }

    /// One wheel notch at (x, y), viewport pixels: negative `delta_y` scrolls up (zooms in).
    pub fn wheel(&mut self, x: f64, y: f64, delta_y: f64) {
        self.mouse("mouseMoved", x, y, json!({}));
        self.mouse(
            "mouseWheel",
            x,
            y,
            json!({ "deltaX": 0, "deltaY": delta_y }),
        );
    }

    pub fn click(&mut self, x: f64, y: f64) {
        self.mouse("mouseMoved", x, y, json!({}));
        let press = json!({ "button": "left", "clickCount": 1 });
        self.mouse("mousePressed", x, y, press.clone());
        self.mouse("mouseReleased", x, y, press);
    }

    pub fn hover(&mut self, x: f64, y: f64) {
        self.mouse("mouseMoved", x, y, json!({}));
    }

    /// Click the centre of the element `selector` names (scrolled into view first).
    pub fn click_on(&mut self, selector: &str) {
        let (x, y) = self.centre(selector);
        self.click(x, y);
    }

    /// The viewport centre of the element `selector` names, scrolled into view.
    pub fn centre(&mut self, selector: &str) -> (f64, f64) {
        let rect = self.eval(&format!(
            "(()=>{{const e=document.querySelector({});e.scrollIntoView({{block:'center'}});\
             const r=e.getBoundingClientRect();return [r.left+r.width/2,r.top+r.height/2];}})()",
            serde_json::to_string(selector).unwrap()
        ));
        (rect[0].as_f64().unwrap(), rect[1].as_f64().unwrap())
    }

    /// Type `text` into the focused element, then press Enter.
    pub fn type_and_enter(&mut self, text: &str) {
        self.call("Input.insertText", json!({ "text": text }));
        for kind in ["keyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": "Enter", "code": "Enter",
                        "windowsVirtualKeyCode": 13, "text": if kind == "keyDown" { "\r" } else { "" } }),
            );
        }
    }

    /// A PNG of the viewport, saved at `path`.
    pub fn screenshot(&mut self, path: &Path) {
        use base64::Engine as _;
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{path:?}");
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Closing the pipe ends the browser; kill it if it does not go within a few seconds.
        let _ = self.call_quietly("Browser.close");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    /// A command whose reply is not waited for (the browser may be gone).
    fn call_quietly(&mut self, method: &str) -> std::io::Result<()> {
        self.next_id += 1;
        let mut bytes = serde_json::to_vec(&json!({ "id": self.next_id, "method": method }))?;
        bytes.push(0);
        self.to.write_all(&bytes)
    }
}
