//! libFuzzer target: `fuzz::form` (what it asserts is documented there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::form(data);
});
