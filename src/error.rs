//! The one place a Rust error becomes a JavaScript one. Every export returns
//! `Result<T>` (below), whose error carries an `RLPROBE_…` code as napi-rs's custom status:
//! napi-rs creates the JS error with that `code` property natively (`napi_create_error`),
//! so the TypeScript facade reads `error.code` and parses nothing. The message is the core
//! error's report: what happened, where, what to do, and the messages of its sources.

use std::panic::{catch_unwind, AssertUnwindSafe};

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// The `code` of an error thrown by this binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code(&'static str);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0
    }
}

/// A call on a recorder this JS thread does not have (closed and collected, or another
/// thread's handle).
pub const STATE: Code = Code("RLPROBE_STATE");
/// A Rust panic, caught at the boundary: the process keeps running.
pub const PANIC: Code = Code("RLPROBE_PANIC");
/// Node-API itself failed (creating a value, registering a hook): a bug, like the core's
/// `RLPROBE_NATIVE`.
pub const NATIVE: Code = Code("RLPROBE_NATIVE");

/// The codes only the binding produces (the core's come from `rlprobe_core::Code::ALL`).
const BINDING_CODES: &[Code] = &[STATE, PANIC];

/// What every export returns: thrown with its code when it is an error.
pub type Result<T> = std::result::Result<T, napi::Error<Code>>;

/// A core error as a JS error: its code, and its full report as the message.
pub fn js(e: rlprobe_core::Error) -> napi::Error<Code> {
    napi::Error::new(Code(e.code().as_str()), e.report())
}

/// A binding-level error.
pub fn fail(code: Code, message: impl Into<String>) -> napi::Error<Code> {
    napi::Error::new(code, message.into())
}

/// A failed Node-API call (its status and reason kept in the message).
pub fn napi_failed(e: napi::Error) -> napi::Error<Code> {
    fail(
        NATIVE,
        format!("Node-API call failed ({}): {}", e.status.as_ref(), e.reason),
    )
}

/// Runs an export's body, a panic becoming an `RLPROBE_PANIC` error with its message.
pub fn guard<T>(body: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|p| {
        Err(fail(
            PANIC,
            format!(
                "rlprobe panicked: {}",
                rlprobe_core::writer::panic_message(&p)
            ),
        ))
    })
}

/// Settles an async task's result on the JS thread. A task computes on the libuv pool, where
/// no JS error can be made, so it returns its coded error as its output; here it becomes
/// the JS error (code set natively) the promise rejects with, handed to napi-rs by
/// reference so it is not rebuilt without its code.
pub fn settle<T>(env: Env, output: Result<T>) -> napi::Result<T> {
    output.map_err(|e| napi::Error::from(JsError::from(e).into_unknown(env)))
}

/// Every code an error from this addon can carry: the core's and the binding's own.
#[napi]
pub fn error_codes() -> Vec<String> {
    let core = rlprobe_core::Code::ALL.iter().map(|c| c.as_str());
    core.chain(BINDING_CODES.iter().map(|c| c.0))
        .map(String::from)
        .collect()
}
