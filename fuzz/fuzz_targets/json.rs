//! libFuzzer target: `fuzz::json` (what it asserts is documented there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::json(data);
});
