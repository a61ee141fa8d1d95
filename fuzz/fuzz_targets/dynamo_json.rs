//! libFuzzer target: `fuzz::dynamo_json` (what it asserts is documented there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::dynamo_json(data);
});
