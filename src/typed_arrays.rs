//! Typed arrays handed to JS without a copy, their size told to V8.

use napi::bindgen_prelude::*;

use crate::error::{napi_failed, Result};

/// Typed arrays handed to JS without a copy, whose size V8 is told about: memory the
/// collector does not know of never prompts a collection, so a reader calling `readSteps`
/// in a loop would pile up tables (measured: +370 MB a call at 1M steps) until something
/// else triggered one.
macro_rules! accounted {
    ($name:ident, $array:ty, $item:ty) => {
        pub(crate) fn $name(env: &Env, data: Vec<$item>) -> Result<$array> {
            if data.is_empty() {
                return Ok(<$array>::new(data));
            }
            let bytes = (data.capacity() * std::mem::size_of::<$item>()) as i64;
            let raw_env = env.raw();
            let mut data = std::mem::ManuallyDrop::new(data);
            let (ptr, len, cap) = (data.as_mut_ptr(), data.len(), data.capacity());
            env.adjust_external_memory(bytes).map_err(napi_failed)?;
            // SAFETY: ptr, len and cap come from a Vec given up above; the finalizer
            // rebuilds and frees it exactly once, when V8 collects the array.
            Ok(unsafe {
                <$array>::with_external_data(ptr, len, move |p, l| {
                    drop(Vec::from_raw_parts(p, l, cap));
                    let mut now = 0i64;
                    sys::napi_adjust_external_memory(raw_env, -bytes, &mut now);
                })
            })
        }
    };
}

accounted!(accounted_f64, Float64Array, f64);
accounted!(accounted_u8, Uint8Array, u8);
accounted!(accounted_i32, Int32Array, i32);
accounted!(accounted_u32, Uint32Array, u32);
