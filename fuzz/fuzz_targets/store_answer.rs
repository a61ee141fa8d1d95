//! libFuzzer target: `fuzz::store_answer` (what it asserts is documented there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::store_answer(data);
});
