//! The task that drains one pipe into a [`StreamState`] until EOF or until told to stop.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use super::capture::StreamState;
use crate::model::outcome::StreamCapture;

/// Read size: large reads mean few wake-ups for chatty children.
pub const READ_BUFFER: usize = 256 * 1024;
const PAGE: usize = 4096;
/// How long the writer must pause mid-line before the unfinished line is checked for the end
/// marker (a pipe write can split a line; a real pause means nothing more is coming soon).
const PARTIAL_PAUSE: Duration = Duration::from_millis(100);

/// Drain `pipe`. On `stop`, take what is already buffered in the pipe and give up on the rest
/// (something outside polyprof's reach still holds the write end).
pub async fn read_stream<R: AsyncRead + Unpin>(
    mut pipe: R,
    mut state: StreamState,
    stop: CancellationToken,
    name: &'static str,
) -> (StreamCapture, Vec<String>) {
    // Page-aligned, like cat's buffer: the kernel copies whole pages in and out of it. The echo
    // may take the buffer with the bytes in it and give another (`StreamState::feed_owned`),
    // so the aligned part is found again for each read.
    let mut storage = vec![0u8; READ_BUFFER + PAGE];
    let aligned = |storage: &Vec<u8>| {
        let offset = storage.as_ptr().align_offset(PAGE).min(PAGE);
        offset..offset + READ_BUFFER
    };
    let mut partial_checked = false;
    loop {
        let window = aligned(&storage);
        let buf = &mut storage[window.clone()];
        let pause = async {
            if !partial_checked && state.partial_pending() {
                tokio::time::sleep(PARTIAL_PAUSE).await
            } else {
                std::future::pending().await
            }
        };
        tokio::select! {
            biased;
            _ = stop.cancelled() => {
                for _ in 0..64 {
                    let window = aligned(&storage);
                    let read =
                        tokio::time::timeout(Duration::ZERO, pipe.read(&mut storage[window.clone()]))
                            .await;
                    match read {
                        Ok(Ok(n)) if n > 0 => {
                            state.feed_owned(&mut storage, window.start..window.start + n)
                        }
                        _ => break,
                    }
                }
                break;
            }
            read = pipe.read(buf) => match read {
                Ok(0) => break,
                Ok(n) => {
                    partial_checked = false;
                    state.feed_owned(&mut storage, window.start..window.start + n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    state.warn(format!("reading {name} failed: {e}"));
                    break;
                }
            },
            _ = pause => {
                partial_checked = true;
                state.check_partial();
            }
        }
    }
    drop(pipe);
    state.finish()
}
